import AccountRecovery
import AdminAccess
import Crypto
import Domain
import Foundation
import Observability

/// The operators' use cases behind the admin API: each call presents an admin token, is refused unless the token
/// is valid and has the operation's scope, and runs as that token, so the audit trail names it.
public struct AdminUseCases: Sendable {
    /// The most accounts a search returns.
    public static let searchLimit = 50

    let admin: any AdminRepository
    let recovery: any AccountRecoveryRepository
    let random: any RandomSource
    /// Seals the codes it mails and keys their digests.
    let keys: SecretKeyRing
    let logger: Logger
    let clock: @Sendable () -> Date
    /// An operator's forced password reset; nil: not offered (stores that do not model it, in tests).
    let security: (any AccountSecurityRepository)?

    public init(
        admin: any AdminRepository, recovery: any AccountRecoveryRepository, random: any RandomSource,
        keys: SecretKeyRing, logger: Logger, clock: @escaping @Sendable () -> Date = Date.init,
        security: (any AccountSecurityRepository)? = nil
    ) {
        self.security = security
        self.admin = admin
        self.recovery = recovery
        self.random = random
        self.keys = keys
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

    public func listAccounts(token: String, _ listing: AccountListing) async throws -> [AdminAccountSummaryRecord] {
        try await authorized(token, .read) { try await admin.listAccounts(listing) }
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

    /// Removes a passkey. With the override, which may take the account's last way to sign in, a recovery code is
    /// also sent to its first verified address unless `sendingRecovery` is false; returns where it went, if anywhere.
    public func removePasskey(
        token: String, _ credentialID: CredentialID, of accountID: AccountID, overridingLastMethod: Bool,
        sendingRecovery: Bool = true
    ) async throws -> String? {
        try await authorized(token, .write) {
            try await admin.removePasskey(credentialID, of: accountID, overridingLastMethod: overridingLastMethod)
            logger.audit(
                .passkeyRemoved,
                [
                    "account.id": accountID.description,
                    "override": overridingLastMethod ? "last_sign_in_method" : "none",
                ])
            guard overridingLastMethod, sendingRecovery,
                let (disabled, targets) = try await admin.mailTargets(of: accountID), !disabled,
                let target = targets.first(where: \.verified)
            else { return nil }
            return try await issueCode(.recovery, to: target)
        }
    }

    /// Queues a code of `purpose` to `target` (stored with its audit event by the repository) and returns where it
    /// goes.
    private func issueCode(_ purpose: EmailCodePurpose, to target: RecoveryTarget) async throws -> String {
        try await recovery.issue(
            OneTimeCodes.delivery(for: target, purpose: purpose, random: random, keys: keys, now: clock()))
        logger.audit(
            purpose == .recovery ? .recoveryStarted : .emailVerificationSent,
            ["outcome": "code_sent", "account.id": target.accountID.description, "by": "admin"])
        return target.address
    }

    /// Sends the account a recovery code (to a verified address) or a verification code (to an unverified one):
    /// to `address` when given, which must be one of the account's, or else to its first address that qualifies.
    /// Returns the address it went to. A disabled account gets no recovery code (`accountDisabled`).
    public func sendEmail(token: String, to accountID: AccountID, purpose: EmailCodePurpose, address: String?)
        async throws -> String
    {
        try await authorized(token, .write) {
            guard let (disabled, targets) = try await admin.mailTargets(of: accountID) else {
                throw DomainError(.notFound, "no such account")
            }
            if disabled && purpose == .recovery { throw DomainError(.accountDisabled, "the account is disabled") }
            let wanted = purpose == .recovery
            let target: RecoveryTarget
            if let address {
                guard let normalized = EmailAddress(address)?.normalized,
                    let named = targets.first(where: { EmailAddress($0.address)?.normalized == normalized })
                else { throw DomainError(.notFound, "the account has no such address") }
                guard named.verified == wanted else {
                    throw DomainError(
                        .invalidRequest,
                        wanted ? "a recovery code goes to a verified address only" : "the address is verified already")
                }
                target = named
            } else {
                guard let first = targets.first(where: { $0.verified == wanted }) else {
                    throw DomainError(
                        .invalidRequest, wanted ? "the account has no verified address" : "every address is verified")
                }
                target = first
            }
            return try await issueCode(purpose, to: target)
        }
    }

    /// Disables the account, revoking its sessions at once, or enables it again (scope write); `notFound` when there
    /// is none. Doing it twice changes nothing the second time.
    public func setDisabled(token: String, _ accountID: AccountID, disabled: Bool) async throws -> (
        changed: Bool, revoked: Int
    ) {
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

    /// Forces a password reset (scope write): the password voided and every session ended in one transaction, then a
    /// recovery code queued to the account's first verified address, with which the user adds a passkey or sets a
    /// new password. Refused before anything changes when no verified address could receive the code (`conflict`,
    /// reason `no_verified_email`) or the account is disabled; `notFound` when there is none. Returns what changed
    /// and where the code went.
    public func resetPassword(token: String, of accountID: AccountID) async throws -> (PasswordChange, address: String)
    {
        try await authorized(token, .write) {
            guard let security else { throw DomainError(.unavailable, "password resets are not wired") }
            guard let (disabled, targets) = try await admin.mailTargets(of: accountID) else {
                throw DomainError(.notFound, "no such account")
            }
            if disabled { throw DomainError(.accountDisabled, "the account is disabled; enable it first") }
            guard let target = targets.first(where: \.verified) else {
                throw DomainError(
                    .conflict, "the account has no verified address to send a recovery code to",
                    reason: "no_verified_email")
            }
            guard let change = try await security.resetPassword(of: accountID, at: clock()) else {
                throw DomainError(.notFound, "no such account")
            }
            logger.audit(
                .passwordReset,
                [
                    "account.id": accountID.description, "password_voided": String(change.hadPassword),
                    "sessions_revoked": String(change.sessionsRevoked),
                ])
            return (change, try await issueCode(.recovery, to: target))
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
