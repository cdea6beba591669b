import AccessTokens
import Domain
import Foundation
import Observability
import PasswordHashing
import SessionIssuance

/// Password changes, a password ending a recovery, and a fresh sign-in with the password: session-service's use
/// cases for the account's own security changes (each a transaction of ``AccountSecurityRepository``, which stores
/// its audit event and queues its notification). The gateway admits the changes only to a session that signed in
/// within `PASSKEY_REAUTHENTICATION_WINDOW`.
public struct AccountSecurityUseCases: Sendable {
    let security: any AccountSecurityRepository
    let failedGuesses: any FailedGuessRepository
    let hashing: PasswordHashingPool
    let commonPasswords: CommonPasswords
    /// Issues the session of a recovery finished with a password (the sign-in issuer: signed tokens when configured).
    let issuer: SessionIssuer
    let guessLimit: GuessLimit
    let clock: @Sendable () -> Date
    let logger: Logger

    public init(
        security: any AccountSecurityRepository, failedGuesses: any FailedGuessRepository, hashing: PasswordHashingPool,
        commonPasswords: CommonPasswords,
        issuer: SessionIssuer, guessLimit: GuessLimit = .standard, clock: @escaping @Sendable () -> Date = Date.init,
        logger: Logger
    ) {
        self.security = security
        self.failedGuesses = failedGuesses
        self.hashing = hashing
        self.commonPasswords = commonPasswords
        self.issuer = issuer
        self.guessLimit = guessLimit
        self.clock = clock
        self.logger = logger
    }

    /// The session's account sets or changes its password (``PasswordPolicy/check(_:against:)``); every other session
    /// of the account ends. Throws `invalidRequest` (with the reason), `notFound` or `accountDisabled`.
    public func setPassword(_ password: String, of accountID: AccountID, keeping sessionID: SessionID) async throws
        -> PasswordChange
    {
        try PasswordPolicy.check(password, against: commonPasswords)
        let hash = try await PasswordHashingCall.run { try await hashing.hash(password) }
        guard let change = try await security.setPassword(hash, of: accountID, keeping: sessionID, at: clock()) else {
            throw DomainError(.notFound, "no such account")
        }
        logger.audit(
            change.hadPassword ? .passwordChanged : .passwordSet,
            ["account.id": accountID.description, "sessions_revoked": String(change.sessionsRevoked)])
        return change
    }

    /// A recovery session ends with a new password instead of a passkey, and the user is signed in with it. Throws
    /// `invalidRequest` for a refused password and `unauthenticated` when the recovery session is no longer live.
    public func finishRecovery(withPassword password: String, of accountID: AccountID, recoverySession: SessionID)
        async throws -> SessionIssuer.IssuedSession
    {
        try PasswordPolicy.check(password, against: commonPasswords)
        let hash = try await PasswordHashingCall.run { try await hashing.hash(password) }
        let pending = issuer.newSession(
            accountID: accountID, method: .password, references: AuthenticationMethodReferences.recoveryWithPassword)
        guard
            let displayName = try await security.finishRecovery(
                withPassword: hash, endingRecoverySession: recoverySession, session: pending.session)
        else { throw DomainError(.unauthenticated, "the recovery session is no longer live") }
        logger.audit(
            .recoveryCompleted,
            [
                "account.id": accountID.description, "recovery_session.id": recoverySession.description,
                "session.id": pending.session.id.description, "method": "password",
            ])
        return try await issuer.issue(pending, displayName: displayName)
    }

    /// A fresh sign-in bound to the live session `sessionID`: the account's password, within the account's failed-guess
    /// budget as at sign-in. Throws `invalidCredentials` for a wrong password (or none), `rateLimited` when the
    /// budget is spent, and `unauthenticated` when the session is no longer live.
    public func reauthenticate(_ sessionID: SessionID, of accountID: AccountID, password: String) async throws {
        let failure = DomainError(.invalidCredentials, "the password is wrong")
        guard password.utf8.count <= PasswordHasher.maximumPasswordLength,
            let record = try await security.passwordRecord(of: accountID)
        else {
            _ = try await PasswordHashingCall.run { try await hashing.verifyDummy(password) }
            throw failure
        }
        let now = clock()
        let charge = GuessCharge(accountID: accountID, kind: .password, limit: guessLimit, now: now)
        let guess: AdmittedGuess
        switch try await AdmittedGuess.admit(charge, with: record.failedGuesses, in: failedGuesses) {
        case .admitted(let admitted): guess = admitted
        case .refused(let seconds):
            throw DomainError(
                .rateLimited, "too many failed password attempts for this account; use a passkey or try later",
                reason: SessionUseCases.tooManyFailedGuesses, retryAfterSeconds: seconds)
        }
        guard let stored = try? StoredPasswordHash(parsing: record.passwordHash),
            try await PasswordHashingCall.run({ try await hashing.verify(password, against: stored) })
        else {
            try await guess.failed()
            logger.audit(
                .signInFailed,
                [
                    "method": "password", "reason": "invalid_credentials", "account.id": accountID.description,
                    "reauthentication": "true",
                ])
            throw failure
        }
        guard
            try await security.reauthenticate(
                sessionID, of: accountID, verifiedHash: record.passwordHash, at: now)
        else { throw DomainError(.unauthenticated, "the session is no longer live") }
        logger.audit(
            .sessionReauthenticated,
            ["account.id": accountID.description, "session.id": sessionID.description, "method": "password"])
    }
}

/// A call to the hashing pool, its refusals as the API's errors.
enum PasswordHashingCall {
    static func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch PasswordHashingError.busy {
            throw DomainError(.rateLimited, "too many password attempts are being processed; try again shortly")
        } catch PasswordHashingError.passwordTooLong {
            throw DomainError(.invalidRequest, "password is too long")
        }
    }
}

extension CommonPasswords {
    /// The shipped list (`Resources/common-passwords.txt`; ``CommonPasswords`` names its source). Throws when the
    /// resource is missing: a service that cannot check new passwords does not start.
    public static func shipped() throws -> CommonPasswords {
        guard
            let url = Bundle.module.url(
                forResource: "common-passwords", withExtension: "txt", subdirectory: "Resources"),
            let text = try? String(contentsOf: url, encoding: .utf8)
        else { throw DomainError(.unavailable, "the list of common passwords (common-passwords.txt) is missing") }
        return CommonPasswords(lines: text)
    }
}
