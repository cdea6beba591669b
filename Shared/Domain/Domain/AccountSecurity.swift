import Foundation

/// The account's security changes that session-service makes in one transaction each: a password set or changed,
/// a recovery finished with a password, a fresh sign-in bound to a session, and an operator's forced reset. Each
/// stores its audit event and queues its security notification with the change.
public protocol AccountSecurityRepository: Sendable {
    /// Sets or replaces the account's password hash and revokes every live session of the account but `keeping`.
    /// Nil when the account does not exist; `accountDisabled` when an operator disabled it.
    func setPassword(_ passwordHash: String, of accountID: AccountID, keeping sessionID: SessionID, at now: Date)
        async throws -> PasswordChange?
    /// Ends a live recovery session with a new password: the password set, the recovery session ended and `session`
    /// stored, in one transaction. The account's display name, or nil when the recovery session is not live.
    /// `accountDisabled` when an operator disabled the account.
    func finishRecovery(
        withPassword passwordHash: String, endingRecoverySession recoverySessionID: SessionID,
        session: AuthenticationSession
    ) async throws -> String?
    /// What a password reauthentication needs of the account: its hash and failed password guesses, as at sign-in;
    /// nil when it has no password.
    func passwordRecord(of accountID: AccountID) async throws -> PasswordSignInRecord?
    /// Moves a live session's sign-in time to `now` after its account's password was verified against
    /// `verifiedHash` (a password changed since stops it). False when the session is not live or the hash changed.
    func reauthenticate(_ sessionID: SessionID, of accountID: AccountID, verifiedHash: String, at now: Date)
        async throws -> Bool
    /// An operator's forced reset: the password voided and every live session revoked. Nil when the account does
    /// not exist.
    func resetPassword(of accountID: AccountID, at now: Date) async throws -> PasswordChange?
}

/// What a password change did.
public struct PasswordChange: Hashable, Sendable {
    /// Whether the account had a password before (changed or voided), or not (set, or nothing to void).
    public var hadPassword: Bool
    /// The sessions it revoked.
    public var sessionsRevoked: Int

    public init(hadPassword: Bool, sessionsRevoked: Int) {
        self.hadPassword = hadPassword
        self.sessionsRevoked = sessionsRevoked
    }
}
