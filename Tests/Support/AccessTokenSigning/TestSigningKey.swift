import AccessTokens
import Crypto
import Encoding
import JSON

/// A private key that signs access tokens in tests and benchmarks, as the issuer's do (`Crypto`'s `PrivateKey`):
/// P-256 for ES256, Ed25519 for EdDSA. Its public half is a JWK whose `kid` is its RFC 7638 thumbprint.
public final class TestSigningKey: Sendable {
    /// The algorithm the key signs with.
    public let algorithm: JWSAlgorithm
    /// The public key as the issuer's JWKS would publish it.
    public let publicKey: JSONWebKey
    private let key: PrivateKey

    /// A new random key; traps when OpenSSL cannot make one (nothing a test could go on without).
    public init(_ algorithm: JWSAlgorithm) {
        do {
            key = try PrivateKey.generate(algorithm == .es256 ? .p256 : .ed25519)
            publicKey = try key.jsonWebKey()
        } catch {
            preconditionFailure("a test signing key: \(error)")
        }
        self.algorithm = algorithm
    }

    /// The key's ID (`kid`).
    public var keyID: String { publicKey.keyID }

    /// The JWS signature of `message`: `r ‖ s` for ES256, the 64-byte signature for EdDSA.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        do {
            return try key.sign(message)
        } catch {
            preconditionFailure("signing: \(error)")
        }
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
}
