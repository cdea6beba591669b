import AccessTokens

/// Why ``PasskeySessionVerifier`` refused a token: a stable code for machines, a reason for the log, and where it
/// was raised. The reason never contains the token or key material, but may name the key set URL and why fetching
/// it failed: a client is told the code at most.
public struct SessionVerifierError: Error, Sendable, CustomStringConvertible {
    /// What was wrong. Raw values are stable, snake_case, and the same as `AccessTokenError`'s where they overlap.
    public enum Code: String, Sendable, CaseIterable {
        /// Over the size limit, not three base64url parts, or JSON that is not the expected objects; also a header
        /// that embeds or points at a key (`jwk`, `jku`, `x5u`, `x5c`) or marks extensions critical (`crit`).
        case malformed
        /// Not a JWT at all: a refresh token (`prt_…`) or an opaque bearer token. Check those online.
        case notAnAccessToken = "not_an_access_token"
        /// `alg` is not one the verifier allows (including `none` and every symmetric algorithm).
        case algorithmNotAllowed = "algorithm_not_allowed"
        /// `typ` is not `at+jwt`.
        case wrongType = "wrong_type"
        /// No key of the token's algorithm with its `kid` is in the key set, even after a refetch.
        case unknownKey = "unknown_key"
        /// The signature does not verify.
        case signatureInvalid = "signature_invalid"
        /// `exp` is past, beyond the leeway.
        case expired
        /// `nbf` or `iat` is in the future, beyond the leeway.
        case notYetValid = "not_yet_valid"
        /// `iss` is not the configured issuer.
        case wrongIssuer = "wrong_issuer"
        /// `aud` does not contain the configured audience.
        case wrongAudience = "wrong_audience"
        /// A claim the profile requires is missing or of the wrong type.
        case missingClaim = "missing_claim"
        /// No key set could be fetched yet (the JWKS URL is unreachable, answers an error, or serves no JWKS).
        case keySetUnavailable = "key_set_unavailable"
    }

    /// What was wrong.
    public let code: Code
    /// A human explanation, for the log.
    public let reason: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// An error with its code and reason, recording the caller's location.
    public init(_ code: Code, _ reason: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    /// The same refusal as the token format reported it.
    init(_ error: AccessTokenError, file: String = #fileID, line: Int = #line) {
        let code: Code =
            switch error.code {
            case .malformed: .malformed
            case .algorithmNotAllowed: .algorithmNotAllowed
            case .wrongType: .wrongType
            case .unknownKey: .unknownKey
            case .signatureInvalid: .signatureInvalid
            case .expired: .expired
            case .notYetValid: .notYetValid
            case .wrongIssuer: .wrongIssuer
            case .wrongAudience: .wrongAudience
            case .missingClaim: .missingClaim
            }
        self.init(code, error.reason, file: file, line: line)
    }

    /// "code: reason (file:line)", for logs.
    public var description: String { "\(code.rawValue): \(reason) (\(file):\(line))" }
}
