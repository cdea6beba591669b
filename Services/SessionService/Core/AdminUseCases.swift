import AdminAccess
import Domain
import Foundation
import Observability

/// The operators' use cases behind the admin API: each call presents an admin token, is refused unless the token
/// is valid and has the operation's scope, and runs as that token, so the audit trail names it.
public struct AdminUseCases: Sendable {
    /// The most accounts a search returns.
    public static let searchLimit = 50

    let admin: any AdminRepository
    let logger: Logger
    let clock: @Sendable () -> Date

    public init(admin: any AdminRepository, logger: Logger, clock: @escaping @Sendable () -> Date = Date.init) {
        self.admin = admin
        self.logger = logger
        self.clock = clock
    }

    /// Runs `body` as the token's holder when the token may do `scope`; otherwise `unauthenticated` (no token, an
    /// unknown, revoked or expired one) or `forbidden` (the scope is missing).
    public func authorized<Result: Sendable>(
        _ presented: String, _ scope: AdminScope, _ body: () async throws -> Result
    ) async throws -> Result {
        let now = clock()
        let decision: AdminAccessDecision
        var token: AdminToken?
        if presented.isEmpty {
            decision = .refused(.missing)
        } else if let secret = AdminTokenSecret(presented: presented) {
            token = try await admin.token(digest: secret.digest)
            decision = token?.check(scope, at: now) ?? .refused(.unknown)
        } else {
            decision = .refused(.unknown)
        }
        switch decision {
        case .allowed:
            guard let token else { throw DomainError(.unauthenticated, "an admin token is required") }
            try await admin.recordUse(of: token.id, at: now)
            var context = AuditContext.current
            context.actor = .admin(tokenID: token.id)
            return try await AuditContext.$current.withValue(context) { try await body() }
        case .refused(let refusal):
            logger.warning(
                "admin.refused", ["reason": refusal.rawValue, "scope": scope.rawValue, "token.id": token?.id ?? "-"])
            throw DomainError(.unauthenticated, "a valid admin token is required")
        case .forbidden(let missing):
            logger.warning("admin.forbidden", ["scope": missing.rawValue, "token.id": token?.id ?? "-"])
            throw DomainError(.forbidden, "this admin token does not have the \(missing.rawValue) scope")
        }
    }

    public func findAccounts(token: String, _ lookup: AccountLookup) async throws -> [AdminAccountSummaryRecord] {
        try await authorized(token, .read) { try await admin.findAccounts(lookup, limit: Self.searchLimit) }
    }

    public func accountDetail(token: String, _ accountID: AccountID) async throws -> AdminAccountRecord {
        try await authorized(token, .read) {
            guard let record = try await admin.accountDetail(accountID, at: clock()) else {
                throw DomainError(.notFound, "no such account")
            }
            return record
        }
    }

    /// Revokes one session of the account, or every live one when `sessionID` is nil; `notFound` when one was named
    /// and is not live.
    public func revokeSessions(token: String, of accountID: AccountID, sessionID: SessionID?) async throws -> Int {
        try await authorized(token, .write) {
            let revoked = try await admin.revokeSessions(of: accountID, sessionID: sessionID, at: clock())
            if sessionID != nil, revoked == 0 { throw DomainError(.notFound, "no such live session") }
            logger.audit(.sessionRevoked, ["account.id": accountID.description, "count": String(revoked)])
            return revoked
        }
    }

    public func removePasskey(
        token: String, _ credentialID: CredentialID, of accountID: AccountID, overridingLastMethod: Bool
    ) async throws {
        try await authorized(token, .write) {
            try await admin.removePasskey(credentialID, of: accountID, overridingLastMethod: overridingLastMethod)
            logger.audit(
                .passkeyRemoved,
                ["account.id": accountID.description, "override": overridingLastMethod ? "last_sign_in_method" : "none"])
        }
    }

    /// Disables the account, revoking its sessions at once, or enables it again (scope write); `notFound` when there
    /// is none. Doing it twice changes nothing the second time.
    public func setDisabled(token: String, _ accountID: AccountID, disabled: Bool) async throws -> (changed: Bool, revoked: Int) {
        try await authorized(token, .write) {
            guard let outcome = try await admin.setDisabled(accountID, disabled: disabled, at: clock()) else {
                throw DomainError(.notFound, "no such account")
            }
            if outcome.changed {
                logger.audit(
                    disabled ? .accountDisabled : .accountEnabled,
                    ["account.id": accountID.description, "sessions_revoked": String(outcome.revoked)])
            }
            return outcome
        }
    }

    /// Erases the account (scope erase); `notFound` when there is none.
    public func eraseAccount(token: String, _ accountID: AccountID) async throws {
        try await authorized(token, .erase) {
            guard try await admin.eraseAccount(accountID) else { throw DomainError(.notFound, "no such account") }
            logger.audit(.accountErased, ["account.id": accountID.description])
        }
    }

    public func auditEvents(token: String, _ query: AuditEventQuery) async throws -> [StoredAuditEvent] {
        try await authorized(token, .read) { try await admin.auditEvents(query) }
    }
}
