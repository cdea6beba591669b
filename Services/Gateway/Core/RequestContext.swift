import Glibc
import HTTPMessages
import JSON
import ServiceContracts

/// The wall clock in Unix milliseconds.
public func unixMillisecondsNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

/// One request on its way through a listener's middleware to its route's handler: what the router matched, and what
/// the middleware has learned (the session or admin token it admitted, the body and query it read).
///
/// A reference, so that the chain hands one pointer from middleware to middleware instead of copying the request and
/// all it carries at every step. It is unchecked `Sendable` because one request's context is used by one task, one
/// step after another: each middleware writes what it learned before it calls the next, which reads it.
final class RequestContext<Route: RouteDeclaration>: @unchecked Sendable {
    /// The request.
    let request: HTTPRequest
    /// The listener's application, whose methods the route's handler is.
    let application: Route.Application
    /// The route that matched, or the fallback that answers an unmatched request.
    let route: Route
    /// The route as metrics, logs and spans name it: `METHOD pattern`, or `page` or `unmatched` for a fallback.
    let routeName: String
    /// The matched route's path pattern; nil for a fallback.
    let pattern: String?
    /// The path parameters, percent-decoded.
    let parameters: [String: String]
    /// The request's ID (the client's `X-Request-ID` when well-formed, else a new one); echoed in the response.
    let requestID: String
    /// The client, as ``ClientAddressResolver`` decided it.
    let client: ClientAddressResolver.Client
    /// The session ``SessionAdmission`` validated, for a route that admits one.
    var session: SessionInfo? = nil
    /// The admin token ``AdminTokenAdmission`` read, for an admin route that takes one.
    var adminToken: String = ""
    /// The JSON body ``BodyPolicy`` read; `{}` for a route that takes none.
    var body = JSONBody(object: JSONObject())
    /// The query ``AdminQueryPolicy`` read, its names checked against the admin route's.
    var query = AdminQuery()

    init(
        request: HTTPRequest, application: Route.Application, route: Route, routeName: String, pattern: String?,
        parameters: [String: String], requestID: String, client: ClientAddressResolver.Client
    ) {
        self.request = request
        self.application = application
        self.route = route
        self.routeName = routeName
        self.pattern = pattern
        self.parameters = parameters
        self.requestID = requestID
        self.client = client
    }

    /// The client address (see ``ClientAddressResolver``).
    var clientAddress: String { client.address }
    /// What the per-address rate limits count the client as: its address, or its IPv6 block
    /// (``ClientAddressResolver/Client/limitKey``), worked out when a limit asks.
    var clientLimitKey: String { client.limitKey }

    /// The path parameter `name` of the matched pattern (the router never matches an empty one).
    func parameter(_ name: String) -> String { parameters[name] ?? "" }

    /// The session the route's middleware validated; 401 for a route that admits none (a programming error).
    func validatedSession() throws(APIProblem) -> SessionInfo {
        guard let session else { throw APIProblem.unauthenticated() }
        return session
    }
}
