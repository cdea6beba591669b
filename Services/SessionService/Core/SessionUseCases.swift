import AccessTokens
import AccountRecovery
import Crypto
import Domain
import Encoding
import Foundation
import Observability
import PasswordHashing
import SessionIssuance

/// Password accounts, password sign-in and sessions: the use cases of session-service, in domain terms.
public struct SessionUseCases: Sendable {

    let accounts: any AccountRepository
    let passwords: any PasswordCredentialRepository
    /// The failed password sign-ins each account has.
    let failedGuesses: any FailedGuessRepository
    let sessions: any AuthenticationSessionRepository
    let hashing: PasswordHashingPool
    let random: any RandomSource
    /// Seals the verification code a new account is mailed and keys its digest; nil: no code is made (stores that
    /// do not model mail, in tests).
    let codeKeys: SecretKeyRing?
    let issuer: SessionIssuer
    let clock: @Sendable () -> Date
    let logger: Logger
    let metrics: MetricsRegistry
    /// The failed password sign-ins each account may have (`failed_guesses`, shared by every replica).
    let guessLimit: GuessLimit
    /// What new passwords are checked against besides their length.
    let commonPasswords: CommonPasswords

    public init(
        accounts: any AccountRepository, passwords: any PasswordCredentialRepository,
        failedGuesses: any FailedGuessRepository, sessions: any AuthenticationSessionRepository,
        hashing: PasswordHashingPool, random: any RandomSource,
        sessionLifetime: TimeInterval, clock: @escaping @Sendable () -> Date = Date.init, logger: Logger,
        metrics: MetricsRegistry, issuer: SessionIssuer? = nil, guessLimit: GuessLimit = .standard,
        codeKeys: SecretKeyRing? = nil, commonPasswords: CommonPasswords = .empty
    ) {
        self.commonPasswords = commonPasswords
        self.codeKeys = codeKeys
        self.metrics = metrics
        self.guessLimit = guessLimit
        self.accounts = accounts
        self.passwords = passwords
        self.failedGuesses = failedGuesses
        self.sessions = sessions
        self.hashing = hashing
        self.random = random
        self.issuer = issuer ?? SessionIssuer(random: random, lifetime: sessionLifetime, clock: clock)
        self.clock = clock
        self.logger = logger
    }

    /// Creates an account with an email and a password. Throws `invalidRequest` or `emailTaken`.
    public func createPasswordAccount(email rawEmail: String, password: String, displayName rawName: String)
        async throws -> AccountID
    {
        let email = try EmailAddress.validated(rawEmail)
        let displayName = try DisplayName.validated(rawName)
        try PasswordPolicy.check(password, against: commonPasswords)
        let hash = try await PasswordHashingCall.run { try await hashing.hash(password) }
        let now = clock()
        guard let handle = UserHandle(random.bytes(count: 32)) else {
            throw DomainError(.unavailable, "no random user handle")
        }
        let account = Account(id: .random(), displayName: displayName.value, userHandle: handle, createdAt: now)
        let accountEmail = AccountEmail(accountID: account.id, address: email, createdAt: now)
        try await accounts.createPasswordAccount(
            account, email: accountEmail,
            password: PasswordCredential(accountID: account.id, passwordHash: hash, createdAt: now, updatedAt: now),
            verification: try codeKeys.map { keys in
                try OneTimeCodes.delivery(
                    accountID: account.id, emailID: accountEmail.id, address: accountEmail.email,
                    purpose: .verification, random: random, keys: keys, now: now)
            })
        logger.audit(.accountCreated, ["account.id": account.id.description, "method": "password"])
        logger.audit(.emailVerificationSent, ["account.id": account.id.description])
        return account.id
    }

    /// Signs in with an email and a password. Unknown emails take as long as wrong passwords and fail alike.
    ///
    /// Each account's failed sign-ins are limited by `guessLimit` on every replica together: a sign-in that finds the
    /// account's budget spent is refused with `rateLimited` (reason `too_many_failed_guesses`, and when to retry)
    /// before its password is checked, right or wrong. Passkey sign-in and recovery never read this budget, so the
    /// lock cannot keep the owner out.
    public func signInWithPassword(email rawEmail: String, password: String) async throws -> SessionIssuer.IssuedSession
    {
        let failure = DomainError(.invalidCredentials, "the email or password is wrong")
        guard let email = EmailAddress(rawEmail), password.utf8.count <= PasswordHasher.maximumPasswordLength else {
            _ = try await PasswordHashingCall.run { try await hashing.verifyDummy(password) }
            logger.audit(.signInFailed, ["method": "password", "reason": "invalid_credentials"])
            throw failure
        }
        guard let record = try await passwords.signInRecord(normalizedEmail: email.normalized) else {
            _ = try await PasswordHashingCall.run { try await hashing.verifyDummy(password) }
            logger.audit(.signInFailed, ["method": "password", "reason": "invalid_credentials"])
            throw failure
        }
        // The budget was read with the record. Near its end a guess claims its place before it is checked, so that
        // guesses racing on several replicas cannot all pass on the same reading; a claimed guess is already counted.
        let now = clock()
        let charge = GuessCharge(accountID: record.accountID, kind: .password, limit: guessLimit, now: now)
        let guess: AdmittedGuess
        switch try await AdmittedGuess.admit(charge, with: record.failedGuesses, in: failedGuesses) {
        case .admitted(let admitted): guess = admitted
        case .refused(let seconds): throw tooManyFailedGuesses(record.accountID, retryAfterSeconds: seconds)
        }
        // Import refuses hashes this system cannot read, so an unreadable one is a defect or tampering: it fails
        // closed, after the same work as any other failure.
        guard let stored = try? StoredPasswordHash(parsing: record.passwordHash) else {
            _ = try await PasswordHashingCall.run { try await hashing.verifyDummy(password) }
            logger.error(
                "password.hash_unreadable", ["account.id": record.accountID.description])
            logger.audit(
                .signInFailed,
                ["method": "password", "reason": "unreadable_hash", "account.id": record.accountID.description])
            throw failure
        }
        guard try await PasswordHashingCall.run({ try await hashing.verify(password, against: stored) }) else {
            try await guess.failed()
            logger.audit(
                .signInFailed,
                ["method": "password", "reason": "invalid_credentials", "account.id": record.accountID.description])
            throw failure
        }
        // Only someone who knows the password learns that the account is disabled.
        guard !record.disabled else {
            logger.audit(
                .signInFailed,
                ["method": "password", "reason": "account_disabled", "account.id": record.accountID.description])
            throw DomainError(.accountDisabled, "this account is disabled")
        }
        // A legacy or weaker hash is replaced in the sign-in's own transaction. When the hashing threads are too
        // busy to make the new one, the sign-in goes ahead on the old hash and a later sign-in upgrades it.
        var replacement: String?
        if hashing.hasher.needsRehash(stored) { replacement = try? await hashing.hash(password) }
        let pending = issuer.newSession(accountID: record.accountID, method: .password)
        let session = pending.session
        guard
            try await passwords.completeSignIn(
                session, verifiedHash: record.passwordHash, replacement: replacement, at: clock())
        else {
            // The password changed or was removed between reading and writing.
            logger.audit(
                .signInFailed,
                ["method": "password", "reason": "password_changed", "account.id": record.accountID.description])
            throw failure
        }
        if replacement != nil {
            logger.audit(
                .passwordRehashed,
                ["account.id": record.accountID.description, "from": stored.schemeName, "to": "argon2id"])
            AdoptionMetrics.passwordRehashed(metrics, from: stored.schemeName)
        }
        AdoptionMetrics.signedIn(metrics, method: AuthenticationMethod.password.rawValue)
        logger.audit(
            .signInSucceeded,
            ["method": "password", "account.id": record.accountID.description, "session.id": session.id.description])
        return try await issuer.issue(pending, displayName: record.displayName)
    }

    /// The refusal of a password sign-in to an account whose failed guesses fill its budget.
    private func tooManyFailedGuesses(_ accountID: AccountID, retryAfterSeconds: Int) -> DomainError {
        logger.audit(
            .signInFailed,
            ["method": "password", "reason": Self.tooManyFailedGuesses, "account.id": accountID.description])
        return DomainError(
            .rateLimited, "too many failed password sign-ins for this account; sign in with a passkey or try later",
            reason: Self.tooManyFailedGuesses, retryAfterSeconds: retryAfterSeconds)
    }

    /// The reason of a sign-in refused because its account's failed guesses fill their budget.
    public static let tooManyFailedGuesses = "too_many_failed_guesses"

    /// Removes the account's password once it has a passkey and has signed in with one (stage ③). Throws
    /// `notFound` when it has no password and `lastSignInMethod` (with a reason) when the password must stay.
    public func removePassword(of accountID: AccountID) async throws {
        do {
            try await passwords.removePassword(of: accountID)
        } catch let error as DomainError where error.code == .notFound || error.code == .lastSignInMethod {
            logger.audit(
                .passwordRemovalRefused,
                ["account.id": accountID.description, "reason": error.reason ?? error.code.rawValue])
            throw error
        }
        logger.audit(.passwordRemoved, ["account.id": accountID.description])
    }

    /// The live session a bearer token stands for, with its account's display name: a signed access token (its
    /// signature, key, issuer, audience and expiry checked, then its session looked up, so a revocation shows at
    /// once) or an opaque session token. A refresh token is refused here, and so is a session of an account an
    /// operator disabled. Throws `unauthenticated`.
    public func validate(token: String) async throws -> (AuthenticationSession, displayName: String) {
        let failure = DomainError(.unauthenticated, "the access token is missing, unknown, expired or revoked")
        let now = clock()
        let session: AuthenticationSession
        if let signer = issuer.signer, AccessTokenFormat.looksLikeJWT(token) {
            await signer.ring.waitUntilLoaded()
            let claims: AccessTokenClaims
            do {
                claims = try signer.verify(token, now: now)
            } catch {
                throw DomainError(.unauthenticated, "the access token is not valid", reason: error.code.rawValue)
            }
            guard let sessionID = UUID(text: claims.sessionID),
                let found = try await sessions.find(id: SessionID(sessionID)),
                UUID(text: claims.subject).map(AccountID.init) == found.accountID
            else { throw failure }
            session = found
        } else {
            guard let (id, digest) = SessionTokens.parse(token), let found = try await sessions.find(id: id),
                SessionTokens.matches(found.tokenDigest, digest)
            else { throw failure }
            session = found
        }
        guard session.isLive(at: now), let account = try await accounts.enabledAccount(id: session.accountID) else {
            throw failure
        }
        return (session, account.displayName)
    }

    /// Revokes one of the account's live sessions. Throws `notFound`.
    public func revoke(sessionID: SessionID, of accountID: AccountID) async throws {
        guard try await sessions.revoke(id: sessionID, of: accountID, at: clock()) else {
            throw DomainError(.notFound, "no such session")
        }
        logger.audit(.sessionRevoked, ["account.id": accountID.description, "session.id": sessionID.description])
    }

    /// The account's live sessions, newest first.
    public func liveSessions(of accountID: AccountID) async throws -> [AuthenticationSession] {
        try await sessions.liveSessions(of: accountID, at: clock())
    }

    /// Changes the account's display name (the rules of `DisplayName`) and returns its summary. Throws
    /// `invalidRequest` or `notFound`.
    public func rename(_ accountID: AccountID, to rawName: String) async throws -> AccountSummary {
        let name = try DisplayName.validated(rawName)
        guard try await accounts.rename(id: accountID, to: name.value) != nil else {
            throw DomainError(.notFound, "no such account")
        }
        logger.audit(.accountRenamed, ["account.id": accountID.description])
        return try await summary(of: accountID)
    }

    /// The account page's summary. Throws `notFound`.
    public func summary(of accountID: AccountID) async throws -> AccountSummary {
        guard let summary = try await accounts.summary(id: accountID) else {
            throw DomainError(.notFound, "no such account")
        }
        return summary
    }
}
