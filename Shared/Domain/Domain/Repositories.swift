import Foundation

// The ports the use cases depend on. Each protocol covers one table; the few writes that must span tables in one
// transaction (creating an account with its email and first credential) live on `AccountRepository`.
// Implementations report uniqueness conflicts as `DomainError` codes (`emailTaken`,
// `credentialAlreadyRegistered`) and an unreachable store as `.unavailable`.

/// The result of consuming a single-use row: either the row, or "unavailable" with no hint of why.
public enum Consumption<Row: Sendable>: Sendable {
    case consumed(Row)
    /// Unknown, expired, already consumed, or bound to another account: deliberately indistinguishable.
    case unavailable
}

extension Consumption: Equatable where Row: Equatable {}

/// `accounts`, plus the multi-table account creations.
public protocol AccountRepository: Sendable {
    /// Creates a password account: the account, its email and its password in one transaction.
    /// Throws `emailTaken` when the normalized email exists.
    func createPasswordAccount(_ account: Account, email: AccountEmail, password: PasswordCredential) async throws

    /// As `createPasswordAccount(_:email:password:)`, and stores the email's verification code with its message in
    /// the same transaction, so the account exists only with its verification mail queued.
    func createPasswordAccount(
        _ account: Account, email: AccountEmail, password: PasswordCredential, verification: EmailCodeDelivery?
    ) async throws

    /// Creates a passkey account: the account, its email (when given), its first passkey, the email's verification
    /// code and message (when given) and its first session (when given: creating an account with a passkey signs
    /// it in), and marks the registration completed, all in one transaction. Throws `emailTaken`,
    /// `credentialAlreadyRegistered`, or `challengeUnavailable` when the registration was already completed.
    func createPasskeyAccount(
        _ account: Account, email: AccountEmail?, credential: PasskeyCredential,
        completing registrationID: AccountRegistrationID, verification: EmailCodeDelivery?,
        session: AuthenticationSession?
    ) async throws

    /// The account with this ID, or nil.
    func account(id: AccountID) async throws -> Account?

    /// The account with this ID, or nil when there is none or an operator disabled it: a session is live only while
    /// this finds its account.
    func enabledAccount(id: AccountID) async throws -> Account?

    /// The account with its emails, whether it has a password, and how many passkeys.
    func summary(id: AccountID) async throws -> AccountSummary?

    /// Sets the account's display name; nil when there is no such account.
    func rename(id: AccountID, to displayName: String) async throws -> Account?
}

extension AccountRepository {
    /// Stores that do not model mail (test doubles) create the account and drop the verification.
    public func createPasswordAccount(
        _ account: Account, email: AccountEmail, password: PasswordCredential, verification: EmailCodeDelivery?
    ) async throws {
        try await createPasswordAccount(account, email: email, password: password)
    }

    /// A passkey account with neither a verification code nor a session.
    public func createPasskeyAccount(
        _ account: Account, email: AccountEmail?, credential: PasskeyCredential,
        completing registrationID: AccountRegistrationID
    ) async throws {
        try await createPasskeyAccount(
            account, email: email, credential: credential, completing: registrationID, verification: nil, session: nil)
    }
}

/// `account_emails`.
public protocol AccountEmailRepository: Sendable {
    /// Adds an email to an account. Throws `emailTaken` when the normalized email exists.
    func add(_ email: AccountEmail) async throws
    /// The emails of an account, oldest first.
    func emails(of accountID: AccountID) async throws -> [AccountEmail]
    /// The email row with this normalized address, or nil.
    func find(normalizedEmail: String) async throws -> AccountEmail?
}

/// `password_credentials`, with the failed sign-ins counted against each account's password read alongside
/// (`FailedGuessRepository` counts them).
public protocol PasswordCredentialRepository: Sendable {
    /// Sets or replaces the account's password hash.
    func upsert(_ credential: PasswordCredential) async throws
    /// The account's password, or nil when it has none.
    func credential(of accountID: AccountID) async throws -> PasswordCredential?
    /// What password sign-in needs for this normalized email, its failed password guesses included, or nil when no
    /// account with a password has it.
    func signInRecord(normalizedEmail: String) async throws -> PasswordSignInRecord?
    /// Stores a verified password sign-in's session, only while the account's stored hash is still `verifiedHash`
    /// (a password changed or removed meanwhile makes it false and writes nothing). With `replacement`, the stored
    /// hash becomes it in the same transaction. Returns whether the session was stored.
    func completeSignIn(_ session: AuthenticationSession, verifiedHash: String, replacement: String?, at now: Date)
        async throws -> Bool
    /// Removes the account's password, which stage ③ allows only once a passkey has signed in: throws `notFound`
    /// when the account has no password, and `lastSignInMethod` (reason `no_passkey` or `passkey_sign_in_required`)
    /// when the password is still its only proven way to sign in.
    func removePassword(of accountID: AccountID) async throws
}

/// Why a password cannot be removed, as the `reason` of a `lastSignInMethod` error.
public enum PasswordRemovalRefusal {
    /// The account has no passkey.
    public static let noPasskey = "no_passkey"
    /// The account has a passkey but has never signed in with one.
    public static let passkeySignInRequired = "passkey_sign_in_required"
}

/// `passkey_credentials`.
public protocol PasskeyCredentialRepository: Sendable {
    /// Stores a new passkey. Throws `credentialAlreadyRegistered` when the credential ID exists.
    func add(_ credential: PasskeyCredential) async throws
    /// The passkey with this credential ID and its account's user handle, or nil.
    func find(credentialID: CredentialID) async throws -> PasskeyCredentialWithOwner?
    /// An account's passkeys, oldest first.
    func credentials(of accountID: AccountID) async throws -> [PasskeyCredential]
    /// Renames an account's passkey; nil when the account has no such passkey.
    func rename(credentialID: CredentialID, of accountID: AccountID, to name: String) async throws
        -> PasskeyCredential?
    /// Removes an account's passkey unless it is the account's last way to sign in.
    /// Throws `notFound` or `lastSignInMethod`.
    func remove(credentialID: CredentialID, of accountID: AccountID) async throws
}

/// `passkey_authentication_challenges`, `passkey_credentials` and `authentication_sessions`: what a verified passkey
/// sign-in writes.
public protocol PasskeySignInRepository: Sendable {
    /// Consumes the record's challenge, stores its session and, when set, its usage, in one statement (one
    /// commit): all of it or nothing.
    func completeSignIn(_ record: PasskeySignInRecord) async throws -> PasskeySignInOutcome
    /// Moves `last_used_at` of each passkey forward to its time (never back), in one statement; returns how many
    /// rows changed.
    func recordLastUse(_ uses: [CredentialID: Date]) async throws -> Int
}

/// `authentication_sessions`.
public protocol AuthenticationSessionRepository: Sendable {
    /// Stores a new session.
    func add(_ session: AuthenticationSession) async throws
    /// The session with this ID, live or not, or nil (its token's digest is then compared by the caller).
    func find(id: SessionID) async throws -> AuthenticationSession?
    /// The account's sessions that are live at `now`, newest first.
    func liveSessions(of accountID: AccountID, at now: Date) async throws -> [AuthenticationSession]
    /// Revokes one of the account's sessions; false when it has no such live session.
    func revoke(id: SessionID, of accountID: AccountID, at now: Date) async throws -> Bool
    /// Deletes at most `limit` sessions that expired or were revoked before `cutoff`, skipping rows another
    /// transaction holds; returns how many. Safe to run from several replicas at once.
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int
}

/// `passkey_registration_challenges`.
public protocol RegistrationChallengeRepository: Sendable {
    func add(_ challenge: RegistrationChallenge) async throws
    /// Marks the challenge consumed in one atomic statement, if it belongs to `accountID`, is unconsumed and
    /// unexpired by the database's clock.
    func consume(id: ChallengeID, accountID: AccountID) async throws -> Consumption<RegistrationChallenge>
    /// Deletes at most `limit` challenges that expired or were consumed before `cutoff`, skipping rows another
    /// transaction holds; returns how many. Safe to run from several replicas at once.
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int
}

/// `passkey_authentication_challenges`.
public protocol AuthenticationChallengeRepository: Sendable {
    func add(_ challenge: AuthenticationChallenge) async throws
    /// Marks the challenge consumed in one atomic statement, if it is unconsumed and unexpired by the database's
    /// clock.
    func consume(id: ChallengeID) async throws -> Consumption<AuthenticationChallenge>
    /// Deletes at most `limit` challenges that expired or were consumed before `cutoff`, skipping rows another
    /// transaction holds; returns how many. Safe to run from several replicas at once.
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int
}

/// `passkey_account_registrations`.
public protocol AccountRegistrationRepository: Sendable {
    func add(_ registration: AccountRegistration) async throws
    /// Marks the registration consumed in one atomic statement, if it is unconsumed, uncompleted and unexpired by
    /// the database's clock.
    func consume(id: AccountRegistrationID) async throws -> Consumption<AccountRegistration>
    /// Deletes at most `limit` registrations that expired or were consumed before `cutoff`, skipping rows another
    /// transaction holds; returns how many. Safe to run from several replicas at once.
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int
}

/// Accounts by the ways they can sign in, as the database maintains them.
public struct SignInMethodCounts: Sendable, Equatable {
    public var passwordOnly = 0
    public var both = 0
    public var passkeyOnly = 0

    public init(passwordOnly: Int = 0, both: Int = 0, passkeyOnly: Int = 0) {
        self.passwordOnly = passwordOnly
        self.both = both
        self.passkeyOnly = passkeyOnly
    }
}

/// `sign_in_method_totals` and `sign_in_method_changes`: counts kept by triggers, read in a few rows.
public protocol SignInMethodCountRepository: Sendable {
    /// The current counts (folding the changes appended since the last read).
    func counts() async throws -> SignInMethodCounts
}
