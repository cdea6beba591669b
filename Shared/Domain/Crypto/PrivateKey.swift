import COpenSSL
import Synchronization

/// A private key that signs: ECDSA on P-256 or Ed25519, held by OpenSSL (what signs access tokens).
///
/// The `EVP_PKEY` is built in the initializer and never mutated; each signature uses a context of its own (a pooled
/// one, taken under a lock, for P-256; a new `EVP_MD_CTX` for Ed25519), and OpenSSL documents concurrent signing
/// with one key as thread-safe. That makes `@unchecked Sendable` sound.
public final class PrivateKey: @unchecked Sendable {
    /// The kinds of key.
    public enum Kind: String, Sendable, Hashable {
        /// ECDSA on P-256 with SHA-256.
        case p256
        /// Ed25519.
        case ed25519
    }

    /// The kind of key.
    public let kind: Kind
    let handle: OpaquePointer
    /// For P-256: signing contexts initialised once (`EVP_PKEY_sign_init` with SHA-256) and reused, as
    /// `PreparedVerifier` does for verification: initialising one fetches the implementation each time, which
    /// costs a share of the signature itself. One caller uses a context at a time (taken under the lock).
    private let idle = Mutex<[SignContext]>([])
    private static let idleLimit = 8

    private init(kind: Kind, taking handle: OpaquePointer) {
        self.kind = kind
        self.handle = handle
    }

    deinit {
        EVP_PKEY_free(handle)
        for context in idle.withLock({ $0 }) { EVP_PKEY_CTX_free(context.pointer) }
    }

    /// A new random key of `kind`.
    public static func generate(_ kind: Kind) throws(CryptoError) -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, kind == .p256 ? "EC" : "ED25519", nil) else {
            throw CryptoError("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw CryptoError("EVP_PKEY_keygen_init") }
        if kind == .p256, EVP_PKEY_CTX_set_group_name(context, "P-256") != 1 {
            throw CryptoError("EVP_PKEY_CTX_set_group_name")
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else { throw CryptoError("EVP_PKEY_generate") }
        return PrivateKey(kind: kind, taking: key)
    }

    /// The key read from its PKCS #8 DER encoding; fails for any other kind of key.
    public init(pkcs8 der: [UInt8]) throws(CryptoError) {
        var cursor: UnsafePointer<UInt8>? = nil
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &cursor, buffer.count)
        }
        guard let key else { throw CryptoError("d2i_AutoPrivateKey") }
        if EVP_PKEY_is_a(key, "ED25519") == 1 {
            kind = .ed25519
        } else if EVP_PKEY_is_a(key, "EC") == 1, EVP_PKEY_get_bits(key) == 256 {
            kind = .p256
        } else {
            EVP_PKEY_free(key)
            throw CryptoError(operation: "PrivateKey", details: "not a P-256 or Ed25519 key")
        }
        handle = key
    }

    /// The key's PKCS #8 DER encoding: the private key itself, to be sealed before it is stored anywhere.
    public func pkcs8() throws(CryptoError) -> [UInt8] {
        guard let info = EVP_PKEY2PKCS8(handle) else { throw CryptoError("EVP_PKEY2PKCS8") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        var output: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PKCS8_PRIV_KEY_INFO(info, &output)
        guard length > 0, let output else { throw CryptoError("i2d_PKCS8_PRIV_KEY_INFO") }
        defer {
            OPENSSL_cleanse(output, Int(length))
            _ = copenssl_OPENSSL_free(output)
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The public key: for P-256 the affine coordinates (32 bytes each), for Ed25519 the raw key as `x` and an
    /// empty `y`.
    public func publicCoordinates() throws(CryptoError) -> (x: [UInt8], y: [UInt8]) {
        switch kind {
        case .ed25519:
            var length = 32
            var raw = [UInt8](repeating: 0, count: 32)
            guard EVP_PKEY_get_raw_public_key(handle, &raw, &length) == 1, length == 32 else {
                throw CryptoError("EVP_PKEY_get_raw_public_key")
            }
            return (raw, [])
        case .p256:
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            guard EVP_PKEY_get_octet_string_param(handle, OSSL_PKEY_PARAM_PUB_KEY, &point, point.count, &length) == 1,
                length == 65, point[0] == 0x04
            else { throw CryptoError("EVP_PKEY_get_octet_string_param") }
            return (Array(point[1..<33]), Array(point[33..<65]))
        }
    }

    /// The public half, for verifying what this key signed.
    public func publicKey() throws(CryptoError) -> PublicKey {
        let (x, y) = try publicCoordinates()
        return kind == .p256 ? try .ellipticCurve(.p256, x: x, y: y) : try .ed25519(x)
    }

    /// A JWS signature of `message` (RFC 7518 §3.4, RFC 8037): `r ‖ s` (32 bytes each) for P-256, the 64-byte
    /// signature for Ed25519.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        if kind == .p256 { return try ECDSASignature.raw(der: signDigest(DigestAlgorithm.sha256.hash(message))) }
        // Ed25519 signs the message itself: no digest, and its signature is already the JWS form.
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, nil, nil, handle) == 1 else { throw CryptoError("EVP_DigestSignInit") }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw CryptoError("EVP_DigestSign")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw CryptoError("EVP_DigestSign")
        }
        signature.removeSubrange(length...)
        return signature
    }

    /// The DER ECDSA signature of a SHA-256 `digest`, on a pooled context.
    private func signDigest(_ digest: [UInt8]) throws(CryptoError) -> [UInt8] {
        var pooled = idle.withLock { $0.popLast()?.pointer }
        if pooled == nil {
            guard let fresh = EVP_PKEY_CTX_new_from_pkey(nil, handle, nil) else {
                throw CryptoError("EVP_PKEY_CTX_new_from_pkey")
            }
            guard EVP_PKEY_sign_init(fresh) == 1,
                EVP_PKEY_CTX_set_signature_md(fresh, DigestAlgorithm.sha256.handle) == 1
            else {
                EVP_PKEY_CTX_free(fresh)
                throw CryptoError("EVP_PKEY_sign_init")
            }
            pooled = fresh
        }
        guard let context = pooled else { throw CryptoError("EVP_PKEY_sign") }
        // 72 bytes hold any DER ECDSA-Sig-Value on P-256.
        var signature = [UInt8](repeating: 0, count: 80)
        var length = signature.count
        let result = EVP_PKEY_sign(context, &signature, &length, digest, digest.count)
        guard result == 1 else {
            EVP_PKEY_CTX_free(context)
            throw CryptoError("EVP_PKEY_sign")
        }
        let kept = idle.withLock { contexts in
            guard contexts.count < Self.idleLimit else { return false }
            contexts.append(SignContext(pointer: context))
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
        signature.removeSubrange(length...)
        return signature
    }
}

/// An `EVP_PKEY_CTX` idle in a `PrivateKey`'s pool; only the thread that takes it out uses it.
private struct SignContext: @unchecked Sendable {
    let pointer: OpaquePointer
}
