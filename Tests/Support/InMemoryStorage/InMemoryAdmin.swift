import AdminAccess
import Domain
import Foundation
import Observability
import Synchronization

/// The admin API's storage (`admin_tokens` and the operators' reads and changes of accounts) in memory, over an
/// `InMemoryRecovery` and the accounts and passkeys beneath it, with the rules of `PostgresAdminRepository`: a
/// session revocation touches only live sessions, removing a passkey keeps the last way to sign in unless
/// overridden, disabling revokes the live sessions at once and twice changes nothing. Each change notes the actor
/// the call ran as (`AuditContext.current`), as the audit row written in its transaction would. Any operation can
/// be made to fail.
///
/// Lock order: this store's, then the recovery store's, the accounts', the passkeys'.
public final class InMemoryAdmin: AdminRepository, Sendable {
    /// One repository method each, for `calls` and `failing`.
    public enum Operation: Hashable, Sendable, CaseIterable {
        case token, recordUse, findAccounts, accountDetail, listAccounts, revokeSessions, removePasskey, auditEvents
        case eraseAccount, setDisabled, mailTargets
    }

    /// The tables, and what the store was asked.
    public struct State: Sendable {
        /// `admin_tokens`, by the digest of their secret.
        public var tokens: [[UInt8]: AdminToken] = [:]
        /// `audit_events` as the tests stored them.
        public var events: [StoredAuditEvent] = []
        public var calls: [Operation] = []
        /// The actor each call ran as, in order.
        public var actors: [(Operation, AuditActor)] = []
        /// Operations that throw `failure`, before reading or writing anything, until removed.
        public var failing: Set<Operation> = []
    }

    public let state = Mutex(State())
    public let recovery: InMemoryRecovery
    public let failure: any Error

    public init(
        recovery: InMemoryRecovery, failure: any Error = DomainError(.unavailable, "the database cannot be reached")
    ) {
        self.recovery = recovery
        self.failure = failure
    }

    /// Stores a token whose secret has `digest`, as a test's starting point.
    public func add(_ token: AdminToken, digest: [UInt8]) {
        state.withLock { $0.tokens[digest] = token }
    }

    /// Records the call and its actor, throws when the operation is failing, and otherwise runs `body` with every
    /// table locked.
    private func perform<Result>(
        _ operation: Operation,
        _ body: (inout State, inout InMemoryRecovery.State, inout InMemoryAccounts.State, inout InMemoryPasskeys.State)
            throws -> Result
    ) throws -> Result {
        try state.withLock { state in
            state.calls.append(operation)
            state.actors.append((operation, AuditContext.current.actor))
            if state.failing.contains(operation) { throw failure }
            return try recovery.state.withLock { recoveryState in
                try recovery.accounts.state.withLock { accounts in
                    try recovery.accounts.passkeys.state.withLock { passkeys in
                        try body(&state, &recoveryState, &accounts, &passkeys)
                    }
                }
            }
        }
    }

    public func token(digest: [UInt8]) async throws -> AdminToken? {
        try perform(.token) { state, _, _, _ in state.tokens[digest] }
    }

    public func recordUse(of tokenID: String, at now: Date) async throws {
        try perform(.recordUse) { state, _, _, _ in
            for (digest, var token) in state.tokens where token.id == tokenID {
                token.lastUsedAt = now
                state.tokens[digest] = token
            }
        }
    }

    private static func emails(of accountID: AccountID, in accounts: InMemoryAccounts.State) -> [AccountEmail] {
        accounts.emails.values.filter { $0.accountID == accountID }.sorted {
            $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : $0.email < $1.email
        }
    }

    private static func summary(
        _ accountID: AccountID, accounts: InMemoryAccounts.State, passkeys: InMemoryPasskeys.State
    ) -> AdminAccountSummaryRecord? {
        guard let account = accounts.accounts[accountID] else { return nil }
        return AdminAccountSummaryRecord(
            account: account, emails: emails(of: accountID, in: accounts).map(\.email),
            hasPassword: accounts.passwords[accountID] != nil,
            passkeyCount: passkeys.credentials.values.filter { $0.accountID == accountID }.count,
            disabledAt: accounts.disabledAccounts.contains(accountID) ? account.createdAt : nil)
    }

    public func findAccounts(_ lookup: AccountLookup, limit: Int) async throws -> [AdminAccountSummaryRecord] {
        try perform(.findAccounts) { _, _, accounts, passkeys in
            let id: AccountID?
            switch lookup {
            case .email(let normalized): id = accounts.emails[normalized]?.accountID
            case .accountID(let accountID): id = accountID
            case .credentialID(let credentialID): id = passkeys.credentials[credentialID]?.accountID
            case .externalID: id = nil  // imported accounts are not modelled in memory
            }
            guard let id, let record = Self.summary(id, accounts: accounts, passkeys: passkeys) else { return [] }
            return Array([record].prefix(limit))
        }
    }

    public func accountDetail(_ accountID: AccountID, at now: Date) async throws -> AdminAccountRecord? {
        try perform(.accountDetail) { _, recoveryState, accounts, passkeys in
            guard let account = accounts.accounts[accountID] else { return nil }
            return AdminAccountRecord(
                account: account,
                emails: Self.emails(of: accountID, in: accounts).map {
                    (address: $0.email, verified: recoveryState.verifiedEmails[$0.id] != nil)
                },
                hasPassword: accounts.passwords[accountID] != nil,
                passkeys: passkeys.credentials.values.filter { $0.accountID == accountID }
                    .sorted { $0.createdAt < $1.createdAt },
                sessions: accounts.sessions.values.filter { $0.accountID == accountID && $0.isLive(at: now) }
                    .sorted { $0.createdAt > $1.createdAt },
                recoveryCodesRemaining: recoveryState.recoveryCodes.values
                    .filter { $0.accountID == accountID && $0.usedAt == nil }.count,
                disabledAt: accounts.disabledAccounts.contains(accountID) ? account.createdAt : nil)
        }
    }

    public func listAccounts(_ listing: AccountListing) async throws -> [AdminAccountSummaryRecord] {
        try perform(.listAccounts) { _, _, accounts, passkeys in
            accounts.accounts.keys.compactMap { Self.summary($0, accounts: accounts, passkeys: passkeys) }
                .filter { record in
                    listing.hasPassword.map { $0 == record.hasPassword } ?? true
                        && listing.hasPasskey.map { $0 == (record.passkeyCount > 0) } ?? true
                        && listing.disabled.map { $0 == (record.disabledAt != nil) } ?? true
                }
                .sorted { $0.account.createdAt < $1.account.createdAt }
                .prefix(listing.limit).map { $0 }
        }
    }

    public func revokeSessions(of accountID: AccountID, sessionID: SessionID?, at now: Date) async throws -> Int {
        try perform(.revokeSessions) { _, _, accounts, _ in
            var revoked = 0
            for var session in accounts.sessions.values
            where session.accountID == accountID && session.isLive(at: now)
                && (sessionID == nil || session.id == sessionID)
            {
                session.revokedAt = now
                accounts.sessions[session.id] = session
                revoked += 1
            }
            return revoked
        }
    }

    public func removePasskey(_ credentialID: CredentialID, of accountID: AccountID, overridingLastMethod: Bool)
        async throws
    {
        try perform(.removePasskey) { _, _, accounts, passkeys in
            guard let credential = passkeys.credentials[credentialID], credential.accountID == accountID else {
                throw DomainError(.notFound, "no such passkey")
            }
            if !overridingLastMethod {
                try SignInMethods(
                    hasPassword: accounts.passwords[accountID] != nil,
                    passkeyCount: passkeys.credentials.values.filter { $0.accountID == accountID }.count
                ).checkPasskeyRemoval()
            }
            passkeys.credentials[credentialID] = nil
        }
    }

    public func auditEvents(_ query: AuditEventQuery) async throws -> [StoredAuditEvent] {
        try perform(.auditEvents) { state, _, _, _ in
            state.events
                .filter { event in
                    (query.accountID == nil || event.accountID == query.accountID)
                        && (query.types.isEmpty || query.types.contains(event.type))
                        && query.before.map { event.id < $0 } ?? true
                }
                .sorted { $0.id > $1.id }.prefix(query.limit).map { $0 }
        }
    }

    public func eraseAccount(_ accountID: AccountID) async throws -> Bool {
        try perform(.eraseAccount) { _, recoveryState, accounts, passkeys in
            guard accounts.accounts.removeValue(forKey: accountID) != nil else { return false }
            let emailIDs = Set(accounts.emails.values.filter { $0.accountID == accountID }.map(\.id))
            accounts.emails = accounts.emails.filter { $0.value.accountID != accountID }
            accounts.passwords[accountID] = nil
            accounts.sessions = accounts.sessions.filter { $0.value.accountID != accountID }
            accounts.disabledAccounts.remove(accountID)
            passkeys.credentials = passkeys.credentials.filter { $0.value.accountID != accountID }
            passkeys.accounts[accountID] = nil
            recoveryState.codes = recoveryState.codes.filter { $0.value.accountID != accountID }
            recoveryState.recoveryCodes = recoveryState.recoveryCodes.filter { $0.value.accountID != accountID }
            for id in emailIDs { recoveryState.verifiedEmails[id] = nil }
            return true
        }
    }

    public func setDisabled(_ accountID: AccountID, disabled: Bool, at now: Date) async throws
        -> (changed: Bool, revoked: Int)?
    {
        try perform(.setDisabled) { _, _, accounts, _ in
            guard accounts.accounts[accountID] != nil else { return nil }
            guard disabled else { return (accounts.disabledAccounts.remove(accountID) != nil, 0) }
            guard accounts.disabledAccounts.insert(accountID).inserted else { return (false, 0) }
            var revoked = 0
            for var session in accounts.sessions.values where session.accountID == accountID && session.isLive(at: now)
            {
                session.revokedAt = now
                accounts.sessions[session.id] = session
                revoked += 1
            }
            return (true, revoked)
        }
    }

    public func mailTargets(of accountID: AccountID) async throws -> (disabled: Bool, targets: [RecoveryTarget])? {
        try perform(.mailTargets) { _, recoveryState, accounts, _ in
            guard let account = accounts.accounts[accountID] else { return nil }
            return (
                accounts.disabledAccounts.contains(accountID),
                Self.emails(of: accountID, in: accounts).map {
                    RecoveryTarget(
                        accountID: accountID, emailID: $0.id, address: $0.email,
                        verified: recoveryState.verifiedEmails[$0.id] != nil, displayName: account.displayName)
                }
            )
        }
    }
}
