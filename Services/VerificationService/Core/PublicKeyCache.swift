import Synchronization
import WebAuthn

/// Parsed credential public keys by their COSE bytes, so a sign-in does not rebuild the OpenSSL key each time.
///
/// Keyed by the COSE encoding itself, so a key can never be served for other bytes. Bounded: when full, the
/// table is cleared and refilled by use, which keeps the cost of a flood of distinct keys constant.
public final class PublicKeyCache: Sendable {
    private let keys = Mutex<[[UInt8]: CredentialPublicKey]>([:])
    public let capacity: Int

    public init(capacity: Int = 50_000) { self.capacity = capacity }

    /// The key for `coseKey`, parsed once.
    public func key(for coseKey: [UInt8]) throws(WebAuthnError) -> CredentialPublicKey {
        if let cached = keys.withLock({ $0[coseKey] }) { return cached }
        let parsed = try CredentialPublicKey(coseKey: coseKey)
        keys.withLock { keys in
            if keys.count >= capacity { keys.removeAll(keepingCapacity: true) }
            keys[coseKey] = parsed
        }
        return parsed
    }

    public var count: Int { keys.withLock { $0.count } }
}
