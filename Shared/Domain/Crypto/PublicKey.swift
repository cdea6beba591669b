import COpenSSL
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A hash function used inside a signature scheme.
public enum HashFunction: Sendable, Hashable {
    case sha1, sha256, sha384, sha512

    /// The process-wide fetched OpenSSL digest for this function.
    public var algorithm: DigestAlgorithm {
        switch self {
        case .sha1: return .sha1
        case .sha256: return .sha256
        case .sha384: return .sha384
        case .sha512: return .sha512
        }
    }
}

/// How a signature is computed and encoded.
public enum SignatureScheme: Sendable, Hashable {
    /// ECDSA over the hash of the message; the signature is the DER `ECDSA-Sig-Value` (as WebAuthn sends it).
    case ecdsa(HashFunction)
    /// Ed25519 (pure EdDSA over the message).
    case ed25519
    /// RSASSA-PKCS1-v1_5.
    case rsaPKCS1v15(HashFunction)
    /// RSASSA-PSS with MGF1 over the same hash and a salt as long as the digest (RFC 8230).
    case rsaPSS(HashFunction)

    var digest: DigestAlgorithm? {
        switch self {
        case .ecdsa(let hash), .rsaPKCS1v15(let hash), .rsaPSS(let hash): return hash.algorithm
        case .ed25519: return nil
        }
    }
}

/// A named elliptic curve for ECDSA keys.
public enum EllipticCurve: String, Sendable, Hashable {
    case p256 = "P-256"
    case p384 = "P-384"
    case p521 = "P-521"

    /// Length in bytes of one coordinate of a point on this curve.
    public var coordinateLength: Int {
        switch self {
        case .p256: return 32
        case .p384: return 48
        case .p521: return 66
        }
    }

    init?(groupName: String) {
        switch groupName {
        case "prime256v1", "P-256", "secp256r1": self = .p256
        case "secp384r1", "P-384": self = .p384
        case "secp521r1", "P-521": self = .p521
        default: return nil
        }
    }
}

/// A public key held by OpenSSL, built once and reusable for any number of verifications.
///
/// The `EVP_PKEY` is fully constructed in the initializer and never mutated afterwards; OpenSSL documents
/// concurrent read-only use of one `EVP_PKEY` (each verification creates its own `EVP_MD_CTX`/`EVP_PKEY_CTX`)
/// as thread-safe. That is what makes the `@unchecked Sendable` sound, so callers may cache parsed keys and
/// share them between tasks.
public final class PublicKey: @unchecked Sendable {
    /// The kind of key and its size.
    public enum Kind: Sendable, Hashable {
        case ellipticCurve(EllipticCurve)
        case ed25519
        case rsa(bits: Int)
        case other(String)
    }

    let handle: OpaquePointer
    /// The kind of key.
    public let kind: Kind

    /// Takes ownership of `handle` (one reference).
    init(taking handle: OpaquePointer) {
        self.handle = handle
        self.kind = PublicKey.classify(handle)
    }

    deinit { EVP_PKEY_free(handle) }

    private static func classify(_ key: OpaquePointer) -> Kind {
        if EVP_PKEY_is_a(key, "EC") == 1 {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            if EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &name, name.count, &length) == 1 {
                let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if let curve = EllipticCurve(groupName: group) { return .ellipticCurve(curve) }
                return .other("EC " + group)
            }
            return .other("EC")
        }
        if EVP_PKEY_is_a(key, "ED25519") == 1 { return .ed25519 }
        if EVP_PKEY_is_a(key, "RSA") == 1 { return .rsa(bits: Int(EVP_PKEY_get_bits(key))) }
        return .other(String(cString: EVP_PKEY_get0_type_name(key)))
    }

    /// Builds an ECDSA public key from its affine coordinates (big-endian, each exactly the curve's length).
    ///
    /// Fails when the point is not on the curve.
    public static func ellipticCurve(_ curve: EllipticCurve, x: [UInt8], y: [UInt8]) throws(CryptoError) -> PublicKey {
        guard x.count == curve.coordinateLength, y.count == curve.coordinateLength else {
            throw CryptoError("EC point coordinate length")
        }
        let point = [0x04] + x + y
        let group: UnsafePointer<CChar>
        switch curve {
        case .p256: group = ParameterNames.p256
        case .p384: group = ParameterNames.p384
        case .p521: group = ParameterNames.p521
        }
        let built = point.withUnsafeBytes { raw in
            Result { () throws(CryptoError) -> PublicKey in
                try fromData(type: "EC") { builder in
                    OSSL_PARAM_BLD_push_utf8_string(builder, ParameterNames.group, group, 0) == 1
                        && OSSL_PARAM_BLD_push_octet_string(builder, ParameterNames.pub, raw.baseAddress, raw.count)
                            == 1
                }
            }
        }
        let key = try built.get()
        try key.checkPublic()
        return key
    }

    /// Builds an Ed25519 public key from its 32 raw bytes.
    public static func ed25519(_ raw: [UInt8]) throws(CryptoError) -> PublicKey {
        guard raw.count == 32 else { throw CryptoError("Ed25519 key length") }
        guard let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, raw, raw.count) else {
            throw CryptoError("EVP_PKEY_new_raw_public_key")
        }
        return PublicKey(taking: key)
    }

    /// Builds an RSA public key from its modulus and public exponent (big-endian, unsigned).
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) throws(CryptoError) -> PublicKey {
        guard !modulus.isEmpty, !exponent.isEmpty, exponent.count <= 8,
            let modulusLength = Int32(exactly: modulus.count)
        else { throw CryptoError("RSA key encoding") }
        guard let n = BN_bin2bn(modulus, modulusLength, nil) else { throw CryptoError("BN_bin2bn") }
        defer { BN_free(n) }
        guard let e = BN_bin2bn(exponent, Int32(exponent.count), nil) else { throw CryptoError("BN_bin2bn") }
        defer { BN_free(e) }
        return try fromData(type: "RSA") { builder in
            OSSL_PARAM_BLD_push_BN(builder, ParameterNames.rsaN, n) == 1
                && OSSL_PARAM_BLD_push_BN(builder, ParameterNames.rsaE, e) == 1
        }
    }

    /// OSSL_PARAM keeps pointers to its key names (and, until `OSSL_PARAM_BLD_to_param`, to the pushed data), so
    /// the names must outlive every parameter array: they are allocated once per process and never freed.
    /// `nonisolated(unsafe)` is sound because the pointers are immutable after initialization.
    private enum ParameterNames {
        nonisolated(unsafe) static let group = UnsafePointer(strdup(OSSL_PKEY_PARAM_GROUP_NAME)!)
        nonisolated(unsafe) static let pub = UnsafePointer(strdup(OSSL_PKEY_PARAM_PUB_KEY)!)
        nonisolated(unsafe) static let rsaN = UnsafePointer(strdup(OSSL_PKEY_PARAM_RSA_N)!)
        nonisolated(unsafe) static let rsaE = UnsafePointer(strdup(OSSL_PKEY_PARAM_RSA_E)!)
        nonisolated(unsafe) static let p256 = UnsafePointer(strdup("prime256v1")!)
        nonisolated(unsafe) static let p384 = UnsafePointer(strdup("secp384r1")!)
        nonisolated(unsafe) static let p521 = UnsafePointer(strdup("secp521r1")!)
    }

    /// Builds a key from parameters pushed by `push`; everything pushed must stay valid until this returns.
    private static func fromData(
        type: String, _ push: (OpaquePointer) -> Bool
    ) throws(CryptoError) -> PublicKey {
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard push(builder), let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw CryptoError("OSSL_PARAM_BLD")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw CryptoError("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, copenssl_EVP_PKEY_PUBLIC_KEY(), params) == 1,
            let key
        else { throw CryptoError("EVP_PKEY_fromdata") }
        return PublicKey(taking: key)
    }

    private func checkPublic() throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, handle, nil) else {
            throw CryptoError("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check(context) == 1 else { throw CryptoError("EVP_PKEY_public_check") }
    }

    /// Whether this key and `other` are the same public key (`EVP_PKEY_eq`).
    public func isSameKey(as other: PublicKey) -> Bool {
        EVP_PKEY_eq(handle, other.handle) == 1
    }

    /// Verifies `signature` over `message` with this key. Returns `false` for a wrong signature, a malformed
    /// signature or a scheme that does not fit the key; it never throws for attacker-controlled input.
    public func verify(signature: [UInt8], message: [UInt8], scheme: SignatureScheme) -> Bool {
        switch (scheme, kind) {
        case (.ecdsa, .ellipticCurve), (.ed25519, .ed25519), (.rsaPKCS1v15, .rsa), (.rsaPSS, .rsa): break
        default: return false
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        guard EVP_DigestVerifyInit(context, &keyContext, scheme.digest?.handle, nil, handle) == 1 else {
            _ = CryptoError.drainErrorQueue()
            return false
        }
        if case .rsaPSS = scheme {
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, copenssl_RSA_PKCS1_PSS_PADDING()) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, copenssl_RSA_PSS_SALTLEN_DIGEST()) == 1
            else {
                _ = CryptoError.drainErrorQueue()
                return false
            }
        }
        let result = signature.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count)
            }
        }
        if result != 1 { _ = CryptoError.drainErrorQueue() }
        return result == 1
    }

    /// Prepares repeated verification under one scheme: see `PreparedVerifier`.
    public func preparedVerifier(for scheme: SignatureScheme) throws(CryptoError) -> PreparedVerifier {
        try PreparedVerifier(key: self, scheme: scheme)
    }
}

/// A public key bound to one signature scheme, with OpenSSL's verification context set up once.
///
/// `EVP_DigestVerifyInit` fetches the signature implementation and builds a provider context on every call, which
/// costs a noticeable share of an ECDSA verification. Here that happens once: verification contexts initialised
/// for `EVP_PKEY_verify` are kept in a small pool and reused, the way `openssl speed` reuses one context per loop,
/// and each verification checks a digest computed with the process-wide `EVP_MD`. A context is used by one caller
/// at a time (taken from the pool under its lock, or duplicated from the template, which is never used for an
/// operation itself), so concurrent verifications are safe; that is what makes `@unchecked Sendable` sound.
/// Ed25519 has no digest step and keeps the one-shot `EVP_DigestVerify` path.
public final class PreparedVerifier: @unchecked Sendable {
    /// The key.
    public let key: PublicKey
    /// The scheme signatures are checked under.
    public let scheme: SignatureScheme
    private let template: OpaquePointer?
    /// Idle contexts ready for `EVP_PKEY_verify`, at most `idleLimit` of them.
    private let idle = Mutex<[VerifyContext]>([])
    private static let idleLimit = 8

    init(key: PublicKey, scheme: SignatureScheme) throws(CryptoError) {
        self.key = key
        self.scheme = scheme
        guard let digest = scheme.digest else {
            template = nil
            return
        }
        switch (scheme, key.kind) {
        case (.ecdsa, .ellipticCurve), (.rsaPKCS1v15, .rsa), (.rsaPSS, .rsa): break
        default: throw CryptoError(operation: "PreparedVerifier", details: "scheme does not fit the key")
        }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key.handle, nil) else {
            throw CryptoError("EVP_PKEY_CTX_new_from_pkey")
        }
        var ready = EVP_PKEY_verify_init(context) == 1
        if ready, case .rsaPSS = scheme {
            ready =
                EVP_PKEY_CTX_set_rsa_padding(context, copenssl_RSA_PKCS1_PSS_PADDING()) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, copenssl_RSA_PSS_SALTLEN_DIGEST()) == 1
        } else if ready, case .rsaPKCS1v15 = scheme {
            ready = EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
        }
        ready = ready && EVP_PKEY_CTX_set_signature_md(context, digest.handle) == 1
        guard ready else {
            EVP_PKEY_CTX_free(context)
            throw CryptoError("EVP_PKEY_verify_init")
        }
        template = context
    }

    deinit {
        EVP_PKEY_CTX_free(template)
        for context in idle.withLock({ $0 }) { EVP_PKEY_CTX_free(context.pointer) }
    }

    /// Verifies `signature` over `message`; false for any wrong or malformed signature.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        guard let template, let digest = scheme.digest else {
            return key.verify(signature: signature, message: message, scheme: scheme)
        }
        let hash = digest.hash(message)
        guard let context = idle.withLock({ $0.popLast()?.pointer }) ?? EVP_PKEY_CTX_dup(template) else {
            _ = CryptoError.drainErrorQueue()
            return false
        }
        let result = EVP_PKEY_verify(context, signature, signature.count, hash, hash.count)
        if result != 1 { _ = CryptoError.drainErrorQueue() }
        // 1 and 0 are verdicts and leave the context as it was; anything else is an error, and that context goes.
        let reusable =
            (result == 1 || result == 0)
            && idle.withLock { contexts in
                guard contexts.count < Self.idleLimit else { return false }
                contexts.append(VerifyContext(pointer: context))
                return true
            }
        if !reusable { EVP_PKEY_CTX_free(context) }
        return result == 1
    }
}

/// An `EVP_PKEY_CTX` idle in a `PreparedVerifier`'s pool; only the thread that takes it out uses it.
private struct VerifyContext: @unchecked Sendable {
    let pointer: OpaquePointer
}
