import Crypto
import Domain
import Foundation
import Observability

/// Issues single-use challenges with what the options need: challenge-service's use cases, in domain terms.
/// verification-service consumes them (`ChallengeConsumer`).
public struct ChallengeUseCases: Sendable {
    /// Challenges are this many random bytes (WebAuthn asks for at least 16; we issue 32).
    public static let challengeLength = 32
    /// Conditional registration (Automatic Passkey Upgrade) is granted only this soon after a password sign-in.
    public static let conditionalWindow: TimeInterval = 5 * 60

    /// What the relying party tells authenticators about itself.
    public struct RelyingParty: Sendable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    /// Where a registration of an existing account stands, for the creation options.
    public struct IssuedRegistration: Sendable {
        public let challenge: RegistrationChallenge
        public let account: Account
        public let userName: String
        public let excludeCredentials: [PasskeyCredential]
    }

    let storage: ChallengeStorage
    let relyingParty: RelyingParty
    let challengeLifetime: TimeInterval
    let accountRegistrationLifetime: TimeInterval
    let random: any RandomSource
    let clock: @Sendable () -> Date
    let logger: Logger
    let metrics: MetricsRegistry

    public init(
        storage: ChallengeStorage, relyingParty: RelyingParty, challengeLifetime: TimeInterval,
        accountRegistrationLifetime: TimeInterval, random: any RandomSource,
        clock: @escaping @Sendable () -> Date = Date.init, logger: Logger, metrics: MetricsRegistry
    ) {
        self.metrics = metrics
        self.storage = storage
        self.relyingParty = relyingParty
        self.challengeLifetime = challengeLifetime
        self.accountRegistrationLifetime = accountRegistrationLifetime
        self.random = random
        self.clock = clock
        self.logger = logger
    }

    /// Starts adding a passkey to `accountID`. Conditional mode needs the caller to vouch for a password session
    /// signed in less than five minutes ago; otherwise `forbidden`.
    public func beginRegistration(
        accountID: AccountID, mode: RegistrationMode, sessionMethod: AuthenticationMethod?, sessionCreatedAt: Date?
    ) async throws -> IssuedRegistration {
        let now = clock()
        if mode == .conditional {
            guard sessionMethod == .password, let signedInAt = sessionCreatedAt,
                now.timeIntervalSince(signedInAt) < Self.conditionalWindow,
                signedInAt.timeIntervalSince(now) < 60  // a minute of clock skew; a time further ahead is not believed
            else {
                AdoptionMetrics.automaticUpgradeAttempted(metrics, outcome: "refused")
                throw DomainError(
                    .forbidden, "conditional registration needs a password sign-in from the last five minutes")
            }
        }
        guard let account = try await storage.accounts.account(id: accountID) else {
            throw DomainError(.notFound, "no such account")
        }
        // Both reads finish before the challenge is stored, so a failed read leaves no row behind.
        async let emails = storage.emails.emails(of: accountID)
        async let existing = storage.passkeys.credentials(of: accountID)
        let (accountEmails, excluded) = try await (emails, existing)
        let challenge = RegistrationChallenge(
            id: .random(), accountID: accountID, challenge: random.bytes(count: Self.challengeLength), mode: mode,
            createdAt: now, expiresAt: now.addingTimeInterval(challengeLifetime), consumedAt: nil)
        try await storage.registrationChallenges.add(challenge)
        if mode == .conditional { AdoptionMetrics.automaticUpgradeAttempted(metrics, outcome: "started") }
        let userName = accountEmails.first?.email ?? account.displayName
        return IssuedRegistration(
            challenge: challenge, account: account, userName: userName, excludeCredentials: excluded)
    }

    /// Starts creating an account with a passkey: a prospective account ID and user handle, nothing in `accounts`.
    public func beginAccountRegistration(email rawEmail: String?, displayName rawName: String?) async throws
        -> AccountRegistration
    {
        let email = try EmailAddress.validatedIfPresent(rawEmail)
        let displayName = try DisplayName.validatedIfPresent(rawName)
        guard let handle = UserHandle(random.bytes(count: 32)) else {
            throw DomainError(.unavailable, "no random user handle")
        }
        let now = clock()
        let registration = AccountRegistration(
            id: .random(), prospectiveAccountID: .random(), userHandle: handle, email: email?.address,
            displayName: displayName?.value, challenge: random.bytes(count: Self.challengeLength), createdAt: now,
            expiresAt: now.addingTimeInterval(accountRegistrationLifetime), consumedAt: nil, completedAt: nil)
        try await storage.accountRegistrations.add(registration)
        return registration
    }

    /// Starts a discoverable sign-in.
    public func beginAuthentication() async throws -> AuthenticationChallenge {
        let now = clock()
        let challenge = AuthenticationChallenge(
            id: .random(), challenge: random.bytes(count: Self.challengeLength), createdAt: now,
            expiresAt: now.addingTimeInterval(challengeLifetime), consumedAt: nil)
        try await storage.authenticationChallenges.add(challenge)
        return challenge
    }
}

/// The repositories challenge-service reads and writes.
public struct ChallengeStorage: Sendable {
    public var accounts: any AccountRepository
    public var emails: any AccountEmailRepository
    public var passkeys: any PasskeyCredentialRepository
    public var registrationChallenges: any RegistrationChallengeRepository
    public var authenticationChallenges: any AuthenticationChallengeRepository
    public var accountRegistrations: any AccountRegistrationRepository

    public init(
        accounts: any AccountRepository, emails: any AccountEmailRepository, passkeys: any PasskeyCredentialRepository,
        registrationChallenges: any RegistrationChallengeRepository,
        authenticationChallenges: any AuthenticationChallengeRepository,
        accountRegistrations: any AccountRegistrationRepository
    ) {
        self.accounts = accounts
        self.emails = emails
        self.passkeys = passkeys
        self.registrationChallenges = registrationChallenges
        self.authenticationChallenges = authenticationChallenges
        self.accountRegistrations = accountRegistrations
    }
}
