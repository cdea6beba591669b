import Domain
import GRPC

/// How a `DomainError` crosses a gRPC call, in one table each way.
///
/// The status code says what kind of failure it was, for any gRPC client; the trailers `error-code` and
/// `error-reason` carry the exact domain code and WebAuthn reason, which the gateway turns into its JSON problem.
public enum ServiceErrors {
    /// The trailer that carries `DomainError.Code.rawValue`.
    public static let codeKey = "error-code"
    /// The trailer that carries the WebAuthn reason code, when a check failed.
    public static let reasonKey = "error-reason"
    /// The trailer that carries a `rateLimited` refusal's seconds until a retry can be admitted.
    public static let retryAfterKey = "error-retry-after"

    /// The gRPC status for each domain error.
    public static func statusCode(for code: DomainError.Code) -> GRPCStatusCode {
        switch code {
        case .invalidRequest: .invalidArgument
        case .emailTaken, .credentialAlreadyRegistered: .alreadyExists
        case .lastSignInMethod, .challengeUnavailable, .conflict: .failedPrecondition
        case .notFound: .notFound
        case .unauthenticated, .invalidCredentials: .unauthenticated
        case .forbidden, .accountDisabled: .permissionDenied
        case .verificationFailed, .invalidCode, .weakPassword: .invalidArgument
        case .rateLimited: .resourceExhausted
        case .unavailable: .unavailable
        }
    }

    /// The error a handler throws for `error`.
    public static func rpcError(_ error: DomainError) -> RPCError {
        var metadata = Metadata()
        metadata.add(codeKey, error.code.rawValue)
        if let reason = error.reason { metadata.add(reasonKey, reason) }
        if let seconds = error.retryAfterSeconds { metadata.add(retryAfterKey, String(seconds)) }
        return RPCError(code: statusCode(for: error.code), message: error.message, metadata: metadata)
    }

    /// The domain error a caller reads back from a failed call, or nil when the failure did not come from a
    /// handler's domain error (a transport failure, a deadline, an internal error).
    public static func domainError(from error: RPCError) -> DomainError? {
        guard let raw = error.metadata[codeKey], let code = DomainError.Code(rawValue: raw) else { return nil }
        // A retry time that is not a small positive number is ignored rather than passed on to a client.
        let retryAfter = error.metadata[retryAfterKey].flatMap { Int($0) }.flatMap {
            (1...86_400).contains($0) ? $0 : nil
        }
        return DomainError(code, error.message, reason: error.metadata[reasonKey], retryAfterSeconds: retryAfter)
    }
}
