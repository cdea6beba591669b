import Crypto
import Encoding

extension JWSAlgorithm {
    /// The signature scheme OpenSSL verifies the algorithm with (ES256's `r ‖ s` converted to DER first).
    public var scheme: SignatureScheme {
        switch self {
        case .es256: .ecdsa(.sha256)
        case .edDSA: .ed25519
        }
    }
}

extension JSONWebKey {
    /// The key set up once for verifying its algorithm's signatures; throws for a P-256 point off the curve.
    public func preparedVerifier() throws(CryptoError) -> PreparedVerifier {
        let key: PublicKey =
            switch algorithm {
            case .es256: try .ellipticCurve(.p256, x: x, y: y)
            case .edDSA: try .ed25519(x)
            }
        return try key.preparedVerifier(for: algorithm.scheme)
    }
}

extension PreparedVerifier {
    /// Whether a JWS signature (`r ‖ s` for ES256, the 64 bytes for EdDSA) verifies over `signingInput`.
    public func verify(jwsSignature: [UInt8], signingInput: [UInt8]) -> Bool {
        guard let signature = scheme == .ed25519 ? jwsSignature : ECDSASignature.der(raw: jwsSignature) else {
            return false
        }
        return verify(signature: signature, message: signingInput)
    }
}

extension PrivateKey {
    /// The JWS algorithm this key signs with.
    public var jwsAlgorithm: JWSAlgorithm { kind == .p256 ? .es256 : .edDSA }

    /// The public key as a JWK whose `kid` is its RFC 7638 thumbprint.
    public func jsonWebKey() throws(CryptoError) -> JSONWebKey {
        let (x, y) = try publicCoordinates()
        // The ID is a placeholder until the thumbprint, which hashes the key's own members, is known.
        guard let unnamed = JSONWebKey(keyID: "-", algorithm: jwsAlgorithm, x: x, y: y),
            let named = JSONWebKey(
                keyID: Base64URL.encode(sha256(unnamed.thumbprintInput)), algorithm: jwsAlgorithm, x: x, y: y)
        else { throw CryptoError(operation: "jsonWebKey", details: "the public half does not fit the algorithm") }
        return named
    }
}
