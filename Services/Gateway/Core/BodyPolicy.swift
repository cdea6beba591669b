import HTTPMessages

/// Enforces the body a route declares (``RouteDeclaration/body``) before its handler runs, and puts a JSON body,
/// parsed, in ``RequestContext/body``: the one place a body is checked, so a route's declaration cannot drift from
/// its handler.
struct BodyPolicy<Route: RouteDeclaration>: RouteMiddleware {
    /// How a listener reads a JSON body.
    enum JSONReading: Sendable {
        /// `application/json` or any `+json` type (``isJSONContentType(_:)``); 415 for another type, 400 for an
        /// empty body where one is required (the public API).
        case anyJSONType
        /// A content type that starts with `application/json`, of at most `byteLimit` bytes (the admin API).
        case applicationJSON(byteLimit: Int)
    }

    let reading: JSONReading
    /// The detail of the 400 a body sent to a route that takes none gets.
    let unexpectedBodyDetail: String

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        switch context.route.body {
        case .ignored: break
        case .none:
            guard context.request.body.isEmpty else { throw APIProblem.invalidRequest(unexpectedBodyDetail) }
        case .json: context.body = try read(context.request, emptyAllowed: false)
        case .optionalJSON: context.body = try read(context.request, emptyAllowed: true)
        }
        return try await next(context)
    }

    /// The JSON object of `request`'s body: 415 when it is not JSON, 400 when it is not a JSON object; an empty body
    /// reads as `{}` when `emptyAllowed`.
    func read(_ request: HTTPRequest, emptyAllowed: Bool) throws(APIProblem) -> JSONBody {
        let contentType = request.headers["content-type"]
        switch reading {
        case .anyJSONType:
            if request.body.isEmpty {
                if let contentType, !isJSONContentType(contentType) { throw .unsupportedMediaType }
                guard emptyAllowed else { throw .invalidRequest("A JSON body is required.") }
                return try JSONBody(bytes: [], emptyAllowed: true)
            }
            guard isJSONContentType(contentType) else { throw .unsupportedMediaType }
            return try JSONBody(bytes: request.body)
        case .applicationJSON(let byteLimit):
            guard contentType?.lowercased().hasPrefix("application/json") == true else {
                throw .unsupportedMediaType
            }
            guard request.body.count <= byteLimit else { throw .invalidRequest("The body is over \(byteLimit) bytes.") }
            return try JSONBody(bytes: request.body, emptyAllowed: emptyAllowed)
        }
    }
}
