import Domain
import Encoding
import Foundation
import Synchronization

/// `passkey_credentials`, `accounts` (user handles and names), `passkey_authentication_challenges` and
/// `authentication_sessions` in memory, with the same rules as the Postgres repositories, for unit tests of the use
/// cases. Any operation can be made to fail.
public final class InMemoryPasskeys: PasskeyCredentialRepository, PasskeySignInRepository,
    AuthenticationChallengeRepository, Sendable
{
    public enum Operation: Hashable, Sendable {
        case find, completeSignIn, recordLastUse, consumeChallenge
    }

    public struct State: Sendable {
        public var accounts: [AccountID: (handle: UserHandle, displayName: String)] = [:]
        public var credentials: [CredentialID: PasskeyCredential] = [:]
        public var sessions: [AuthenticationSession] = []
        public var challenges: [ChallengeID: AuthenticationChallenge] = [:]
        /// Calls made, in order.
        public var calls: [Operation] = []
        /// Operations that throw `failure` until removed.
        public var failing: Set<Operation> = []
        /// How many more `completeSignIn` calls find the row moved on (and write nothing), as after a concurrent
        /// sign-in on another replica.
        public var movedOnCompletions = 0
        /// The accounts that have a password (kept by `InMemoryAccounts`, which stores the passwords).
        public var passwordAccounts: Set<AccountID> = []
        /// The audit events the sign-in statement stores with what it writes, in order, as the Postgres repository
        /// stores them in `audit_events`.
        public var auditEvents: [StoredAuditEvent] = []
    }

    /// An audit event as the sign-in statement stores it: its type (`audit.sign_in.succeeded`, ...), account and
    /// detail.
    public struct StoredAuditEvent: Hashable, Sendable {
        public var type: String
        public var accountID: AccountID
        public var detail: [String: String]

        public init(type: String, accountID: AccountID, detail: [String: String]) {
            self.type = type
            self.accountID = accountID
            self.detail = detail
        }
    }

    public let state = Mutex(State())
    public let failure: any Error

    public init(failure: any Error = DomainError(.unavailable, "the database cannot be reached")) {
        self.failure = failure
    }

    public func addAccount(_ id: AccountID, handle: UserHandle, displayName: String) {
        state.withLock { $0.accounts[id] = (handle, displayName) }
    }

    private func enter(_ operation: Operation) throws {
        let fails = state.withLock { state -> Bool in
            state.calls.append(operation)
            return state.failing.contains(operation)
        }
        if fails { throw failure }
    }

    public func add(_ credential: PasskeyCredential) async throws {
        try state.withLock { state in
            guard state.credentials[credential.credentialID] == nil else {
                throw DomainError(.credentialAlreadyRegistered, "that passkey is already registered")
            }
            state.credentials[credential.credentialID] = credential
        }
    }

    public func find(credentialID: CredentialID) async throws -> PasskeyCredentialWithOwner? {
        try enter(.find)
        return state.withLock { state in
            guard let credential = state.credentials[credentialID], let owner = state.accounts[credential.accountID]
            else { return nil }
            return PasskeyCredentialWithOwner(
                credential: credential, userHandle: owner.handle, displayName: owner.displayName)
        }
    }

    public func credentials(of accountID: AccountID) async throws -> [PasskeyCredential] {
        state.withLock {
            $0.credentials.values.filter { $0.accountID == accountID }.sorted { $0.createdAt < $1.createdAt }
        }
    }

    public func rename(credentialID: CredentialID, of accountID: AccountID, to name: String) async throws
        -> PasskeyCredential?
    {
        state.withLock { state in
            guard var credential = state.credentials[credentialID], credential.accountID == accountID else {
                return nil
            }
            credential.name = name
            state.credentials[credentialID] = credential
            return credential
        }
    }

    public func remove(credentialID: CredentialID, of accountID: AccountID) async throws {
        try state.withLock { state in
            guard let credential = state.credentials[credentialID], credential.accountID == accountID else {
                throw DomainError(.notFound, "no such passkey")
            }
            try SignInMethods(
                hasPassword: state.passwordAccounts.contains(accountID),
                passkeyCount: state.credentials.values.filter({ $0.accountID == accountID }).count
            ).checkPasskeyRemoval()
            state.credentials[credentialID] = nil
        }
    }

    public func completeSignIn(_ record: PasskeySignInRecord) async throws -> PasskeySignInOutcome {
        try enter(.completeSignIn)
        return state.withLock { state in
            if state.movedOnCompletions > 0 {
                state.movedOnCompletions -= 1
                return .passkeyChanged
            }
            guard var credential = state.credentials[record.credentialID],
                credential.accountID == record.session.accountID, credential.signCount == record.expectedSignCount,
                credential.backedUp == record.expectedBackedUp,
                credential.backupEligible == record.expectedBackupEligible,
                let owner = state.accounts[credential.accountID]
            else { return .passkeyChanged }
            guard var challenge = state.challenges[record.challengeID], challenge.consumedAt == nil,
                challenge.expiresAt > Date(), challenge.challenge == record.challenge
            else { return .challengeUnavailable }
            challenge.consumedAt = Date()
            state.challenges[record.challengeID] = challenge
            let credentialID = String(Base64URL.encode(record.credentialID.bytes).prefix(200))
            if let usage = record.usage {
                let before = credential
                credential.signCount = usage.signCount
                credential.backedUp = usage.backedUp
                credential.backupEligible = record.backupEligibleAfter
                credential.cloneWarning = credential.cloneWarning || usage.cloneWarning
                credential.lastUsedAt = usage.usedAt
                state.credentials[record.credentialID] = credential
                if usage.cloneWarning {
                    state.auditEvents.append(
                        StoredAuditEvent(
                            type: "audit.passkey.clone_warning", accountID: credential.accountID,
                            detail: ["credential.id": credentialID]))
                }
                if record.changesBackupEligibility {
                    state.auditEvents.append(
                        StoredAuditEvent(
                            type: "audit.passkey.backup_state_changed", accountID: credential.accountID,
                            detail: [
                                "credential.id": credentialID,
                                "backup_eligible.old": String(before.backupEligible),
                                "backup_eligible.new": String(credential.backupEligible),
                                "backed_up.old": String(before.backedUp), "backed_up.new": String(credential.backedUp),
                            ]))
                }
            }
            state.sessions.append(record.session)
            state.auditEvents.append(
                StoredAuditEvent(
                    type: "audit.sign_in.succeeded", accountID: credential.accountID,
                    detail: ["method": "passkey", "session.id": record.session.id.description]))
            return .signedIn(displayName: owner.displayName)
        }
    }

    public func add(_ challenge: AuthenticationChallenge) async throws {
        state.withLock { $0.challenges[challenge.id] = challenge }
    }

    public func consume(id: ChallengeID) async throws -> Consumption<AuthenticationChallenge> {
        try enter(.consumeChallenge)
        return state.withLock { state in
            guard var challenge = state.challenges[id], challenge.consumedAt == nil, challenge.expiresAt > Date() else {
                return .unavailable
            }
            challenge.consumedAt = Date()
            state.challenges[id] = challenge
            return .consumed(challenge)
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        state.withLock { state in
            let expired = state.challenges.values.filter { row in
                row.expiresAt < cutoff || row.consumedAt.map { $0 < cutoff } ?? false
            }.prefix(limit).map(\.id)
            for id in expired { state.challenges[id] = nil }
            return expired.count
        }
    }

    public func recordLastUse(_ uses: [CredentialID: Date]) async throws -> Int {
        try enter(.recordLastUse)
        return state.withLock { state in
            var written = 0
            for (id, date) in uses {
                guard var credential = state.credentials[id], credential.lastUsedAt.map({ $0 < date }) ?? true else {
                    continue
                }
                credential.lastUsedAt = date
                state.credentials[id] = credential
                written += 1
            }
            return written
        }
    }
}
