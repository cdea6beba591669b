import AdminAccess
import Encoding
import HTTPMessages
import JSON
import ServiceContracts

/// The admin API's account routes and the audit trail: find and list accounts, read one, disable, enable, erase or
/// reset it, revoke its sessions, remove a passkey, send it mail, and read the stored audit events. Each handler runs
/// after the admin middleware (``AdminApplication/middleware``) and makes one call to session-service's admin API.
extension AdminApplication {
    func findAccounts(_ context: AdminContext) async throws -> HTTPResponse {
        let query = context.query
        let lookups: Set<String> = ["email", "accountID", "credentialID", "externalID"]
        if query.pairs.contains(where: { lookups.contains($0.0) }) {
            // A lookup names one account; the listing's filters do not go with it.
            try query.allowOnly(lookups)
            var request = FindAccountsRequest()
            request.adminToken = context.adminToken
            request.email = try query.text("email", limit: 254) ?? ""
            request.accountID = try query.text("accountID", limit: 36) ?? ""
            request.externalID = try query.text("externalID", limit: 256) ?? ""
            if let credential = try query.text("credentialID", limit: 1400) {
                guard let bytes = Base64URL.decode(credential), !bytes.isEmpty else {
                    throw APIProblem.invalidRequest("credentialID must be base64url.")
                }
                request.credentialID = bytes
            }
            let found = try await adminService(context).findAccounts(request)
            return GatewayApplication.json(200, .object(["accounts": .array(found.accounts.map(Self.summary))]))
        }
        var request = ListAccountsRequest()
        request.adminToken = context.adminToken
        request.hasPassword = try query.filter("hasPassword")
        request.hasPasskey = try query.filter("hasPasskey")
        request.disabled = try query.filter("disabled")
        request.createdSinceUnixMilliseconds = try query.integer("createdSince", in: 0...253_402_300_799_999) ?? 0
        request.createdUntilUnixMilliseconds = try query.integer("createdUntil", in: 0...253_402_300_799_999) ?? 0
        request.after = try query.text("after", limit: 60) ?? ""
        request.limit = Int32(try query.integer("limit", in: 1...Int64(AccountListing.pageLimit)) ?? 50)
        let listed = try await adminService(context).listAccounts(request).accounts
        var page: [(String, JSONValue)] = [("accounts", .array(listed.map(Self.summary)))]
        if listed.count == Int(request.limit), let last = listed.last {
            page.append(("nextAfter", .string(last.cursor)))
        }
        return GatewayApplication.json(200, .object(JSONObject(page)))
    }

    func accountDetail(_ context: AdminContext) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        return GatewayApplication.json(
            200, Self.detail(try await adminService(context).getAccountDetail(request), providers: gateway.providers))
    }

    func eraseAccount(_ context: AdminContext) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        _ = try await adminService(context).eraseAccount(request)
        return GatewayApplication.noContent
    }

    func setAccountDisabled(_ context: AdminContext, disabled: Bool) async throws -> HTTPResponse {
        var request = SetAccountDisabledRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        request.disabled = disabled
        let outcome = try await adminService(context).setAccountDisabled(request)
        return GatewayApplication.json(
            200,
            .object([
                "disabled": .boolean(request.disabled), "changed": .boolean(outcome.changed),
                "sessionsRevoked": .number(Double(outcome.sessionsRevoked)),
            ]))
    }

    /// A forced password reset: the password voided, every session ended and a recovery code sent.
    func resetAccountPassword(_ context: AdminContext) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        let outcome = try await adminService(context).resetAccountPassword(request)
        return GatewayApplication.json(
            200,
            .object([
                "passwordVoided": .boolean(outcome.passwordVoided),
                "sessionsRevoked": .number(Double(outcome.sessionsRevoked)), "sentTo": .string(outcome.sentTo),
            ]))
    }

    /// Every session of the account, or the one `sessionID` names.
    func revokeSessions(_ context: AdminContext) async throws -> HTTPResponse {
        var request = RevokeAccountSessionsRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        request.sessionID = context.parameter("sessionID")
        let revoked = try await adminService(context).revokeAccountSessions(request)
        return GatewayApplication.json(200, .object(["revoked": .number(Double(revoked.revoked))]))
    }

    /// A recovery code (`recovery`) or a verification code (`verification`) to one of the account's addresses.
    func sendAccountEmail(_ context: AdminContext, purpose: String) async throws -> HTTPResponse {
        var request = SendAccountEmailRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        request.purpose = purpose
        request.email = try context.query.text("email", limit: 254) ?? ""
        let sent = try await adminService(context).sendAccountEmail(request)
        return GatewayApplication.json(202, .object(["sentTo": .string(sent.sentTo)]))
    }

    func removePasskey(_ context: AdminContext) async throws -> HTTPResponse {
        var request = RemoveAccountPasskeyRequest()
        request.adminToken = context.adminToken
        request.accountID = context.parameter("accountID")
        guard let bytes = Base64URL.decode(context.parameter("credentialID")), !bytes.isEmpty else {
            throw APIProblem.invalidRequest("credentialID must be base64url.")
        }
        request.credentialID = bytes
        switch try context.query.text("override", limit: 32) {
        case nil: break
        case "lastSignInMethod": request.overrideLastMethod = true
        default: throw APIProblem.invalidRequest("override may only be lastSignInMethod.")
        }
        switch try context.query.text("recoveryEmail", limit: 8) {
        case nil, "true": break
        case "false": request.skipRecoveryEmail = true
        default: throw APIProblem.invalidRequest("recoveryEmail is true or false.")
        }
        _ = try await adminService(context).removeAccountPasskey(request)
        return GatewayApplication.noContent
    }

    func auditEvents(_ context: AdminContext) async throws -> HTTPResponse {
        let query = context.query
        var request = ListAuditEventsRequest()
        request.adminToken = context.adminToken
        request.accountID = try query.text("accountID", limit: 36) ?? ""
        request.types = try query.all("type", limit: 64, count: 32)
        request.sinceUnixMilliseconds = try query.integer("since", in: 0...253_402_300_799_999) ?? 0
        request.untilUnixMilliseconds = try query.integer("until", in: 0...253_402_300_799_999) ?? 0
        request.beforeID = try query.integer("before", in: 1...Int64.max) ?? 0
        request.limit = Int32(try query.integer("limit", in: 1...Int64(AuditEventQuery.pageLimit)) ?? 100)
        let events = try await adminService(context).listAuditEvents(request).events
        var page: [(String, JSONValue)] = [("events", .array(events.map(Self.event)))]
        if events.count == Int(request.limit), let last = events.last {
            page.append(("nextBefore", .number(Double(last.id))))
        }
        return GatewayApplication.json(200, .object(JSONObject(page)))
    }

}
