import AccessTokens
import COpenSSL
import Synchronization

/// One key of the key set as OpenSSL holds it: built once from its JWK (a P-256 point is checked to be on the
/// curve) and reused for every token it signed.
///
/// `@unchecked Sendable`: the `EVP_PKEY` and the ES256 template context are built in the initializer and never
/// mutated after; OpenSSL documents concurrent read-only use of one `EVP_PKEY` as thread-safe. Each verification
/// uses a context of its own: one taken out of the pool under its lock, or a copy of the template (which is only
/// ever copied, never used), so no context is used by two threads at once.
final class VerificationKey: @unchecked Sendable {
    /// The JWK the key was built from.
    let jwk: JSONWebKey
    private let key: OpaquePointer
    /// ES256: an `EVP_PKEY_CTX` initialised for `EVP_PKEY_verify` over a SHA-256 digest. Setting one up fetches
    /// the signature implementation and costs a noticeable share of a verification, so it is done once and copied;
    /// EdDSA has no such split in OpenSSL 3.0 and takes the one-shot `EVP_DigestVerify` path.
    private let template: OpaquePointer?
    /// Contexts copied from the template and idle again, at most `idleLimit` of them.
    private let idle = Mutex<[VerifyContext]>([])
    private static let idleLimit = 8

    /// The key of `jwk`; nil when OpenSSL refuses it (a P-256 point off the curve).
    init?(_ jwk: JSONWebKey) {
        switch jwk.algorithm {
        case .es256:
            guard let key = Self.p256Key(x: jwk.x, y: jwk.y) else { return nil }
            guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
                EVP_PKEY_free(key)
                return nil
            }
            guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, SHA256.algorithm) == 1
            else {
                EVP_PKEY_CTX_free(context)
                EVP_PKEY_free(key)
                ERR_clear_error()
                return nil
            }
            self.key = key
            template = context
        case .edDSA:
            guard let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, jwk.x, jwk.x.count) else {
                ERR_clear_error()
                return nil
            }
            self.key = key
            template = nil
        }
        self.jwk = jwk
    }

    deinit {
        for context in idle.withLock({ $0 }) { EVP_PKEY_CTX_free(context.pointer) }
        EVP_PKEY_CTX_free(template)
        EVP_PKEY_free(key)
    }

    /// Whether `signature` (a JWS signature: `r ‖ s` for ES256) is this key's over `signingInput`.
    func verify(signature: [UInt8], signingInput: [UInt8]) -> Bool {
        guard signature.count == jwk.algorithm.signatureLength else { return false }
        let verified =
            switch jwk.algorithm {
            case .es256: verifyECDSA(signature: signature, signingInput: signingInput)
            case .edDSA: verifyEd25519(signature: signature, signingInput: signingInput)
            }
        if !verified { ERR_clear_error() }
        return verified
    }

    private func verifyECDSA(signature: [UInt8], signingInput: [UInt8]) -> Bool {
        guard let template, let digest = SHA256.hash(signingInput) else { return false }
        guard let context = idle.withLock({ $0.popLast()?.pointer }) ?? EVP_PKEY_CTX_dup(template) else { return false }
        let der = Self.derSignature(raw: signature)
        let result = EVP_PKEY_verify(context, der, der.count, digest, digest.count)
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

    private func verifyEd25519(signature: [UInt8], signingInput: [UInt8]) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        return EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1
            && EVP_DigestVerify(context, signature, signature.count, signingInput, signingInput.count) == 1
    }

    /// The DER `ECDSA-Sig-Value` (two INTEGERs, minimal and non-negative) of a 64-byte `r ‖ s`.
    static func derSignature(raw: [UInt8]) -> [UInt8] {
        var der: [UInt8] = [0x30, 0]
        der.reserveCapacity(72)
        for half in [raw[0..<32], raw[32..<64]] {
            // At most 32 bytes, plus a zero in front when the top bit is set: lengths fit one byte.
            let digits = half.drop { $0 == 0 }
            let magnitude = digits.isEmpty ? [0][...] : digits
            let padded = magnitude[magnitude.startIndex] & 0x80 != 0
            der.append(0x02)
            der.append(UInt8(magnitude.count + (padded ? 1 : 0)))
            if padded { der.append(0) }
            der += magnitude
        }
        der[1] = UInt8(der.count - 2)
        return der
    }

    /// A P-256 public key from its affine coordinates, checked to be on the curve; nil when it is not.
    private static func p256Key(x: [UInt8], y: [UInt8]) -> OpaquePointer? {
        guard x.count == 32, y.count == 32, let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var point: [UInt8] = [0x04] + x + y
        var group = Array("prime256v1".utf8CString)
        var key: OpaquePointer?
        // OSSL_PARAM holds pointers to its names and values: every one stays alive for the whole fromdata call.
        let built = OSSL_PKEY_PARAM_GROUP_NAME.withCString { groupName in
            OSSL_PKEY_PARAM_PUB_KEY.withCString { publicKeyName in
                group.withUnsafeMutableBufferPointer { groupValue in
                    point.withUnsafeMutableBytes { pointValue in
                        var parameters = [
                            OSSL_PARAM_construct_utf8_string(groupName, groupValue.baseAddress, 0),
                            OSSL_PARAM_construct_octet_string(publicKeyName, pointValue.baseAddress, pointValue.count),
                            OSSL_PARAM_construct_end(),
                        ]
                        return EVP_PKEY_fromdata_init(context) == 1
                            && EVP_PKEY_fromdata(context, &key, copenssl_EVP_PKEY_PUBLIC_KEY(), &parameters) == 1
                    }
                }
            }
        }
        guard built, let key else {
            ERR_clear_error()
            return nil
        }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            return nil
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check(check) == 1 else {
            EVP_PKEY_free(key)
            ERR_clear_error()
            return nil
        }
        return key
    }
}

/// An `EVP_PKEY_CTX` idle in a key's pool; only the thread that takes it out uses it.
private struct VerifyContext: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// SHA-256, fetched from OpenSSL's default provider once per process.
private enum SHA256 {
    /// `nonisolated(unsafe)`: an `EVP_MD` is immutable after `EVP_MD_fetch` and documented as safe to share between
    /// threads; it lives as long as the process.
    nonisolated(unsafe) static let algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)

    /// The digest of `bytes`; nil only when OpenSSL cannot hash at all.
    static func hash(_ bytes: [UInt8]) -> [UInt8]? {
        guard let algorithm else { return nil }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &length, algorithm, nil) == 1, length == 32 else { return nil }
        return digest
    }
}
