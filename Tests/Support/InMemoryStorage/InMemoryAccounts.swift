import Domain
import Encoding
import Foundation
import Synchronization

/// `accounts`, `account_emails`, `password_credentials`, `failed_guesses`, `authentication_sessions`,
/// `passkey_registration_challenges` and `passkey_account_registrations` in memory, with the same rules as the
/// Postgres repositories, for unit tests of the use cases. Any operation can be made to fail.
///
/// Every table is in one state behind one lock, so the rules that span tables hold: an email belongs to one account,
/// a row's account exists, and an account is created whole or not at all. Passkeys are the `InMemoryPasskeys` given
/// at creation: creating a passkey account writes its passkey there (and its owner, for sign-in), and a summary
/// counts them. The lock order is always this store's, then the passkeys'.
///
/// The consuming statements decide expiry by `clock`, as Postgres decides by its `now()`; a test shares one clock
/// with the use cases under test.
public final class InMemoryAccounts: AccountRepository, AccountEmailRepository, PasswordCredentialRepository,
    FailedGuessRepository, AuthenticationSessionRepository, Sendable
{
    /// One repository method each, for `calls` and `failing`.
    public enum Operation: Hashable, Sendable, CaseIterable {
        case createPasswordAccount, createPasskeyAccount, account, enabledAccount, summary, rename
        case addEmail, emails, findEmail
        case upsertPassword, password, signInRecord, completePasswordSignIn, removePassword
        case countFailedGuess, claimGuess
        case addSession, findSession, liveSessions, revokeSession, deleteEndedSessions
        case addRegistrationChallenge, consumeRegistrationChallenge, deleteEndedRegistrationChallenges
        case addAccountRegistration, consumeAccountRegistration, deleteEndedAccountRegistrations
    }

    /// The tables, and what the store was asked.
    public struct State: Sendable {
        public var accounts: [AccountID: Account] = [:]
        /// Accounts an operator disabled (`accounts.disabled_at`).
        public var disabledAccounts: Set<AccountID> = []
        /// Keyed by normalized email, the unique column.
        public var emails: [String: AccountEmail] = [:]
        public var passwords: [AccountID: PasswordCredential] = [:]
        /// `failed_guesses`, by account and kind.
        public var failedGuesses: [FailedGuessKey: FailedGuesses] = [:]
        public var sessions: [SessionID: AuthenticationSession] = [:]
        public var registrationChallenges: [ChallengeID: RegistrationChallenge] = [:]
        public var accountRegistrations: [AccountRegistrationID: AccountRegistration] = [:]
        /// Calls made, in order, failed ones included.
        public var calls: [Operation] = []
        /// Operations that throw `failure`, before reading or writing anything, until removed.
        public var failing: Set<Operation> = []
    }

    public let state = Mutex(State())
    /// The passkey table account creation writes to and summaries count.
    public let passkeys: InMemoryPasskeys
    /// What a failing operation throws.
    public let failure: any Error
    let clock: @Sendable () -> Date

    public init(
        passkeys: InMemoryPasskeys = InMemoryPasskeys(), clock: @escaping @Sendable () -> Date = Date.init,
        failure: any Error = DomainError(.unavailable, "the database cannot be reached")
    ) {
        self.passkeys = passkeys
        self.clock = clock
        self.failure = failure
    }

    /// `passkey_registration_challenges`, in this store.
    public var registrationChallenges: InMemoryRegistrationChallenges { InMemoryRegistrationChallenges(store: self) }
    /// `passkey_account_registrations`, in this store.
    public var accountRegistrations: InMemoryAccountRegistrations { InMemoryAccountRegistrations(store: self) }

    /// Stores an account with no email, password or passkey, as a test's starting point.
    public func addAccount(_ account: Account) throws {
        try state.withLock { state in
            try passkeys.state.withLock { try Self.insert(account, into: &state, passkeys: &$0) }
        }
    }

    /// Records the call, throws when the operation is failing, and otherwise runs `body` under the lock.
    func perform<Result>(_ operation: Operation, _ body: (inout State) throws -> Result) throws -> Result {
        try state.withLock { state in
            state.calls.append(operation)
            if state.failing.contains(operation) { throw failure }
            return try body(&state)
        }
    }

    /// Like `perform`, with the passkey table locked too.
    private func performWithPasskeys<Result>(
        _ operation: Operation, _ body: (inout State, inout InMemoryPasskeys.State) throws -> Result
    ) throws -> Result {
        try perform(operation) { state in try passkeys.state.withLock { try body(&state, &$0) } }
    }

    // MARK: AccountRepository

    public func createPasswordAccount(_ account: Account, email: AccountEmail, password: PasswordCredential)
        async throws
    {
        try performWithPasskeys(.createPasswordAccount) { state, passkeys in
            // Checked in the order the transaction inserts, then written: a refused creation leaves nothing.
            var staged = state
            var stagedPasskeys = passkeys
            try Self.insert(account, into: &staged, passkeys: &stagedPasskeys)
            try Self.insert(email, into: &staged)
            try Self.insert(password, into: &staged)
            stagedPasskeys.passwordAccounts.insert(password.accountID)
            state = staged
            passkeys = stagedPasskeys
        }
    }

    /// Stores the session it is given with the account. This store has no table for email codes and their mail: a
    /// verification is refused (`InMemoryUnmodelledWrite`) rather than dropped.
    public func createPasskeyAccount(
        _ account: Account, email: AccountEmail?, credential: PasskeyCredential,
        completing registrationID: AccountRegistrationID, verification: EmailCodeDelivery?,
        session: AuthenticationSession?
    ) async throws {
        let now = clock()
        try performWithPasskeys(.createPasskeyAccount) { state, passkeys in
            guard verification == nil else { throw InMemoryUnmodelledWrite("email_codes") }
            guard var registration = state.accountRegistrations[registrationID], registration.consumedAt != nil,
                registration.completedAt == nil, registration.prospectiveAccountID == account.id
            else { throw DomainError(.challengeUnavailable, "the registration is unknown or already completed") }
            var staged = state
            var stagedPasskeys = passkeys
            registration.completedAt = now
            staged.accountRegistrations[registrationID] = registration
            try Self.insert(account, into: &staged, passkeys: &stagedPasskeys)
            if let email { try Self.insert(email, into: &staged) }
            guard stagedPasskeys.credentials[credential.credentialID] == nil else {
                throw DomainError(.credentialAlreadyRegistered, "that passkey is already registered")
            }
            guard staged.accounts[credential.accountID] != nil else {
                throw InMemoryConstraintViolation("passkey_credentials_account_id_fkey")
            }
            stagedPasskeys.credentials[credential.credentialID] = credential
            if let session { try Self.insert(session, into: &staged) }
            state = staged
            passkeys = stagedPasskeys
        }
    }

    public func account(id: AccountID) async throws -> Account? {
        try perform(.account) { $0.accounts[id] }
    }

    public func enabledAccount(id: AccountID) async throws -> Account? {
        try perform(.enabledAccount) { $0.disabledAccounts.contains(id) ? nil : $0.accounts[id] }
    }

    public func rename(id: AccountID, to displayName: String) async throws -> Account? {
        try perform(.rename) { state in
            guard var account = state.accounts[id] else { return nil }
            account.displayName = displayName
            state.accounts[id] = account
            return account
        }
    }

    public func summary(id: AccountID) async throws -> AccountSummary? {
        try performWithPasskeys(.summary) { state, passkeys in
            guard let account = state.accounts[id] else { return nil }
            return AccountSummary(
                account: account, emails: Self.emails(of: id, in: state).map(\.email),
                hasPassword: state.passwords[id] != nil,
                passkeyCount: passkeys.credentials.values.filter { $0.accountID == id }.count)
        }
    }

    // MARK: AccountEmailRepository

    public func add(_ email: AccountEmail) async throws {
        try perform(.addEmail) { try Self.insert(email, into: &$0) }
    }

    public func emails(of accountID: AccountID) async throws -> [AccountEmail] {
        try perform(.emails) { Self.emails(of: accountID, in: $0) }
    }

    public func find(normalizedEmail: String) async throws -> AccountEmail? {
        try perform(.findEmail) { $0.emails[normalizedEmail] }
    }

    // MARK: PasswordCredentialRepository

    public func upsert(_ credential: PasswordCredential) async throws {
        try perform(.upsertPassword) { state in
            guard var stored = state.passwords[credential.accountID] else {
                return try Self.insert(credential, into: &state)
            }
            // ON CONFLICT (account_id) DO UPDATE SET password_hash, updated_at: created_at stays.
            stored.passwordHash = credential.passwordHash
            stored.updatedAt = credential.updatedAt
            state.passwords[credential.accountID] = stored
        }
    }

    public func credential(of accountID: AccountID) async throws -> PasswordCredential? {
        try perform(.password) { $0.passwords[accountID] }
    }

    public func signInRecord(normalizedEmail: String) async throws -> PasswordSignInRecord? {
        try perform(.signInRecord) { state in
            guard let email = state.emails[normalizedEmail], let account = state.accounts[email.accountID],
                let password = state.passwords[account.id]
            else { return nil }
            return PasswordSignInRecord(
                accountID: account.id, displayName: account.displayName, passwordHash: password.passwordHash,
                failedGuesses: state.failedGuesses[FailedGuessKey(accountID: account.id, kind: .password)])
        }
    }

    public func countFailedGuess(_ charge: GuessCharge) async throws {
        try perform(.countFailedGuess) { state in _ = Self.add(charge, onlyWithRoom: false, to: &state) }
    }

    public func claimGuess(_ charge: GuessCharge) async throws -> Bool {
        try perform(.claimGuess) { state in Self.add(charge, onlyWithRoom: true, to: &state) }
    }

    /// As `failed_guesses`' one statement: the level drained to the charge's time (never back), plus one, unless
    /// `onlyWithRoom` and that would pass the capacity.
    static func add(_ charge: GuessCharge, onlyWithRoom: Bool, to state: inout State) -> Bool {
        let key = FailedGuessKey(accountID: charge.accountID, kind: charge.kind)
        let stored = state.failedGuesses[key]
        let level = charge.limit.level(of: stored, at: charge.now) + 1
        guard !onlyWithRoom || stored == nil || level <= charge.limit.fullLevel else { return false }
        state.failedGuesses[key] = FailedGuesses(
            level: level, updatedAt: max(stored?.updatedAt ?? charge.now, charge.now))
        return true
    }

    public func completeSignIn(
        _ session: AuthenticationSession, verifiedHash: String, replacement: String?, at now: Date
    ) async throws -> Bool {
        try perform(.completePasswordSignIn) { state in
            guard var password = state.passwords[session.accountID], password.passwordHash == verifiedHash else {
                return false
            }
            guard state.sessions[session.id] == nil else {
                throw InMemoryConstraintViolation("authentication_sessions_pkey")
            }
            if let replacement {
                password.passwordHash = replacement
                password.updatedAt = now
                state.passwords[session.accountID] = password
            }
            state.sessions[session.id] = session
            return true
        }
    }

    public func removePassword(of accountID: AccountID) async throws {
        try performWithPasskeys(.removePassword) { state, passkeys in
            let owned = passkeys.credentials.values.filter { $0.accountID == accountID }
            let now = clock()
            let passkeySession = state.sessions.values.contains { session in
                session.accountID == accountID && session.authenticationMethod == .passkey && session.isLive(at: now)
                    && owned.contains { $0.id == session.passkeyID }
            }
            try SignInMethods(
                hasPassword: state.passwords[accountID] != nil, passkeyCount: owned.count,
                passkeySignedIn: passkeySession || owned.contains(where: { $0.lastUsedAt != nil })
            ).checkPasswordRemoval()
            state.passwords[accountID] = nil
            passkeys.passwordAccounts.remove(accountID)
        }
    }

    // MARK: AuthenticationSessionRepository

    public func add(_ session: AuthenticationSession) async throws {
        try perform(.addSession) { try Self.insert(session, into: &$0) }
    }

    public func find(id: SessionID) async throws -> AuthenticationSession? {
        try perform(.findSession) { $0.sessions[id] }
    }

    public func liveSessions(of accountID: AccountID, at now: Date) async throws -> [AuthenticationSession] {
        try perform(.liveSessions) { state in
            state.sessions.values
                .filter { $0.accountID == accountID && $0.revokedAt == nil && $0.expiresAt > now }
                .sorted {
                    // ORDER BY created_at DESC, id (uuids compare as their bytes, as the text form does)
                    $0.createdAt != $1.createdAt
                        ? $0.createdAt > $1.createdAt : $0.id.rawValue.lowercaseText < $1.id.rawValue.lowercaseText
                }
        }
    }

    public func revoke(id: SessionID, of accountID: AccountID, at now: Date) async throws -> Bool {
        try perform(.revokeSession) { state in
            guard var session = state.sessions[id], session.accountID == accountID, session.revokedAt == nil,
                session.expiresAt > now
            else { return false }
            session.revokedAt = now
            state.sessions[id] = session
            return true
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try perform(.deleteEndedSessions) { state in
            let ended = state.sessions.values.filter { session in
                session.expiresAt < cutoff || session.revokedAt.map { $0 < cutoff } ?? false
            }.prefix(limit)
            for session in ended { state.sessions[session.id] = nil }
            return ended.count
        }
    }

    // MARK: Rows, with the schema's constraints

    private static func insert(_ account: Account, into state: inout State, passkeys: inout InMemoryPasskeys.State)
        throws
    {
        guard state.accounts[account.id] == nil else { throw InMemoryConstraintViolation("accounts_pkey") }
        guard !state.accounts.values.contains(where: { $0.userHandle == account.userHandle }) else {
            throw InMemoryConstraintViolation("accounts_user_handle_key")
        }
        state.accounts[account.id] = account
        passkeys.accounts[account.id] = (account.userHandle, account.displayName)
    }

    private static func insert(_ email: AccountEmail, into state: inout State) throws {
        guard state.accounts[email.accountID] != nil else {
            throw InMemoryConstraintViolation("account_emails_account_id_fkey")
        }
        guard state.emails[email.normalizedEmail] == nil else {
            throw DomainError(.emailTaken, "that email address already belongs to an account")
        }
        state.emails[email.normalizedEmail] = email
    }

    private static func insert(_ password: PasswordCredential, into state: inout State) throws {
        guard state.accounts[password.accountID] != nil else {
            throw InMemoryConstraintViolation("password_credentials_account_id_fkey")
        }
        guard state.passwords[password.accountID] == nil else {
            throw InMemoryConstraintViolation("password_credentials_pkey")
        }
        state.passwords[password.accountID] = password
    }

    private static func insert(_ session: AuthenticationSession, into state: inout State) throws {
        guard state.accounts[session.accountID] != nil else {
            throw InMemoryConstraintViolation("authentication_sessions_account_id_fkey")
        }
        guard state.sessions[session.id] == nil else {
            throw InMemoryConstraintViolation("authentication_sessions_pkey")
        }
        guard session.expiresAt > session.createdAt else {
            throw InMemoryConstraintViolation("authentication_sessions_lifetime_check")
        }
        state.sessions[session.id] = session
    }

    /// ORDER BY created_at, email.
    private static func emails(of accountID: AccountID, in state: State) -> [AccountEmail] {
        state.emails.values.filter { $0.accountID == accountID }.sorted {
            $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : $0.email < $1.email
        }
    }
}

/// A write the schema refuses with a constraint the Postgres repositories do not translate into a `DomainError`
/// (a foreign key, a duplicate key, a check): a bug in the caller, which a real database rejects too.
public struct InMemoryConstraintViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Postgres name of the violated constraint.
    public let constraint: String

    public init(_ constraint: String) { self.constraint = constraint }

    public var description: String { "violates \(constraint)" }
}

/// A write to a table the in-memory stores do not model: refused, so that no test passes on a write that never
/// happened.
public struct InMemoryUnmodelledWrite: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Postgres table the write was for.
    public let table: String

    public init(_ table: String) { self.table = table }

    public var description: String { "\(table) is not modelled in memory" }
}

/// The key of `failed_guesses`: an account and a kind.
public struct FailedGuessKey: Hashable, Sendable {
    public var accountID: AccountID
    public var kind: GuessKind

    public init(accountID: AccountID, kind: GuessKind) {
        self.accountID = accountID
        self.kind = kind
    }
}
