import AccessTokens
import AdminAccess
import Domain
import Foundation
import GRPC
import ServiceContracts
import ServiceIdentity
import SessionIssuance
import Webhooks

/// session-service's `passkey.v1.AdminService`: the admin API's operations, translated to `AdminUseCases` calls.
public struct AdminService: AdminServiceHandler {
    let useCases: AdminUseCases
    let webhooks: WebhookAdministration
    let signingKeys: SigningKeyAdministration?

    public init(useCases: AdminUseCases, webhooks: WebhookAdministration, signingKeys: SigningKeyAdministration? = nil)
    {
        self.useCases = useCases
        self.webhooks = webhooks
        self.signingKeys = signingKeys
    }

    public func listSigningKeys(_ request: SigningKeysRequest, context: ServerContext) async throws
        -> SigningKeysResponse
    {
        var response = SigningKeysResponse()
        response.keys = try await keyAdministration().list(token: request.adminToken).map(Self.entry)
        return response
    }

    public func rotateSigningKey(_ request: SigningKeysRequest, context: ServerContext) async throws -> SigningKeyEntry
    {
        Self.entry(try await keyAdministration().rotate(token: request.adminToken))
    }

    public func retireSigningKey(_ request: RetireSigningKeyRequest, context: ServerContext) async throws
        -> SigningKeyEntry
    {
        guard !request.keyID.isEmpty, request.keyID.utf8.count <= 128 else {
            throw DomainError(.invalidRequest, "key_id must be 1 to 128 characters")
        }
        return Self.entry(try await keyAdministration().retire(token: request.adminToken, keyID: request.keyID))
    }

    private func keyAdministration() throws -> SigningKeyAdministration {
        guard let signingKeys else {
            throw DomainError(
                .notFound, "sessions use opaque tokens here (PASSKEY_SESSION_TOKENS=opaque): there are no signing keys")
        }
        return signingKeys
    }

    static func entry(_ listed: SigningKeyAdministration.Listed) -> SigningKeyEntry {
        var entry = SigningKeyEntry()
        entry.keyID = listed.key.keyID
        entry.algorithm = listed.key.publicKey.algorithm.rawValue
        entry.createdAtUnixMilliseconds = listed.key.createdAt.unixMilliseconds
        entry.activatesAtUnixMilliseconds = listed.key.activatesAt.unixMilliseconds
        entry.retiredAtUnixMilliseconds = listed.key.retiredAt?.unixMilliseconds ?? 0
        entry.state = listed.state
        return entry
    }

    public func findAccounts(_ request: FindAccountsRequest, context: ServerContext) async throws
        -> FindAccountsResponse
    {
        let given = [
            !request.email.isEmpty, !request.accountID.isEmpty, !request.credentialID.isEmpty,
            !request.externalID.isEmpty,
        ]
        guard given.filter({ $0 }).count == 1 else {
            throw DomainError(.invalidRequest, "give exactly one of email, account_id, credential_id and external_id")
        }
        let lookup: AccountLookup
        if !request.email.isEmpty {
            guard let address = EmailAddress(request.email) else {
                throw DomainError(.invalidRequest, "email is not an email address")
            }
            lookup = .email(normalized: address.normalized)
        } else if !request.accountID.isEmpty {
            lookup = .accountID(try RequestFields.accountID(request.accountID))
        } else if !request.externalID.isEmpty {
            guard request.externalID.count <= 256 else { throw DomainError(.invalidRequest, "external_id is too long") }
            lookup = .externalID(request.externalID)
        } else {
            lookup = .credentialID(try RequestFields.credentialID(request.credentialID))
        }
        var response = FindAccountsResponse()
        response.accounts = try await useCases.findAccounts(token: request.adminToken, lookup).map(Self.summary)
        return response
    }

    public func listAccounts(_ request: ListAccountsRequest, context: ServerContext) async throws
        -> ListAccountsResponse
    {
        func filter(_ value: Int32, _ name: String) throws -> Bool? {
            switch value {
            case 0: return nil
            case 1: return true
            case 2: return false
            default: throw DomainError(.invalidRequest, "\(name) is 0, 1 or 2")
            }
        }
        guard (0...AccountListing.pageLimit).contains(Int(request.limit)), request.createdSinceUnixMilliseconds >= 0,
            request.createdUntilUnixMilliseconds >= 0
        else { throw DomainError(.invalidRequest, "limit is 1 to \(AccountListing.pageLimit); times are positive") }
        var cursor: AccountCursor?
        if !request.after.isEmpty {
            guard let parsed = AccountCursor(text: request.after) else {
                throw DomainError(.invalidRequest, "after is not a cursor this API gave")
            }
            cursor = parsed
        }
        let listing = AccountListing(
            hasPassword: try filter(request.hasPassword, "has_password"),
            hasPasskey: try filter(request.hasPasskey, "has_passkey"),
            disabled: try filter(request.disabled, "disabled"),
            createdSince: request.createdSinceUnixMilliseconds > 0
                ? Date(unixMilliseconds: request.createdSinceUnixMilliseconds) : nil,
            createdUntil: request.createdUntilUnixMilliseconds > 0
                ? Date(unixMilliseconds: request.createdUntilUnixMilliseconds) : nil,
            after: cursor, limit: request.limit > 0 ? Int(request.limit) : 50)
        var response = ListAccountsResponse()
        response.accounts = try await useCases.listAccounts(token: request.adminToken, listing).map(Self.summary)
        return response
    }

    static func summary(_ record: AdminAccountSummaryRecord) -> AdminAccountSummary {
        var summary = AdminAccountSummary()
        summary.accountID = record.account.id.description
        summary.displayName = record.account.displayName
        summary.emails = record.emails
        summary.createdAtUnixMilliseconds = record.account.createdAt.unixMilliseconds
        summary.hasPassword = record.hasPassword
        summary.passkeyCount = Int32(clamping: record.passkeyCount)
        summary.disabledAtUnixMilliseconds = record.disabledAt?.unixMilliseconds ?? 0
        summary.externalID = record.externalID ?? ""
        summary.cursor = record.cursor?.text ?? ""
        return summary
    }

    public func getAccountDetail(_ request: AdminAccountRequest, context: ServerContext) async throws
        -> AdminAccountDetail
    {
        let record = try await useCases.accountDetail(
            token: request.adminToken, try RequestFields.accountID(request.accountID))
        var detail = AdminAccountDetail()
        detail.accountID = record.account.id.description
        detail.displayName = record.account.displayName
        detail.createdAtUnixMilliseconds = record.account.createdAt.unixMilliseconds
        detail.emails = record.emails.map { email in
            var entry = AdminEmail()
            entry.address = email.address
            entry.verified = email.verified
            return entry
        }
        detail.hasPassword = record.hasPassword
        detail.passkeys = record.passkeys.map { passkey in
            var entry = AdminPasskey()
            entry.credentialID = passkey.credentialID.bytes
            entry.name = passkey.name
            entry.aaguid = passkey.aaguid.uuidString.lowercased()
            entry.createdAtUnixMilliseconds = passkey.createdAt.unixMilliseconds
            entry.lastUsedAtUnixMilliseconds = passkey.lastUsedAt?.unixMilliseconds ?? 0
            entry.backupEligible = passkey.backupEligible
            entry.backedUp = passkey.backedUp
            entry.cloneWarning = passkey.cloneWarning
            return entry
        }
        detail.sessions = record.sessions.map { session in
            var entry = AdminSession()
            entry.sessionID = session.id.description
            entry.authenticationMethod = session.authenticationMethod
            entry.createdAtUnixMilliseconds = session.createdAt.unixMilliseconds
            entry.expiresAtUnixMilliseconds = session.expiresAt.unixMilliseconds
            return entry
        }
        detail.recoveryCodesRemaining = Int32(clamping: record.recoveryCodesRemaining)
        detail.disabledAtUnixMilliseconds = record.disabledAt?.unixMilliseconds ?? 0
        detail.imported = record.imported
        detail.externalID = record.externalID ?? ""
        return detail
    }

    public func revokeAccountSessions(_ request: RevokeAccountSessionsRequest, context: ServerContext) async throws
        -> RevokeAccountSessionsResponse
    {
        let sessionID = request.sessionID.isEmpty ? nil : try RequestFields.sessionID(request.sessionID)
        var response = RevokeAccountSessionsResponse()
        response.revoked = Int32(
            clamping: try await useCases.revokeSessions(
                token: request.adminToken, of: try RequestFields.accountID(request.accountID), sessionID: sessionID))
        return response
    }

    public func removeAccountPasskey(_ request: RemoveAccountPasskeyRequest, context: ServerContext) async throws
        -> RemoveAccountPasskeyResponse
    {
        var response = RemoveAccountPasskeyResponse()
        response.recoveryEmailSentTo =
            try await useCases.removePasskey(
                token: request.adminToken, try RequestFields.credentialID(request.credentialID),
                of: try RequestFields.accountID(request.accountID), overridingLastMethod: request.overrideLastMethod,
                sendingRecovery: !request.skipRecoveryEmail) ?? ""
        return response
    }

    public func sendAccountEmail(_ request: SendAccountEmailRequest, context: ServerContext) async throws
        -> SendAccountEmailResponse
    {
        guard let purpose = EmailCodePurpose(rawValue: request.purpose) else {
            throw DomainError(.invalidRequest, "purpose is recovery or verification")
        }
        guard request.email.utf8.count <= 254 else { throw DomainError(.invalidRequest, "email is too long") }
        var response = SendAccountEmailResponse()
        response.sentTo = try await useCases.sendEmail(
            token: request.adminToken, to: try RequestFields.accountID(request.accountID), purpose: purpose,
            address: request.email.isEmpty ? nil : request.email)
        return response
    }

    public func setAccountDisabled(_ request: SetAccountDisabledRequest, context: ServerContext) async throws
        -> SetAccountDisabledResponse
    {
        let outcome = try await useCases.setDisabled(
            token: request.adminToken, try RequestFields.accountID(request.accountID), disabled: request.disabled)
        var response = SetAccountDisabledResponse()
        response.changed = outcome.changed
        response.sessionsRevoked = Int32(clamping: outcome.revoked)
        return response
    }

    public func resetAccountPassword(_ request: AdminAccountRequest, context: ServerContext) async throws
        -> ResetAccountPasswordResponse
    {
        let (change, address) = try await useCases.resetPassword(
            token: request.adminToken, of: try RequestFields.accountID(request.accountID))
        var response = ResetAccountPasswordResponse()
        response.passwordVoided = change.hadPassword
        response.sessionsRevoked = Int32(clamping: change.sessionsRevoked)
        response.sentTo = address
        return response
    }

    public func eraseAccount(_ request: AdminAccountRequest, context: ServerContext) async throws
        -> EraseAccountResponse
    {
        try await useCases.eraseAccount(token: request.adminToken, try RequestFields.accountID(request.accountID))
        return EraseAccountResponse()
    }

    public func listAuditEvents(_ request: ListAuditEventsRequest, context: ServerContext) async throws
        -> ListAuditEventsResponse
    {
        guard request.types.count <= 32, request.types.allSatisfy(AuditEventQuery.isWellFormedType) else {
            throw DomainError(.invalidRequest, "types: at most 32, each 1 to 64 letters, digits, '.', '_' or '-'")
        }
        guard (0...AuditEventQuery.pageLimit).contains(Int(request.limit)), request.beforeID >= 0,
            request.sinceUnixMilliseconds >= 0, request.untilUnixMilliseconds >= 0
        else {
            throw DomainError(.invalidRequest, "limit is 1 to \(AuditEventQuery.pageLimit); times and IDs are positive")
        }
        let query = AuditEventQuery(
            accountID: request.accountID.isEmpty ? nil : try RequestFields.accountID(request.accountID),
            types: request.types,
            since: request.sinceUnixMilliseconds > 0 ? Date(unixMilliseconds: request.sinceUnixMilliseconds) : nil,
            until: request.untilUnixMilliseconds > 0 ? Date(unixMilliseconds: request.untilUnixMilliseconds) : nil,
            before: request.beforeID > 0 ? request.beforeID : nil, limit: request.limit > 0 ? Int(request.limit) : 100)
        var response = ListAuditEventsResponse()
        response.events = try await useCases.auditEvents(token: request.adminToken, query).map { event in
            var entry = AuditEventEntry()
            entry.id = event.id
            entry.occurredAtUnixMilliseconds = event.occurredAt.unixMilliseconds
            entry.type = event.type
            entry.accountID = event.accountID?.description ?? ""
            entry.actor = event.actor
            entry.actorID = event.actorID ?? ""
            entry.requestID = event.requestID ?? ""
            entry.clientAddress = event.clientAddress ?? ""
            let detail = event.detail.sorted { $0.key < $1.key }
            entry.detailKeys = detail.map(\.key)
            entry.detailValues = detail.map(\.value)
            return entry
        }
        return response
    }
}

// MARK: - Webhooks

extension AdminService {
    public func createWebhook(_ request: CreateWebhookRequest, context: ServerContext) async throws
        -> CreateWebhookResponse
    {
        let created = try await webhooks.create(
            token: request.adminToken, url: request.url, eventTypes: request.eventTypes,
            description: request.description)
        var response = CreateWebhookResponse()
        response.webhook = Self.entry(created.endpoint)
        response.secret = created.secret.text
        return response
    }

    public func listWebhooks(_ request: ListWebhooksRequest, context: ServerContext) async throws
        -> ListWebhooksResponse
    {
        var response = ListWebhooksResponse()
        response.webhooks = try await webhooks.list(token: request.adminToken).map(Self.entry)
        return response
    }

    public func getWebhook(_ request: WebhookRequest, context: ServerContext) async throws -> WebhookEntry {
        Self.entry(try await webhooks.endpoint(token: request.adminToken, id: try Self.webhookID(request.webhookID)))
    }

    public func deleteWebhook(_ request: WebhookRequest, context: ServerContext) async throws -> DeleteWebhookResponse {
        try await webhooks.delete(token: request.adminToken, id: try Self.webhookID(request.webhookID))
        return DeleteWebhookResponse()
    }

    public func enableWebhook(_ request: WebhookRequest, context: ServerContext) async throws -> EnableWebhookResponse {
        var response = EnableWebhookResponse()
        response.changed = try await webhooks.enable(
            token: request.adminToken, id: try Self.webhookID(request.webhookID))
        return response
    }

    static func webhookID(_ text: String) throws -> UUID { try RequestFields.uuid(text, field: "webhookID") }

    static func entry(_ endpoint: WebhookEndpoint) -> WebhookEntry {
        var entry = WebhookEntry()
        entry.webhookID = endpoint.id.uuidString.lowercased()
        entry.url = endpoint.url
        entry.eventTypes = endpoint.eventTypes
        entry.description = endpoint.description
        entry.createdAtUnixMilliseconds = endpoint.createdAt.unixMilliseconds
        entry.createdBy = endpoint.createdBy
        entry.disabledAtUnixMilliseconds = endpoint.disabledAt?.unixMilliseconds ?? 0
        entry.disabledReason = endpoint.disabledReason ?? ""
        entry.failingSinceUnixMilliseconds = endpoint.failingSince?.unixMilliseconds ?? 0
        entry.pendingDeliveries = Int64(endpoint.pending)
        return entry
    }
}

extension AdminService {
    /// Only the gateway, which serves the admin listener, may call it.
    public static let callers: [CallerPolicy.Rule] = [
        CallerPolicy.Rule(AdminServiceMethods.paths, callers: [ServiceIdentity.Name.gateway])
    ]
}
