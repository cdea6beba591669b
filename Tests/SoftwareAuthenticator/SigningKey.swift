import COpenSSL
import Crypto
import WebAuthn

/// A private key made in software for tests: signs like an authenticator and exports its COSE public key.
///
/// The `EVP_PKEY` is generated in the initializer and only used read-only afterwards (each signature gets its
/// own `EVP_MD_CTX`), which OpenSSL allows from several threads; hence `@unchecked Sendable`.
public final class SigningKey: @unchecked Sendable {
    /// The COSE algorithm the key signs with.
    public let algorithm: COSEAlgorithm
    let handle: OpaquePointer

    /// Generates a fresh key for `algorithm` (RSA keys get `rsaBits` bits).
    public init(algorithm: COSEAlgorithm, rsaBits: Int = 2048) {
        self.algorithm = algorithm
        let type: String
        switch algorithm.signatureScheme {
        case .ecdsa: type = "EC"
        case .ed25519: type = "ED25519"
        case .rsaPKCS1v15, .rsaPSS: type = "RSA"
        }
        let context = EVP_PKEY_CTX_new_from_name(nil, type, nil)
        defer { EVP_PKEY_CTX_free(context) }
        precondition(EVP_PKEY_keygen_init(context) == 1, "EVP_PKEY_keygen_init")
        switch algorithm {
        case .es256, .esp256: precondition(EVP_PKEY_CTX_set_group_name(context, "P-256") == 1)
        case .es384, .esp384: precondition(EVP_PKEY_CTX_set_group_name(context, "P-384") == 1)
        case .es512, .esp512: precondition(EVP_PKEY_CTX_set_group_name(context, "P-521") == 1)
        case .rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .rs1:
            precondition(EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(rsaBits)) == 1)
        case .edDSA, .ed25519: break
        }
        var key: OpaquePointer?
        precondition(EVP_PKEY_generate(context, &key) == 1, "EVP_PKEY_generate")
        self.handle = key!
    }

    deinit { EVP_PKEY_free(handle) }

    /// Signs `message` with the key's algorithm (ECDSA signatures are DER, as authenticators send them).
    public func sign(_ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer?
        let digest: OpaquePointer?
        switch algorithm.signatureScheme {
        case .ecdsa(let hash), .rsaPKCS1v15(let hash), .rsaPSS(let hash): digest = hash.algorithm.handle
        case .ed25519: digest = nil
        }
        precondition(EVP_DigestSignInit(context, &keyContext, digest, nil, handle) == 1, "EVP_DigestSignInit")
        if case .rsaPSS = algorithm.signatureScheme {
            precondition(EVP_PKEY_CTX_set_rsa_padding(keyContext, copenssl_RSA_PKCS1_PSS_PADDING()) == 1)
            precondition(EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, copenssl_RSA_PSS_SALTLEN_DIGEST()) == 1)
        }
        var length = 0
        precondition(EVP_DigestSign(context, nil, &length, message, message.count) == 1)
        var signature = [UInt8](repeating: 0, count: length)
        precondition(EVP_DigestSign(context, &signature, &length, message, message.count) == 1, "EVP_DigestSign")
        return Array(signature.prefix(length))
    }

    /// The public key as a COSE_Key map.
    public var coseKeyValue: CBORValue {
        var entries: [CBORMapEntry] = []
        switch algorithm.signatureScheme {
        case .ecdsa:
            var point = [UInt8](repeating: 0, count: 200)
            var length = 0
            precondition(EVP_PKEY_get_octet_string_param(handle, "pub", &point, point.count, &length) == 1)
            let coordinate = (length - 1) / 2
            let crv: Int = coordinate == 32 ? 1 : coordinate == 48 ? 2 : 3
            entries = [
                CBORMapEntry(CBORValue(1), CBORValue(2)), CBORMapEntry(CBORValue(3), CBORValue(algorithm.rawValue)),
                CBORMapEntry(CBORValue(-1), CBORValue(crv)),
                CBORMapEntry(CBORValue(-2), .bytes(Array(point[1..<1 + coordinate]))),
                CBORMapEntry(CBORValue(-3), .bytes(Array(point[1 + coordinate..<1 + 2 * coordinate]))),
            ]
        case .ed25519:
            var raw = [UInt8](repeating: 0, count: 32)
            var length = 32
            precondition(EVP_PKEY_get_raw_public_key(handle, &raw, &length) == 1)
            entries = [
                CBORMapEntry(CBORValue(1), CBORValue(1)), CBORMapEntry(CBORValue(3), CBORValue(algorithm.rawValue)),
                CBORMapEntry(CBORValue(-1), CBORValue(6)), CBORMapEntry(CBORValue(-2), .bytes(raw)),
            ]
        case .rsaPKCS1v15, .rsaPSS:
            entries = [
                CBORMapEntry(CBORValue(1), CBORValue(3)), CBORMapEntry(CBORValue(3), CBORValue(algorithm.rawValue)),
                CBORMapEntry(CBORValue(-1), .bytes(bignum("n"))), CBORMapEntry(CBORValue(-2), .bytes(bignum("e"))),
            ]
        }
        return .map(entries)
    }

    /// The COSE_Key encoding of the public key.
    public var coseKey: [UInt8] { CBOREncoder.encode(coseKeyValue) }

    private func bignum(_ name: String) -> [UInt8] {
        var number: OpaquePointer?
        precondition(EVP_PKEY_get_bn_param(handle, name, &number) == 1)
        defer { BN_free(number) }
        var output = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        _ = BN_bn2bin(number, &output)
        return output
    }
}
