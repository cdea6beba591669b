import AccessTokens
import COpenSSL
import Encoding
import JSON

/// A private key that signs access tokens in tests and benchmarks, on OpenSSL alone (no server module): P-256 for
/// ES256, Ed25519 for EdDSA. Its public half is a JWK whose `kid` is its RFC 7638 thumbprint, as the issuer's are.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is generated in the initializer and never mutated; each signature makes
/// its own `EVP_MD_CTX`, and OpenSSL documents concurrent signing with one key as thread-safe.
public final class TestSigningKey: @unchecked Sendable {
    /// The algorithm the key signs with.
    public let algorithm: JWSAlgorithm
    /// The public key as the issuer's JWKS would publish it.
    public let publicKey: JSONWebKey
    private let handle: OpaquePointer

    /// A new random key; traps when OpenSSL cannot make one (nothing a test could go on without).
    public init(_ algorithm: JWSAlgorithm) {
        let context = EVP_PKEY_CTX_new_from_name(nil, algorithm == .es256 ? "EC" : "ED25519", nil)
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        precondition(EVP_PKEY_keygen_init(context) == 1, "EVP_PKEY_keygen_init")
        if algorithm == .es256 {
            precondition(EVP_PKEY_CTX_set_group_name(context, "P-256") == 1, "EVP_PKEY_CTX_set_group_name")
        }
        precondition(EVP_PKEY_generate(context, &key) == 1, "EVP_PKEY_generate")
        guard let key else { preconditionFailure("EVP_PKEY_generate gave no key") }
        let (x, y) = Self.publicCoordinates(key, algorithm)
        // The keyID is a placeholder until the thumbprint, which needs the key's own members, is known.
        guard let unnamed = JSONWebKey(keyID: "-", algorithm: algorithm, x: x, y: y),
            let named = JSONWebKey(
                keyID: Base64URL.encode(Self.sha256(unnamed.thumbprintInput)), algorithm: algorithm, x: x, y: y)
        else { preconditionFailure("public key coordinates") }
        self.algorithm = algorithm
        self.handle = key
        self.publicKey = named
    }

    deinit { EVP_PKEY_free(handle) }

    /// The key's ID (`kid`).
    public var keyID: String { publicKey.keyID }

    /// The JWS signature of `message`: `r ‖ s` for ES256, the 64-byte signature for EdDSA.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        precondition(
            EVP_DigestSignInit(context, nil, algorithm == .es256 ? EVP_sha256() : nil, nil, handle) == 1,
            "EVP_DigestSignInit")
        var length = 0
        precondition(EVP_DigestSign(context, nil, &length, message, message.count) == 1, "EVP_DigestSign")
        var signature = [UInt8](repeating: 0, count: length)
        precondition(EVP_DigestSign(context, &signature, &length, message, message.count) == 1, "EVP_DigestSign")
        signature.removeSubrange(length...)
        return algorithm == .es256 ? Self.rawSignature(der: signature) : signature
    }

    /// A token of `claims` as the issuer makes it.
    public func token(_ claims: AccessTokenClaims) -> String {
        let input = AccessTokenFormat.signingInput(claims: claims, algorithm: algorithm, keyID: keyID)
        return AccessTokenFormat.assemble(signingInput: input, signature: sign(input))
    }

    /// A token with exactly this header and payload, signed with this key whatever the header says: for tokens
    /// the issuer would never make.
    public func token(header: JSONValue, payload: JSONValue) -> String {
        let input = Array(Self.signingInput(header: header, payload: payload).utf8)
        return AccessTokenFormat.assemble(signingInput: input, signature: sign(input))
    }

    /// `base64url(header) "." base64url(payload)`.
    public static func signingInput(header: JSONValue, payload: JSONValue) -> String {
        Base64URL.encode(header.serialized()) + "." + Base64URL.encode(payload.serialized())
    }

    /// The claims the issuer would put in a token: valid from `now` for ten minutes, for the account `subject`.
    public static func claims(
        issuer: String, audience: String, now: Int64, subject: String = "acc_01", sessionID: String = "ses_01"
    ) -> AccessTokenClaims {
        AccessTokenClaims(
            issuer: issuer, subject: subject, audience: audience, clientID: audience, expiresAt: now + 600,
            issuedAt: now, tokenID: "jti-\(now)", sessionID: sessionID, authenticatedAt: now - 60,
            methods: AuthenticationMethodReferences.passkey)
    }

    /// The JSON payload of `claims`, as a starting point for altered ones.
    public static func payload(_ claims: AccessTokenClaims) -> JSONObject {
        let input = AccessTokenFormat.signingInput(claims: claims, algorithm: .es256, keyID: "-")
        let encoded = input.split(separator: UInt8(ascii: "."))[1]
        guard let bytes = Base64URL.decodeUnpadded(String(decoding: encoded, as: UTF8.self)),
            let object = try? JSONReader.parse(bytes).objectValue
        else { preconditionFailure("the format's own payload") }
        return object
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        precondition(EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1, "EVP_Digest")
        return digest
    }

    private static func publicCoordinates(_ key: OpaquePointer, _ algorithm: JWSAlgorithm) -> ([UInt8], [UInt8]) {
        switch algorithm {
        case .edDSA:
            var raw = [UInt8](repeating: 0, count: 32)
            var length = raw.count
            precondition(EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1 && length == 32, "raw public key")
            return (raw, [])
        case .es256:
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            precondition(
                EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_PUB_KEY, &point, point.count, &length) == 1
                    && length == 65 && point[0] == 0x04, "EC public point")
            return (Array(point[1..<33]), Array(point[33..<65]))
        }
    }

    /// `r ‖ s`, each left-padded to 32 bytes, from a DER `ECDSA-Sig-Value`.
    private static func rawSignature(der: [UInt8]) -> [UInt8] {
        var cursor: UnsafePointer<UInt8>? = nil
        let value: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        defer { ECDSA_SIG_free(value) }
        var raw = [UInt8](repeating: 0, count: 64)
        raw.withUnsafeMutableBufferPointer { buffer in
            precondition(
                BN_bn2binpad(ECDSA_SIG_get0_r(value), buffer.baseAddress, 32) == 32
                    && BN_bn2binpad(ECDSA_SIG_get0_s(value), buffer.baseAddress! + 32, 32) == 32, "BN_bn2binpad")
        }
        return raw
    }
}
