import Domain
import GRPC
import HTTPMessages
import JSON
import ServiceContracts

/// An error response as apps see it: an HTTP status and an `application/problem+json` body
/// `{type, title, status, code, reason?, detail?}`. `code` is stable; nothing here carries secrets or internals.
public struct APIProblem: Error, Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// The stable, machine-readable code (docs/api.md's table: the domain's, plus the protocol-level codes listed in
    /// ``Code``).
    public var code: String
    /// The WebAuthn check that failed, when one did.
    public var reason: String?
    /// A human-readable explanation, safe to show.
    public var detail: String?
    /// Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`).
    public var headers: [(String, String)]

    /// Creates a problem.
    public init(
        status: Int, code: String, reason: String? = nil, detail: String? = nil, headers: [(String, String)] = []
    ) {
        self.status = status
        self.code = code
        self.reason = reason
        self.detail = detail
        self.headers = headers
    }

    public static func == (lhs: APIProblem, rhs: APIProblem) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.reason == rhs.reason && lhs.detail == rhs.detail
    }

    /// The codes the gateway answers with beyond the domain's own.
    public enum Code {
        /// The body is over the limit (413).
        public static let payloadTooLarge = "payload_too_large"
        /// The body is not JSON (415).
        public static let unsupportedMediaType = "unsupported_media_type"
        /// The path exists, but not with this method (405).
        public static let methodNotAllowed = "method_not_allowed"
        /// The request head is over the limit (431).
        public static let headerFieldsTooLarge = "header_fields_too_large"
        /// The request did not arrive in time (408).
        public static let requestTimeout = "request_timeout"
        /// An HTTP feature the gateway does not support (501, 505).
        public static let notImplemented = "not_implemented"
        /// Something failed that the client cannot fix (500).
        public static let internalError = "internal_error"
    }

    /// 400 invalid_request with a detail naming what was wrong.
    public static func invalidRequest(_ detail: String) -> APIProblem {
        APIProblem(status: 400, code: DomainError.Code.invalidRequest.rawValue, detail: detail)
    }

    /// 401 unauthenticated, with the `WWW-Authenticate` challenge.
    public static func unauthenticated(_ detail: String = "A valid bearer token is required.") -> APIProblem {
        APIProblem(
            status: 401, code: DomainError.Code.unauthenticated.rawValue, detail: detail,
            headers: [("www-authenticate", "Bearer")])
    }

    /// 404 not_found.
    public static let notFound = APIProblem(
        status: 404, code: DomainError.Code.notFound.rawValue, detail: "No such resource.")

    /// 405 with the methods the path allows.
    public static func methodNotAllowed(allowed: [String]) -> APIProblem {
        APIProblem(
            status: 405, code: Code.methodNotAllowed, detail: "This path does not support the method.",
            headers: [("allow", allowed.joined(separator: ", "))])
    }

    /// 413 payload_too_large.
    public static let payloadTooLarge = APIProblem(
        status: 413, code: Code.payloadTooLarge, detail: "The request body is larger than 64 KiB.")

    /// 415 unsupported_media_type.
    public static let unsupportedMediaType = APIProblem(
        status: 415, code: Code.unsupportedMediaType, detail: "The request body must be application/json.")

    /// 429 rate_limited with `Retry-After`.
    public static func rateLimited(retryAfterSeconds: Int) -> APIProblem {
        APIProblem(
            status: 429, code: DomainError.Code.rateLimited.rawValue, detail: "Too many attempts; try again later.",
            headers: [("retry-after", String(retryAfterSeconds))])
    }

    /// How long a client is asked to wait before it tries an unavailable request again: about one of the
    /// services' database checks (every 2 s), after which a broken replica has left the rotation.
    public static let unavailableRetryAfterSeconds = 2

    /// 503 unavailable, with `Retry-After`.
    public static let unavailable = APIProblem(
        status: 503, code: DomainError.Code.unavailable.rawValue, detail: "A backend service cannot be reached.",
        headers: [("retry-after", String(unavailableRetryAfterSeconds))])

    /// 500 internal_error.
    public static let internalError = APIProblem(
        status: 500, code: Code.internalError, detail: "The request could not be completed.")

    /// The problem for a request the HTTP/1.1 parser refused (status 400, 413, 431, 501 or 505).
    /// The problem for a request the server could not read.
    public static func refusal(status: Int) -> APIProblem {
        switch status {
        case 408: APIProblem(status: 408, code: Code.requestTimeout, detail: "The request was not received in time.")
        case 413: payloadTooLarge
        case 431: APIProblem(status: 431, code: Code.headerFieldsTooLarge, detail: "The request head is too large.")
        case 501: APIProblem(status: 501, code: Code.notImplemented, detail: "The transfer coding is not supported.")
        case 505: APIProblem(status: 505, code: Code.notImplemented, detail: "The HTTP version is not supported.")
        default: invalidRequest("The HTTP request is malformed.")
        }
    }

    /// The `type` URI: a stable name per code.
    public var type: String { "https://passkey.example/problems/" + code.replacingOccurrences(of: "_", with: "-") }

    /// The title: the status's reason phrase.
    public var title: String { HTTPResponse.reasonPhrase(status) }

    /// The JSON body.
    public var body: JSONValue {
        var object: JSONObject = [
            "type": .string(type), "title": .string(title), "status": .integer(status), "code": .string(code),
        ]
        if let reason { object["reason"] = .string(reason) }
        if let detail { object["detail"] = .string(detail) }
        return .object(object)
    }

    /// The HTTP response carrying this problem.
    public var response: HTTPResponse {
        var headers = HTTPHeaders([("content-type", "application/problem+json"), ("cache-control", "no-store")])
        for (name, value) in self.headers { headers.add(name, value) }
        return HTTPResponse(status: status, headers: headers, body: body.serialized())
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: Character, with replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}

/// Which WebAuthn ceremony a route finishes: a failed check is `verification_failed` (400) on registration and
/// `invalid_credentials` (401) on sign-in, whichever of the two the service reported.
public enum Ceremony: Sendable {
    case registration
    case authentication
}

/// The one table from a service's failure to the JSON problem apps see.
public enum ProblemMapping {
    /// The HTTP status for each domain error code.
    public static func status(for code: DomainError.Code) -> Int {
        switch code {
        case .invalidRequest: 400
        case .verificationFailed: 400
        case .invalidCode: 400
        case .weakPassword: 400
        case .unauthenticated, .invalidCredentials: 401
        case .forbidden, .accountDisabled: 403
        case .notFound: 404
        case .emailTaken, .credentialAlreadyRegistered, .lastSignInMethod, .conflict: 409
        case .challengeUnavailable: 410
        case .rateLimited: 429
        case .unavailable: 503
        }
    }

    /// The problem for a domain error, in the context of a ceremony when the route finishes one.
    public static func problem(for error: DomainError, ceremony: Ceremony? = nil) -> APIProblem {
        var code = error.code
        if let ceremony, code == .verificationFailed || code == .invalidCredentials {
            code = ceremony == .registration ? .verificationFailed : .invalidCredentials
        }
        var problem = APIProblem(status: status(for: code), code: code.rawValue, reason: error.reason)
        // Domain messages are written to be shown; the ones that could tell sign-in failures apart are not used.
        // An `unavailable` with a reason says what the client must do next (`challenge_spent`: start again).
        let showsMessage =
            code == error.code
            && ([.invalidRequest, .forbidden, .verificationFailed, .conflict, .weakPassword].contains(code)
                || (code == .unavailable && error.reason != nil) || (code == .lastSignInMethod && error.reason != nil))
        problem.detail = showsMessage && !error.message.isEmpty ? error.message : detail(for: code)
        if code == .rateLimited { problem.headers = [("retry-after", String(error.retryAfterSeconds ?? 1))] }
        if code == .unavailable { problem.headers = [("retry-after", String(APIProblem.unavailableRetryAfterSeconds))] }
        if code == .unauthenticated { problem.headers = [("www-authenticate", "Bearer")] }
        return problem
    }

    /// The problem for a failed call: the domain error the service threw when there is one, otherwise by gRPC
    /// status (a service that cannot be reached or does not answer in time is 503, and so is one that refused the
    /// gateway itself: UNAUTHENTICATED or PERMISSION_DENIED without a domain error is its caller policy refusing
    /// the gateway's certificate, which no app can fix).
    public static func problem(for error: RPCError, ceremony: Ceremony? = nil) -> APIProblem {
        if let domain = ServiceErrors.domainError(from: error) { return problem(for: domain, ceremony: ceremony) }
        switch error.code {
        case .unavailable, .deadlineExceeded, .cancelled, .resourceExhausted, .unimplemented, .unauthenticated,
            .permissionDenied:
            return .unavailable
        case .invalidArgument: return .invalidRequest("The request was refused.")
        case .notFound: return .notFound
        default: return .internalError
        }
    }

    /// A fixed, safe explanation per code (service messages stay in the log).
    static func detail(for code: DomainError.Code) -> String {
        switch code {
        case .invalidRequest: "The request is malformed or has missing or mistyped fields."
        case .emailTaken: "The email address already belongs to an account."
        case .credentialAlreadyRegistered: "This passkey is already registered."
        case .lastSignInMethod: "This is the account's only way to sign in."
        case .notFound: "No such resource."
        case .challengeUnavailable: "The challenge is unknown, expired or already used; start again."
        case .unauthenticated: "A valid bearer token is required."
        case .invalidCredentials: "The sign-in could not be verified."
        case .forbidden: "This session may not do this."
        case .verificationFailed: "The passkey registration could not be verified."
        case .invalidCode:
            "The code is wrong, expired, already used or was tried too often; request a new one and try again."
        case .rateLimited: "Too many attempts; try again later."
        case .unavailable: "A backend service cannot be reached."
        case .accountDisabled: "This account is disabled; contact the service's support."
        case .conflict: "The change conflicts with the resource's current state."
        case .weakPassword: "This password is too easy to guess; choose another."
        }
    }
}
