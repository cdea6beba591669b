/// Why a presented access token was refused. The codes are stable; the reason is safe to show to the token's
/// holder and to log.
public struct AccessTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    public enum Code: String, Sendable {
        /// Not three base64url parts, over the size limit, or JSON that is not the expected objects.
        case malformed
        /// `alg` is not one the verifier allows (including `none` and every symmetric algorithm).
        case algorithmNotAllowed = "algorithm_not_allowed"
        /// `typ` is not `at+jwt`.
        case wrongType = "wrong_type"
        /// No key with the token's `kid` is known (or the key no longer verifies).
        case unknownKey = "unknown_key"
        /// The signature does not verify.
        case signatureInvalid = "signature_invalid"
        /// `exp` is past.
        case expired
        /// `nbf` or `iat` is in the future beyond the leeway.
        case notYetValid = "not_yet_valid"
        /// `iss` is not the expected issuer.
        case wrongIssuer = "wrong_issuer"
        /// `aud` does not contain the expected audience.
        case wrongAudience = "wrong_audience"
        /// A claim the profile requires is missing or of the wrong type.
        case missingClaim = "missing_claim"
    }

    /// What was wrong.
    public let code: Code
    /// A human explanation.
    public let reason: String

    /// An error with its code and reason.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}
