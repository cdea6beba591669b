import AccessTokens
import Crypto
import Domain
import Encoding
import Foundation

/// A signing key as stored: its public JWK in the clear and its private key sealed under the key-encryption key.
///
/// Its life: published in the JWKS from `createdAt`; signs from `activatesAt` (later than `createdAt` by the publish
/// delay for a rotation, so every JWKS cache has it before the first token it signs) until a newer key activates
/// or it is retired; published until its last token has expired (`retiredAt` plus the access-token lifetime and
/// the leeway).
public struct StoredSigningKey: Sendable, Equatable {
    /// The key's public half; its `keyID` is the RFC 7638 thumbprint.
    public let publicKey: JSONWebKey
    /// The PKCS #8 private key sealed under the key-encryption key, bound to the key ID.
    public let sealedPrivateKey: [UInt8]
    /// When it was made (and published).
    public let createdAt: Date
    /// When it may start signing.
    public let activatesAt: Date
    /// When it was retired, if it was.
    public let retiredAt: Date?

    /// A key as stored.
    public init(publicKey: JSONWebKey, sealedPrivateKey: [UInt8], createdAt: Date, activatesAt: Date, retiredAt: Date?)
    {
        self.publicKey = publicKey
        self.sealedPrivateKey = sealedPrivateKey
        self.createdAt = createdAt
        self.activatesAt = activatesAt
        self.retiredAt = retiredAt
    }

    /// The key's ID.
    public var keyID: String { publicKey.keyID }
}

/// Where signing keys are kept (`session_signing_keys`).
public protocol SigningKeyRepository: Sendable {
    /// Every key not yet past its publication (`retired_at` unset, or later than `publishedSince`), oldest first.
    func keys(publishedSince: Date) async throws -> [StoredSigningKey]
    /// Stores `key` unless a key that is not retired exists already when `onlyIfNone`; whether it was stored.
    func add(_ key: StoredSigningKey, onlyIfNone: Bool) async throws -> Bool
    /// Retires the key `keyID` at `now` if `allowed` says so of the keys published since `publishedSince`, read
    /// in the same transaction as the retirement and under the lock that ``add(_:onlyIfNone:)`` takes.
    func retire(
        keyID: String, at now: Date, publishedSince: Date, allowed: @escaping @Sendable ([StoredSigningKey]) -> Bool
    ) async throws -> SigningKeyRetirement
}

/// What a retirement did.
public enum SigningKeyRetirement: Sendable, Equatable {
    /// The key as retired.
    case retired(StoredSigningKey)
    /// No unretired key has this ID.
    case notFound
    /// The rule refused it (another key must be signing).
    case refused
}

/// The rules of the keys' lives, as pure functions of the stored keys and the time.
public struct SigningKeySchedule: Sendable {
    /// How long an access token lives: a retired key stays published this long (plus the leeway).
    public let accessTokenLifetime: TimeInterval
    /// How long a new key is published before it signs.
    public let publishDelay: TimeInterval
    /// The clock skew verifiers allow.
    public static let leeway: TimeInterval = 60

    /// A schedule for tokens of `accessTokenLifetime`.
    public init(accessTokenLifetime: TimeInterval, publishDelay: TimeInterval) {
        self.accessTokenLifetime = accessTokenLifetime
        self.publishDelay = publishDelay
    }

    /// The earliest retirement time of a key still published at `now`.
    public func publishedSince(_ now: Date) -> Date { now.addingTimeInterval(-(accessTokenLifetime + Self.leeway)) }

    /// Whether `key` is in the JWKS (and verifies tokens) at `now`.
    public func isPublished(_ key: StoredSigningKey, at now: Date) -> Bool {
        guard let retiredAt = key.retiredAt else { return true }
        return retiredAt > publishedSince(now)
    }

    /// The key that signs at `now`: the newest active, unretired one.
    public func signingKey(among keys: [StoredSigningKey], at now: Date) -> StoredSigningKey? {
        keys.filter { $0.retiredAt == nil && $0.activatesAt <= now }.max { $0.activatesAt < $1.activatesAt }
    }

    /// Whether `keyID` may be retired at `now`: another unretired key is signing already, so tokens keep being
    /// issued. Retiring the only signing key (or one whose successor is still in its publish delay) would stop
    /// every sign-in.
    public func mayRetire(_ keyID: String, among keys: [StoredSigningKey], at now: Date) -> Bool {
        keys.contains { $0.keyID != keyID && $0.retiredAt == nil && $0.activatesAt <= now }
    }
}

/// The key-encryption key: seals private signing keys before they are stored, and opens them when a process loads
/// them. It is the secret key ring of `PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE` (``SecretKeyRing``, purpose
/// `signingKey`), never stored with them: its current key seals new keys, and while the file's key is rotated the
/// previous keys still open the signing keys sealed before.
public struct KeyEncryptionKey: Sendable {
    let ring: SecretKeyRing

    /// Signing keys sealed under `ring`.
    public init(ring: SecretKeyRing) { self.ring = ring }

    /// The ring of `bytes` (current) and `previous`; nil when a key is not exactly 32 bytes or two are the same.
    public init?(bytes: [UInt8], previous: [[UInt8]] = []) {
        guard let ring = SecretKeyRing(keys: [bytes] + previous) else { return nil }
        self.ring = ring
    }

    /// A new key of `algorithm`, sealed, to be published at `now` and to sign after `delay`.
    public func newKey(_ algorithm: JWSAlgorithm, now: Date, activatingAfter delay: TimeInterval) throws
        -> StoredSigningKey
    {
        let key = try PrivateKey.generate(algorithm == .es256 ? .p256 : .ed25519)
        let publicKey = try key.jsonWebKey()
        var privateKey = try key.pkcs8()
        defer { privateKey.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let sealed = try ring.seal(privateKey, for: .signingKey, context: Array(publicKey.keyID.utf8))
        return StoredSigningKey(
            publicKey: publicKey, sealedPrivateKey: sealed.box, createdAt: now,
            activatesAt: now.addingTimeInterval(delay),
            retiredAt: nil)
    }

    /// The private key of `stored`; throws when it was sealed under none of this process's key-encryption keys or
    /// does not match its public half.
    public func open(_ stored: StoredSigningKey) throws -> PrivateKey {
        // The row keeps the box alone; the few keys of the ring are tried in turn, once per key per process.
        let context = Array(stored.keyID.utf8)
        guard
            let der = ring.keyIDs.lazy.compactMap({
                ring.open(SealedSecret(keyID: $0, box: stored.sealedPrivateKey), for: .signingKey, context: context)
            }).first
        else {
            throw DomainError(
                .unavailable, "the signing key \(stored.keyID) does not open with this key-encryption key")
        }
        let key = try PrivateKey(pkcs8: der)
        guard try key.jsonWebKey() == stored.publicKey else {
            throw DomainError(.unavailable, "the signing key \(stored.keyID) does not match its public key")
        }
        return key
    }
}
