import GRPCHealth
import HTTPMessages
import HTTPServer
import Observability

/// A service's HTTP endpoint for operators: `GET /metrics` (Prometheus text) and `GET /healthz` (200 while the
/// service reports SERVING, 503 otherwise). Served on `METRICS_LISTEN` when it is set.
struct OperationsEndpoint: HTTPResponder {
    let metrics: MetricsRegistry
    let health: HealthService

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: HTTPHeaders([("allow", "GET, HEAD")]))
        }
        switch request.path {
        case "/metrics":
            return HTTPResponse(
                status: 200, headers: HTTPHeaders([("content-type", "text/plain; version=0.0.4; charset=utf-8")]),
                body: Array(metrics.exposition().utf8))
        case "/healthz":
            let serving = health.status(of: "") == .serving
            return HTTPResponse(
                status: serving ? 200 : 503, headers: HTTPHeaders([("content-type", "text/plain; charset=utf-8")]),
                body: Array((serving ? "serving\n" : "not serving\n").utf8))
        default:
            return HTTPResponse(status: 404)
        }
    }
}
