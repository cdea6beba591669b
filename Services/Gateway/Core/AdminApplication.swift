import HTTPMessages
import HTTPServer
import Observability
import ServiceContracts

/// The admin API, served only on `ADMIN_LISTEN` (never on the public listener): operators find accounts, read
/// them and the audit trail, and revoke sessions and passkeys, each call authenticated by an admin token that
/// session-service checks. Its document is `GET /admin/v1/openapi.json` on the same listener. A request goes through
/// the same ``RouteResponder`` as the public API's, with the admin ``middleware``, to its route's handler
/// (``routes``).
public final class AdminApplication: HTTPResponder {
    /// The gateway's bookkeeping: its calls to the services, limits, metrics, logs and client addresses.
    let gateway: GatewayApplication
    private let responder: RouteResponder<AdminRoute>

    /// The largest body an admin call takes (a webhook's registration).
    static let bodyLimit = 8192
    /// The longest path parameter an admin route reads.
    static let parameterLimit = 1400

    public init(gateway: GatewayApplication) {
        self.gateway = gateway
        responder = RouteResponder(
            router: Self.router, pages: AdminPage(), addressResolver: gateway.addressResolver,
            chain: Self.middleware(gateway: gateway))
    }

    /// The admin listener's middleware, outermost first: the request's metrics and common headers, failures as
    /// problems; then what the route declares: the per-address limit, the admin token, the body (a JSON object of at
    /// most ``bodyLimit`` bytes, or none), the query's names and the path parameters' lengths.
    static func middleware(gateway: GatewayApplication) -> MiddlewareChain<AdminRoute> {
        typealias Chain = MiddlewareChain<AdminRoute>
        return Chain([
            Chain.step(
                RequestMetrics<AdminRoute>(
                    metrics: gateway.metrics,
                    requests: .init(
                        name: "gateway_admin_requests_total", help: "Admin API requests by route and status."),
                    durations: .init(
                        name: "gateway_admin_request_duration_seconds",
                        help: "Admin API request latency by route and status."),
                    headers: [("x-content-type-options", "nosniff"), ("cache-control", "no-store")])),
            Chain.step(
                ProblemResponses<AdminRoute>(logger: gateway.logger, failureEvent: "admin.request_failed")),
            Chain.step(
                RouteRateLimits<AdminRoute>(limits: gateway.limits, buckets: gateway.limits.buckets(for:))),
            Chain.step(AdminTokenAdmission()),
            Chain.step(
                BodyPolicy<AdminRoute>(
                    reading: .applicationJSON(byteLimit: bodyLimit),
                    unexpectedBodyDetail: "Admin calls here take no body.")),
            Chain.step(AdminQueryPolicy()),
            Chain.step(PathParameterLimit<AdminRoute>(byteLimit: parameterLimit)),
        ])
    }

    /// Every admin route as `METHOD pattern`.
    public static var routeNames: [String] { router.routeNames }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        await responder.respond(to: request, application: self)
    }

    public func refusal(status: Int, detail: String) -> HTTPResponse {
        gateway.refusal(status: status, detail: detail)
    }

    /// The typed client of session-service's admin API for one admin call.
    func adminService(_ context: AdminContext) -> AdminServiceClient<BackendClient> {
        gateway.backend.adminService(for: context.origin)
    }
}
