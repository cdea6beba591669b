import Domain
import Foundation
import Synchronization

/// `email_codes`, `recovery_codes`, `email_outbox`, `recovery_attempt_decoys` and the verified state of
/// `account_emails` in memory, over an `InMemoryAccounts` (its accounts, emails, sessions and failed guesses), with
/// the rules of the Postgres repository: at most one live code per address and purpose, an attempt claims its place
/// in the account's failed code guesses whatever the code turns out to be, a proof is consumed once. Any operation
/// can be made to fail.
///
/// Lock order: this store's, then the accounts', then the passkeys'.
public final class InMemoryRecovery: AccountRecoveryRepository, Sendable {
    /// One repository method each, for `calls` and `failing`.
    public enum Operation: Hashable, Sendable, CaseIterable {
        case target, firstEmail, issue, attempt, countDecoyAttempt, completeVerification, unusedRecoveryCodes
        case replaceRecoveryCodes, startRecoverySession, deleteEndedCodes
    }

    /// A stored recovery code: its digest, its account, and when it was used.
    public struct StoredRecoveryCode: Hashable, Sendable {
        public var accountID: AccountID
        public var digest: [UInt8]
        public var usedAt: Date?
    }

    /// The tables, and what the store was asked.
    public struct State: Sendable {
        /// `account_emails.verified_at`, by email row.
        public var verifiedEmails: [UUID: Date] = [:]
        public var codes: [UUID: EmailCode] = [:]
        /// `email_codes.consumed_at`.
        public var consumedCodes: [UUID: Date] = [:]
        /// `email_outbox`, in the order messages were queued.
        public var outbox: [OutboxMessage] = []
        public var recoveryCodes: [UUID: StoredRecoveryCode] = [:]
        /// `recovery_attempt_decoys`: attempts counted by slot.
        public var decoyAttempts: [Int: Int] = [:]
        public var calls: [Operation] = []
        /// Operations that throw `failure`, before reading or writing anything, until removed.
        public var failing: Set<Operation> = []
    }

    public let state = Mutex(State())
    public let accounts: InMemoryAccounts
    public let failure: any Error
    let clock: @Sendable () -> Date

    public init(
        accounts: InMemoryAccounts, clock: @escaping @Sendable () -> Date,
        failure: any Error = DomainError(.unavailable, "the database cannot be reached")
    ) {
        self.accounts = accounts
        self.clock = clock
        self.failure = failure
    }

    /// Marks an email row verified, as a test's starting point.
    public func markVerified(emailID: UUID) {
        let now = clock()
        state.withLock { $0.verifiedEmails[emailID] = now }
    }

    private func perform<Result>(
        _ operation: Operation, _ body: (inout State, inout InMemoryAccounts.State) throws -> Result
    ) throws -> Result {
        try state.withLock { state in
            state.calls.append(operation)
            if state.failing.contains(operation) { throw failure }
            return try accounts.state.withLock { try body(&state, &$0) }
        }
    }

    private func isLive(_ code: EmailCode, in state: State, at now: Date) -> Bool {
        state.consumedCodes[code.id] == nil && code.expiresAt > now
    }

    private static func target(_ email: AccountEmail, in state: State, accounts: InMemoryAccounts.State)
        -> RecoveryTarget?
    {
        guard let account = accounts.accounts[email.accountID] else { return nil }
        return RecoveryTarget(
            accountID: account.id, emailID: email.id, address: email.email,
            verified: state.verifiedEmails[email.id] != nil, displayName: account.displayName,
            failedCodeGuesses: accounts.failedGuesses[FailedGuessKey(accountID: account.id, kind: .code)])
    }

    public func target(normalizedEmail: String) async throws -> RecoveryTarget? {
        try perform(.target) { state, accounts in
            accounts.emails[normalizedEmail].flatMap { Self.target($0, in: state, accounts: accounts) }
        }
    }

    public func firstEmail(of accountID: AccountID) async throws -> RecoveryTarget? {
        try perform(.firstEmail) { state, accounts in
            accounts.emails.values.filter { $0.accountID == accountID }
                .min { $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : $0.email < $1.email }
                .flatMap { Self.target($0, in: state, accounts: accounts) }
        }
    }

    public func issue(_ delivery: EmailCodeDelivery) async throws {
        let now = clock()
        try perform(.issue) { state, accounts in
            let code = delivery.code
            guard accounts.accounts[code.accountID] != nil else {
                throw InMemoryConstraintViolation("email_codes_account_id_fkey")
            }
            guard state.codes[code.id] == nil else { throw InMemoryConstraintViolation("email_codes_pkey") }
            for earlier in state.codes.values
            where earlier.emailID == code.emailID && earlier.purpose == code.purpose
                && isLive(earlier, in: state, at: now)
            {
                state.consumedCodes[earlier.id] = now
            }
            state.codes[code.id] = code
            state.outbox.append(delivery.message)
        }
    }

    public func attempt(emailID: UUID, purpose: EmailCodePurpose, maximumAttempts: Int, claiming charge: GuessCharge)
        async throws -> EmailCode?
    {
        let now = clock()
        return try perform(.attempt) { state, accounts in
            // The claim runs whatever the code turns out to be; without room the code is not tried.
            guard InMemoryAccounts.add(charge, onlyWithRoom: true, to: &accounts) else { return nil }
            guard
                var newest = state.codes.values
                    .filter({ $0.emailID == emailID && $0.purpose == purpose && isLive($0, in: state, at: now) })
                    .max(by: { $0.createdAt < $1.createdAt }),
                newest.attempts < maximumAttempts
            else { return nil }
            newest.attempts += 1
            state.codes[newest.id] = newest
            return newest
        }
    }

    public func countDecoyAttempt(slot: Int) async throws {
        try perform(.countDecoyAttempt) { state, _ in state.decoyAttempts[slot & 63, default: 0] += 1 }
    }

    public func completeVerification(codeID: UUID) async throws -> Bool {
        let now = clock()
        return try perform(.completeVerification) { state, _ in
            guard let code = state.codes[codeID], code.purpose == .verification, isLive(code, in: state, at: now) else {
                return false
            }
            state.consumedCodes[codeID] = now
            if state.verifiedEmails[code.emailID] == nil { state.verifiedEmails[code.emailID] = now }
            return true
        }
    }

    public func unusedRecoveryCodes(of accountID: AccountID) async throws -> [RecoveryCodeRecord] {
        try perform(.unusedRecoveryCodes) { state, _ in
            state.recoveryCodes.filter { $0.value.accountID == accountID && $0.value.usedAt == nil }
                .map { RecoveryCodeRecord(id: $0.key, codeDigest: $0.value.digest) }
        }
    }

    public func replaceRecoveryCodes(of accountID: AccountID, digests: [[UInt8]], at now: Date) async throws {
        try perform(.replaceRecoveryCodes) { state, accounts in
            guard accounts.accounts[accountID] != nil else {
                throw InMemoryConstraintViolation("recovery_codes_account_id_fkey")
            }
            state.recoveryCodes = state.recoveryCodes.filter { $0.value.accountID != accountID }
            for digest in digests {
                state.recoveryCodes[UUID()] = StoredRecoveryCode(accountID: accountID, digest: digest, usedAt: nil)
            }
        }
    }

    public func startRecoverySession(
        _ session: AuthenticationSession, consuming proof: RecoveryProof, revokingOtherSessions: Bool
    ) async throws -> Int? {
        let now = clock()
        return try perform(.startRecoverySession) { state, accounts in
            switch proof {
            case .emailCode(let id):
                guard let code = state.codes[id], code.accountID == session.accountID, isLive(code, in: state, at: now)
                else { return nil }
                state.consumedCodes[id] = now
            case .recoveryCode(let id):
                guard var code = state.recoveryCodes[id], code.accountID == session.accountID, code.usedAt == nil else {
                    return nil
                }
                code.usedAt = now
                state.recoveryCodes[id] = code
            }
            var revoked = 0
            if revokingOtherSessions {
                for var other in accounts.sessions.values
                where other.accountID == session.accountID && other.revokedAt == nil && other.expiresAt > now {
                    other.revokedAt = now
                    accounts.sessions[other.id] = other
                    revoked += 1
                }
            }
            guard accounts.sessions[session.id] == nil else {
                throw InMemoryConstraintViolation("authentication_sessions_pkey")
            }
            accounts.sessions[session.id] = session
            return revoked
        }
    }

    public func deleteEndedCodes(before cutoff: Date, limit: Int) async throws -> Int {
        try perform(.deleteEndedCodes) { state, _ in
            let ended = state.codes.values.filter { code in
                code.expiresAt < cutoff || state.consumedCodes[code.id].map { $0 < cutoff } ?? false
            }.prefix(limit)
            for code in ended {
                state.codes[code.id] = nil
                state.consumedCodes[code.id] = nil
            }
            return ended.count
        }
    }
}
