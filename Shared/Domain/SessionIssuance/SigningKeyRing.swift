import AccessTokens
import Crypto
import Domain
import Encoding
import Foundation
import Synchronization

/// The signing keys one process holds: the stored keys it last loaded, their private halves opened once, and
/// their public halves ready to verify. A loader calls ``load(_:)`` with what the repository holds (at start and
/// then every few seconds); signing and verifying read the latest load without waiting on the database.
public final class SigningKeyRing: Sendable {
    struct Entry: Sendable {
        let stored: StoredSigningKey
        /// Nil for a key sealed under another key-encryption key: it still verifies, but never signs here.
        let signer: PrivateKey?
        /// The public key set up once for the key's one signature scheme.
        let verifier: PreparedVerifier
        /// `base64url(header) "."`, the same for every token the key signs.
        let encodedHeader: [UInt8]
    }

    /// What the last load left: every key by ID, and the keys this process can sign with, newest activation
    /// first, so that choosing the signing key is a scan of one or two entries.
    struct State: Sendable {
        var entries: [String: Entry] = [:]
        var signable: [Entry] = []
    }

    /// The rules of the keys' lives.
    public let schedule: SigningKeySchedule
    /// What opens the stored private keys and seals new ones.
    public let encryption: KeyEncryptionKey
    private let state = Mutex(State())
    private let loaded = Atomic<Bool>(false)

    /// A ring with no keys yet, opening keys with `encryption`.
    public init(schedule: SigningKeySchedule, encryption: KeyEncryptionKey) {
        self.schedule = schedule
        self.encryption = encryption
    }

    /// Replaces the ring's keys with `stored`: keys seen before keep their opened halves, new ones are opened. A key
    /// that does not open with this process's key-encryption key (sealed under an earlier one that was lost or
    /// replaced) keeps verifying the tokens it signed but never signs; its ID is returned so the caller can say so.
    @discardableResult
    public func load(_ stored: [StoredSigningKey]) throws -> [String] {
        let known = state.withLock { $0.entries }
        var next = State()
        var unopened: [String] = []
        for key in stored {
            let entry: Entry
            if let seen = known[key.keyID], seen.stored.sealedPrivateKey == key.sealedPrivateKey {
                entry = Entry(
                    stored: key, signer: seen.signer, verifier: seen.verifier, encodedHeader: seen.encodedHeader)
            } else {
                entry = Entry(
                    stored: key, signer: try? encryption.open(key),
                    verifier: try key.publicKey.preparedVerifier(),
                    encodedHeader: AccessTokenFormat.encodedHeader(algorithm: key.publicKey.algorithm, keyID: key.keyID)
                )
            }
            if entry.signer == nil { unopened.append(key.keyID) }
            next.entries[key.keyID] = entry
        }
        next.signable = next.entries.values.filter { $0.signer != nil && $0.stored.retiredAt == nil }
            .sorted { $0.stored.activatesAt > $1.stored.activatesAt }
        state.withLock { $0 = next }
        loaded.store(true, ordering: .releasing)
        return unopened
    }

    /// Whether some unretired key opens here, so that one can sign now or after its delay.
    public var hasUsableKey: Bool {
        state.withLock { !$0.signable.isEmpty }
    }

    /// Whether a load has happened.
    public var isLoaded: Bool { loaded.load(ordering: .acquiring) }

    /// Waits for the first load, at most `timeout`: a process that has just started loads its keys while it
    /// already serves.
    public func waitUntilLoaded(timeout: Duration = .seconds(5)) async {
        guard !isLoaded else { return }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while !isLoaded, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The stored keys of the last load.
    public var storedKeys: [StoredSigningKey] {
        state.withLock { $0.entries.values.map(\.stored) }.sorted { $0.createdAt < $1.createdAt }
    }

    /// The key that signs at `now`, if any: the newest active one of the keys this process can open (the rule of
    /// ``SigningKeySchedule/signingKey(among:at:)`` over the keys sorted at load).
    func signer(at now: Date) -> (entry: Entry, key: PrivateKey)? {
        state.withLock { state in
            state.signable.first { $0.stored.activatesAt <= now }.flatMap { entry in entry.signer.map { (entry, $0) } }
        }
    }

    /// The public key `keyID` when it is published at `now`.
    func verifier(keyID: String, at now: Date) -> Entry? {
        guard let entry = state.withLock({ $0.entries[keyID] }), schedule.isPublished(entry.stored, at: now) else {
            return nil
        }
        return entry
    }

    /// The JWKS's keys at `now`, oldest first.
    public func published(at now: Date) -> [JSONWebKey] {
        storedKeys.filter { schedule.isPublished($0, at: now) }.map(\.publicKey)
    }
}
