import Encoding
import HTTPMessages

/// The pages a listener serves beside its routes, to GET and HEAD.
protocol ListenerPages: Sendable {
    /// The page for a GET or HEAD of `path`, if `path` is one of them.
    func response(method: String, path: String) -> HTTPResponse?
    /// Whether `path` is one of the pages (other methods get 405).
    func serves(_ path: String) -> Bool
}

/// One listener's responder, the same for the public and the admin API: routes the request (a request no route
/// matches gets a fallback route: its page, 404 or 405), makes its ``RequestContext``, and runs the listener's
/// ``MiddlewareChain`` ending in the route's handler.
struct RouteResponder<Route: RouteDeclaration>: Sendable {
    let router: Router<Route>
    let pages: any ListenerPages
    let addressResolver: ClientAddressResolver
    let chain: MiddlewareChain<Route>

    func respond(to request: HTTPRequest, application: Route.Application) async -> HTTPResponse {
        let context = self.context(for: request, application: application)
        do {
            return try await chain.run(context)
        } catch let problem as APIProblem {
            return problem.response
        } catch {
            // Unreached: every chain maps failures to responses (``ProblemResponses``).
            return APIProblem.internalError.response
        }
    }

    /// The context `request` starts the chain with: its route (or fallback), request ID and client.
    func context(for request: HTTPRequest, application: Route.Application) -> RequestContext<Route> {
        let matched: (route: Route, name: String, pattern: String?, parameters: [String: String])
        switch router.match(method: request.method, path: request.path) {
        case .found(let route, let name, let parameters):
            matched = (route, name, route.path, parameters)
        case .methodNotAllowed(let allowed):
            matched = (Route.fallback { throw APIProblem.methodNotAllowed(allowed: allowed) }, "unmatched", nil, [:])
        case .notFound:
            if let page = pages.response(method: request.method, path: request.path) {
                matched = (Route.fallback { page }, "page", nil, [:])
            } else if pages.serves(request.path) {
                matched = (
                    Route.fallback { throw APIProblem.methodNotAllowed(allowed: ["GET", "HEAD"]) }, "unmatched", nil,
                    [:]
                )
            } else {
                matched = (Route.fallback { throw APIProblem.notFound }, "unmatched", nil, [:])
            }
        }
        return RequestContext(
            request: request, application: application, route: matched.route, routeName: matched.name,
            pattern: matched.pattern,
            parameters: matched.parameters, requestID: Self.requestID(from: request.headers["x-request-id"]),
            client: addressResolver.client(
                peer: request.remoteAddress, forwardedFor: request.headers.values("x-forwarded-for")))
    }

    /// The client's `X-Request-ID` when it is short and plain, else a new random one.
    static func requestID(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 64,
            header.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
            })
        {
            return header
        }
        let value = IdentifierRandom.next()
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
