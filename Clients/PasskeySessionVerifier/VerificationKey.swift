import AccessTokens
import Crypto

/// One key of the key set as OpenSSL holds it: built once from its JWK (a P-256 point is checked to be on the
/// curve) and reused for every token it signed, on `Crypto`'s prepared verifier.
final class VerificationKey: Sendable {
    /// The JWK the key was built from.
    let jwk: JSONWebKey
    private let verifier: PreparedVerifier

    /// The key of `jwk`; nil when OpenSSL refuses it (a P-256 point off the curve).
    init?(_ jwk: JSONWebKey) {
        guard let verifier = try? jwk.preparedVerifier() else { return nil }
        self.jwk = jwk
        self.verifier = verifier
    }

    /// Whether `signature` (a JWS signature: `r ‖ s` for ES256) is this key's over `signingInput`.
    func verify(signature: [UInt8], signingInput: [UInt8]) -> Bool {
        verifier.verify(jwsSignature: signature, signingInput: signingInput)
    }
}
