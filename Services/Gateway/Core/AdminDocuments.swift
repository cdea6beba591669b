import Domain
import Encoding
import JSON
import ServiceContracts

/// The JSON documents the admin API answers with (openapi-admin.json's schemas), made from session-service's
/// messages: times as RFC 3339 or null, never a secret but a new webhook's own.
extension AdminApplication {
    /// An endpoint as the admin API shows it; `secret` only in the answer to its registration.
    static func webhook(_ entry: WebhookEntry, secret: String? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("webhookID", .string(entry.webhookID)), ("url", .string(entry.url)),
            ("eventTypes", .array(entry.eventTypes.map { .string($0) })), ("description", .string(entry.description)),
            ("createdAt", time(entry.createdAtUnixMilliseconds)), ("createdBy", .string(entry.createdBy)),
            ("disabledAt", time(entry.disabledAtUnixMilliseconds)),
            ("disabledReason", entry.disabledReason.isEmpty ? .null : .string(entry.disabledReason)),
            ("failingSince", time(entry.failingSinceUnixMilliseconds)),
            ("pendingDeliveries", .number(Double(entry.pendingDeliveries))),
        ]
        if let secret { members.append(("secret", .string(secret))) }
        return .object(JSONObject(members))
    }

    static func time(_ milliseconds: Int64) -> JSONValue {
        milliseconds == 0 ? .null : .string(ResponseDocuments.timestamp(unixMilliseconds: milliseconds))
    }

    static func summary(_ account: AdminAccountSummary) -> JSONValue {
        .object([
            "accountID": .string(account.accountID), "displayName": .string(account.displayName),
            "emails": .array(account.emails.map { .string($0) }), "createdAt": time(account.createdAtUnixMilliseconds),
            "hasPassword": .boolean(account.hasPassword), "passkeyCount": .number(Double(account.passkeyCount)),
            "disabledAt": time(account.disabledAtUnixMilliseconds),
            "externalID": account.externalID.isEmpty ? .null : .string(account.externalID),
        ])
    }

    static func detail(_ detail: AdminAccountDetail, providers: ProviderDirectory) -> JSONValue {
        var methods: [JSONValue] = []
        if detail.hasPassword { methods.append(.string("password")) }
        if !detail.passkeys.isEmpty { methods.append(.string("passkey")) }
        return .object([
            "accountID": .string(detail.accountID), "displayName": .string(detail.displayName),
            "createdAt": time(detail.createdAtUnixMilliseconds),
            "emails": .array(
                detail.emails.map { .object(["address": .string($0.address), "verified": .boolean($0.verified)]) }),
            "signInMethods": .array(methods),
            "passkeys": .array(
                detail.passkeys.map { passkey in
                    .object([
                        "credentialID": .string(Base64URL.encode(passkey.credentialID)), "name": .string(passkey.name),
                        "aaguid": .string(passkey.aaguid),
                        "providerName": providers.name(aaguid: passkey.aaguid).map { .string($0) } ?? .null,
                        "createdAt": time(passkey.createdAtUnixMilliseconds),
                        "lastUsedAt": time(passkey.lastUsedAtUnixMilliseconds),
                        "backupEligible": .boolean(passkey.backupEligible),
                        "backedUp": .boolean(passkey.backedUp), "cloneWarning": .boolean(passkey.cloneWarning),
                    ])
                }),
            "sessions": .array(
                detail.sessions.map { session in
                    .object([
                        "sessionID": .string(session.sessionID),
                        "method": .string(session.authenticationMethod?.rawValue ?? "unknown"),
                        "createdAt": time(session.createdAtUnixMilliseconds),
                        "expiresAt": time(session.expiresAtUnixMilliseconds),
                    ])
                }),
            "recoveryCodesRemaining": .number(Double(detail.recoveryCodesRemaining)),
            "disabledAt": time(detail.disabledAtUnixMilliseconds),
            "importOrigin": detail.imported
                ? .object(["externalID": detail.externalID.isEmpty ? .null : .string(detail.externalID)]) : .null,
        ])
    }

    static func event(_ event: AuditEventEntry) -> JSONValue {
        var detail = JSONObject()
        for (key, value) in zip(event.detailKeys, event.detailValues) { detail[key] = .string(value) }
        func optional(_ text: String) -> JSONValue { text.isEmpty ? .null : .string(text) }
        return .object([
            "id": .number(Double(event.id)), "occurredAt": time(event.occurredAtUnixMilliseconds),
            "type": .string(event.type), "accountID": optional(event.accountID), "actor": .string(event.actor),
            "actorID": optional(event.actorID), "requestID": optional(event.requestID),
            "clientAddress": optional(event.clientAddress), "detail": .object(detail),
        ])
    }
}
