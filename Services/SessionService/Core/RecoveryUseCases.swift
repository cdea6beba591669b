import AccountRecovery
import Crypto
import Domain
import Foundation
import Observability
import SessionIssuance
import Synchronization

/// Email verification, recovery by one-time email code or recovery code, and recovery codes: session-service's use
/// cases for getting back into an account that lost its passkeys.
///
/// Nothing a caller sees tells whether an account has an address: starting a recovery answers alike for any
/// address, and every failed finish is the same `invalidCode`.
public struct RecoveryUseCases: Sendable {
    /// How long a recovery session may be used to register a passkey.
    public static let recoverySessionLifetime: TimeInterval = 900

    let recovery: any AccountRecoveryRepository
    /// The failed code guesses each account has (a recovery code's; an email code's are claimed by `recovery`).
    let failedGuesses: any FailedGuessRepository
    let random: any RandomSource
    /// Seals the codes it mails, keys their digests and checks the codes given back.
    let keys: SecretKeyRing
    let issuer: SessionIssuer
    let revokesOtherSessions: Bool
    let clock: @Sendable () -> Date
    let logger: Logger
    let startsInFlight = StartsInFlight()
    /// The failed code attempts each account may have (`failed_guesses`, kind `code`, shared by every replica): email
    /// codes and recovery codes together, apart from the password's.
    let guessLimit: GuessLimit

    public init(
        recovery: any AccountRecoveryRepository, failedGuesses: any FailedGuessRepository, random: any RandomSource,
        keys: SecretKeyRing, revokesOtherSessions: Bool, clock: @escaping @Sendable () -> Date = Date.init,
        logger: Logger, guessLimit: GuessLimit = .standard
    ) {
        self.guessLimit = guessLimit
        self.recovery = recovery
        self.failedGuesses = failedGuesses
        self.random = random
        self.keys = keys
        self.issuer = SessionIssuer(random: random, lifetime: Self.recoverySessionLifetime, clock: clock)
        self.revokesOtherSessions = revokesOtherSessions
        self.clock = clock
        self.logger = logger
    }

    private var invalidCode: DomainError {
        DomainError(.invalidCode, "the code is wrong, expired, used or was tried too often")
    }

    /// Sends a new verification code to the account's first email; nothing when it is verified already. Throws
    /// `notFound` for an account without an email.
    public func requestVerification(of accountID: AccountID) async throws {
        guard let target = try await recovery.firstEmail(of: accountID) else {
            throw DomainError(.notFound, "the account has no email address")
        }
        guard !target.verified else { return }
        try await recovery.issue(
            OneTimeCodes.delivery(for: target, purpose: .verification, random: random, keys: keys, now: clock()))
        logger.audit(.emailVerificationSent, ["account.id": accountID.description])
    }

    /// Confirms the account's email with the code sent to it. Throws `invalidRequest` for a malformed code and
    /// `invalidCode` for a wrong, expired, used or exhausted one, and for any while the account's failed code
    /// attempts fill their budget (`guessLimit`).
    public func verifyEmail(of accountID: AccountID, code: String) async throws {
        guard OneTimeCodes.isWellFormed(code) else {
            throw DomainError(.invalidRequest, "code must be \(OneTimeCodes.digits) digits")
        }
        guard let target = try await recovery.firstEmail(of: accountID) else { throw invalidCode }
        if target.verified { return }
        let now = clock()
        if case .refuse = guessLimit.admission(of: target.failedCodeGuesses, at: now) {
            logger.audit(
                .emailVerificationFailed, ["account.id": accountID.description, "reason": "too_many_failed_guesses"])
            throw invalidCode
        }
        // Every attempt claims its place in the account's budget in the statement that counts it against the code.
        let charge = GuessCharge(accountID: accountID, kind: .code, limit: guessLimit, now: now)
        guard
            let stored = try await recovery.attempt(
                emailID: target.emailID, purpose: .verification, maximumAttempts: OneTimeCodes.maximumAttempts,
                claiming: charge),
            OneTimeCodes.matches(code, stored, keys: keys), try await recovery.completeVerification(codeID: stored.id)
        else {
            logger.audit(.emailVerificationFailed, ["account.id": accountID.description, "reason": "invalid_code"])
            throw invalidCode
        }
        logger.audit(.emailVerified, ["account.id": accountID.description])
    }

    /// Queues a recovery code for `email` when it is an account's verified address; otherwise does nothing. Either
    /// way it returns alike, and before anything is looked up: the lookup and the writes run after the answer, so
    /// not even its timing says whether an account has the address. Throws `invalidRequest` only for a malformed
    /// address, and `rateLimited` while `StartsInFlight.limit` starts are still running (whatever their addresses).
    public func startRecovery(email rawEmail: String) async throws {
        let email = try EmailAddress.validated(rawEmail)
        guard startsInFlight.enter() else {
            throw DomainError(.rateLimited, "too many recoveries are being started; try again shortly")
        }
        // An unstructured task keeps the request's audit context (task-local values are inherited).
        Task { [self] in
            defer { startsInFlight.leave() }
            do {
                try await issueRecoveryCode(to: email)
            } catch {
                logger.error("recovery.start_failed", ["error": String(describing: error)])
            }
        }
    }

    /// The work of a start: a code and its message for a verified address, nothing for any other.
    func issueRecoveryCode(to email: EmailAddress) async throws {
        guard let target = try await recovery.target(normalizedEmail: email.normalized), target.verified else {
            logger.audit(.recoveryStarted, ["outcome": "no_verified_address"])
            return
        }
        try await recovery.issue(
            OneTimeCodes.delivery(for: target, purpose: .recovery, random: random, keys: keys, now: clock()))
        logger.audit(.recoveryStarted, ["outcome": "code_sent", "account.id": target.accountID.description])
    }

    /// Trades an email code (sent to the verified `email`) or one of the account's recovery codes for a recovery
    /// session, consuming the code and, when configured, revoking the account's other sessions in the same
    /// transaction. Throws `invalidRequest` for a malformed request and `invalidCode` for anything else that fails.
    public func finishRecovery(email rawEmail: String, code: String?, recoveryCode: String?) async throws
        -> SessionIssuer.IssuedSession
    {
        let email = try EmailAddress.validated(rawEmail)
        guard let given = RecoveryProofText(code: code, recoveryCode: recoveryCode) else {
            throw DomainError(.invalidRequest, "give exactly one of code and recoveryCode")
        }
        var code: String?
        var recoveryCode: String?
        switch given {
        case .emailCode(let text): code = text
        case .recoveryCode(let text): recoveryCode = text
        }
        if let code, !OneTimeCodes.isWellFormed(code) {
            throw DomainError(.invalidRequest, "code must be \(OneTimeCodes.digits) digits")
        }
        if let recoveryCode, RecoveryCodes.normalized(recoveryCode) == nil {
            throw DomainError(.invalidRequest, "recoveryCode must be 16 letters and digits, in groups of four")
        }
        let kind = code != nil ? "email_code" : "recovery_code"
        func failed(_ reason: String, _ accountID: AccountID? = nil) -> DomainError {
            logger.audit(
                .recoveryFailed, ["proof": kind, "reason": reason, "account.id": accountID?.description ?? "none"])
            return invalidCode
        }
        // Every failure does the same work whatever the address: one lookup, then one row updated (an attempt counted
        // against a live code and the account's failed code guesses, a failed guess counted, or else a decoy), so
        // neither the answer nor its time says whether an account has it.
        let target = try await recovery.target(normalizedEmail: email.normalized)
        let decoySlot = Int(sha256(Array(email.normalized.utf8))[0])
        // The account's failed code guesses were read with the address (`guessLimit`). A guess that finds them full
        // is not tried, and fails as a wrong code would: the lock does not say that the address has an account.
        let now = clock()
        let charge = target.map { GuessCharge(accountID: $0.accountID, kind: .code, limit: guessLimit, now: now) }
        let admission = guessLimit.admission(of: target?.failedCodeGuesses, at: now)
        if case .refuse = admission {
            try await recovery.countDecoyAttempt(slot: decoySlot)
            throw failed("too_many_failed_guesses", target?.accountID)
        }
        let proof: RecoveryProof
        if let code {
            var stored: EmailCode?
            if let target, target.verified, let charge {
                stored = try await recovery.attempt(
                    emailID: target.emailID, purpose: .recovery, maximumAttempts: OneTimeCodes.maximumAttempts,
                    claiming: charge)
            }
            guard let stored else {
                try await recovery.countDecoyAttempt(slot: decoySlot)
                throw failed(target == nil ? "unknown_address" : "no_live_code", target?.accountID)
            }
            guard OneTimeCodes.matches(code, stored, keys: keys) else { throw failed("wrong_code", target?.accountID) }
            proof = .emailCode(stored.id)
        } else {
            // Near the budget's end a guess claims its place before the codes are compared, as a password does.
            var guess: AdmittedGuess?
            if let charge {
                guess = try await AdmittedGuess.admit(charge, admission, in: failedGuesses)
                guard guess != nil else { throw failed("too_many_failed_guesses", target?.accountID) }
            }
            let accountID = target?.accountID ?? AccountID.random()
            let records = try await recovery.unusedRecoveryCodes(of: accountID)
            guard let record = RecoveryCodes.match(recoveryCode ?? "", accountID: accountID, among: records) else {
                if let guess {
                    try await guess.failed()
                } else {
                    try await recovery.countDecoyAttempt(slot: decoySlot)
                }
                throw failed(target == nil ? "unknown_address" : "wrong_code", target?.accountID)
            }
            proof = .recoveryCode(record.id)
        }
        guard let target else { throw failed("unknown_address") }
        // A recovery session is always an opaque token without refresh: it may only register a passkey.
        let pending = issuer.newSession(accountID: target.accountID, method: .recovery)
        let session = pending.session
        guard
            let revoked = try await recovery.startRecoverySession(
                session, consuming: proof, revokingOtherSessions: revokesOtherSessions)
        else { throw failed("code_used_meanwhile", target.accountID) }
        logger.audit(
            .recoverySessionIssued,
            [
                "proof": kind, "account.id": target.accountID.description, "session.id": session.id.description,
                "sessions.revoked": String(revoked),
            ])
        return try await issuer.issue(pending, displayName: target.displayName)
    }

    /// Replaces the account's recovery codes with ten new ones and returns them: the only time they are shown.
    public func generateRecoveryCodes(for accountID: AccountID) async throws -> [String] {
        let codes = RecoveryCodes.generate(random: random)
        let digests = codes.compactMap {
            RecoveryCodes.normalized($0).map { RecoveryCodes.digest($0, accountID: accountID) }
        }
        try await recovery.replaceRecoveryCodes(of: accountID, digests: digests, at: clock())
        logger.audit(.recoveryCodesGenerated, ["account.id": accountID.description, "count": String(codes.count)])
        return codes
    }
}

/// The recovery starts still running after their answers, bounded so that a flood of starts cannot pile up work.
final class StartsInFlight: Sendable {
    /// Starts allowed to run at once.
    static let limit = 256
    private let count = Mutex(0)

    /// Takes a place; false when all are taken.
    func enter() -> Bool {
        count.withLock { count in
            guard count < Self.limit else { return false }
            count += 1
            return true
        }
    }

    func leave() { count.withLock { $0 -= 1 } }
}
