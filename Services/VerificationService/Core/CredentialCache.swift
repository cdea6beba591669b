import Domain
import Synchronization

/// Credentials this replica has used recently, so a sign-in can verify without first reading the row.
///
/// What a sign-in reads from a cached entry never changes for a stored credential (its public key, account, user
/// handle and backup eligibility), except the sign count and backup state, and those are checked again by the
/// database: the session is inserted only from the passkey's row `WHERE sign_count = … AND backed_up = …` (the
/// state the check used; `PasskeySignInRepository`). When another replica moved them, or the passkey was removed,
/// nothing is written and the sign-in starts over from a fresh read. So the cache can be stale without ever
/// deciding anything. Bounded: when full it is cleared and refilled by use.
public final class CredentialCache: Sendable {
    private let entries = Mutex<[CredentialID: PasskeyCredentialWithOwner]>([:])
    public let capacity: Int

    public init(capacity: Int = 50_000) { self.capacity = capacity }

    public func credential(_ id: CredentialID) -> PasskeyCredentialWithOwner? {
        entries.withLock { $0[id] }
    }

    public func store(_ credential: PasskeyCredentialWithOwner) {
        entries.withLock { entries in
            if entries.count >= capacity && entries[credential.credential.credentialID] == nil {
                entries.removeAll(keepingCapacity: true)
            }
            entries[credential.credential.credentialID] = credential
        }
    }

    public func remove(_ id: CredentialID) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    public var count: Int { entries.withLock { $0.count } }
}
