import HTTPMessages
import Observability

/// CORS for the web origins of `PASSKEY_CORS_ORIGINS`: a preflight from one of them is answered, and responses to
/// it allow its credentials and expose the headers apps read. Any other origin gets exactly what it got without
/// CORS (a preflight is then 405, and browsers keep the response from the page).
struct CrossOrigin: Sendable {
    let allowed: Set<String>
    /// How long a browser may cache a preflight, in seconds.
    static let maxAge = "600"
    static let methods = "GET, POST, PATCH, DELETE"
    static let headers = "authorization, content-type, x-request-id, traceparent"
    static let exposed = "x-request-id, retry-after, traceresponse, www-authenticate"

    init(origins: [String]) { allowed = Set(origins) }

    /// The listed origin `request` comes from, if any.
    func origin(of request: HTTPRequest) -> String? {
        guard !allowed.isEmpty, let origin = request.headers["origin"], allowed.contains(origin) else { return nil }
        return origin
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`) from a listed origin, or nil for
    /// any other request.
    func preflight(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.method == "OPTIONS", let origin = origin(of: request),
            request.headers["access-control-request-method"] != nil
        else { return nil }
        var response = HTTPResponse(status: 204)
        response.headers.set("access-control-allow-origin", origin)
        response.headers.set("access-control-allow-credentials", "true")
        response.headers.set("access-control-allow-methods", Self.methods)
        response.headers.set("access-control-allow-headers", Self.headers)
        response.headers.set("access-control-max-age", Self.maxAge)
        response.headers.set("vary", "Origin")
        return response
    }

    /// `response` with the CORS headers for a listed origin; others' responses gain only `Vary: Origin`.
    func decorate(_ response: inout HTTPResponse, for request: HTTPRequest) {
        guard !allowed.isEmpty else { return }
        response.headers.set("vary", "Origin")
        guard let origin = origin(of: request) else { return }
        response.headers.set("access-control-allow-origin", origin)
        response.headers.set("access-control-allow-credentials", "true")
        response.headers.set("access-control-expose-headers", Self.exposed)
    }
}

/// CORS as middleware, outermost on the public listener: a listed origin's preflight is answered here (counted as
/// route `preflight`, with nothing else run), and every other response gets ``CrossOrigin/decorate(_:for:)``.
struct CrossOriginMiddleware: RouteMiddleware {
    let crossOrigin: CrossOrigin
    let metrics: MetricsRegistry

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        if let preflight = crossOrigin.preflight(context.request) {
            metrics.increment(
                "gateway_http_requests_total", help: "HTTP requests by route and status.",
                labels: ["route": "preflight", "status": "204"])
            return preflight
        }
        var response = try await next(context)
        crossOrigin.decorate(&response, for: context.request)
        return response
    }
}
