import HTTPMessages
import HTTPServer
import Observability

/// The gateway's operators' listener (`GATEWAY_METRICS_LISTEN`): `GET /metrics` in the Prometheus text format, and
/// nothing else. Kept off the public listener so that what the metrics tell (routes, outcomes, rates) is for the
/// monitoring network only.
struct MetricsEndpoint: HTTPResponder {
    let metrics: MetricsRegistry

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        guard request.path == "/metrics" else { return HTTPResponse(status: 404) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, headers: HTTPHeaders([("allow", "GET, HEAD")]))
        }
        return Self.exposition(metrics)
    }

    /// The registry's samples as Prometheus text.
    static func exposition(_ metrics: MetricsRegistry) -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: HTTPHeaders([("content-type", "text/plain; version=0.0.4; charset=utf-8")]),
            body: Array(metrics.exposition().utf8))
    }
}
