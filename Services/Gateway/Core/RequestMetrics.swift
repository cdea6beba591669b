import HTTPMessages
import Observability
import RateLimiting

/// Counts and times every request of a listener by route and status, sets the headers every response of the listener
/// carries (`X-Request-ID` first), and with a logger at debug level logs one line per request.
struct RequestMetrics<Route: RouteDeclaration>: RouteMiddleware {
    /// A metric's name and help text.
    struct Metric: Sendable {
        let name: String
        let help: String
    }

    let metrics: MetricsRegistry
    let requests: Metric
    let durations: Metric
    /// The headers set on every response after `X-Request-ID`.
    let headers: [(String, String)]
    /// Where the line per request goes; nil for none.
    var logger: Logger? = nil

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        let started = TokenBucketLimiter.monotonicSeconds()
        var response = try await next(context)
        response.headers.set("x-request-id", context.requestID)
        for (name, value) in headers { response.headers.set(name, value) }
        let elapsed = TokenBucketLimiter.monotonicSeconds() - started
        let status = String(response.status)
        metrics.increment(
            requests.name, help: requests.help, labels: ["route": context.routeName, "status": status])
        metrics.observe(
            durations.name, help: durations.help, labels: ["route": context.routeName, "status": status], elapsed)
        if let logger, logger.minimumLevel <= .debug {
            logger.log(
                .debug, "http.request",
                fields: [
                    ("request.id", context.requestID), ("route", context.routeName), ("status", status),
                    ("client.address", context.clientAddress), ("duration.ms", String(Int(elapsed * 1000))),
                ])
        }
        return response
    }
}
