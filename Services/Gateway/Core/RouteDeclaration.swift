import HTTPMessages

/// What a route value of either listener declares for the middleware to enforce: its method and path, its body, and
/// its handler. ``Route`` (the public API) and ``AdminRoute`` (the admin API) add their own declarations (limits,
/// sessions, tokens, query names), each enforced by one middleware.
protocol RouteDeclaration: Sendable {
    /// What the handler is a method of.
    associatedtype Application: Sendable

    var method: String { get }
    var path: String { get }
    var body: RouteBody { get }
    var handle: @Sendable (Application, RequestContext<Self>) async throws -> HTTPResponse { get }

    /// A route that declares nothing and answers with `respond`: what a listener runs for a request no route
    /// matched (a page, 404 or 405), so that it passes the same chain.
    static func fallback(_ respond: @escaping @Sendable () throws -> HTTPResponse) -> Self
}

/// The body a route takes, read by ``BodyPolicy`` before the handler runs; the handler finds a JSON body in
/// ``RequestContext/body``.
enum RouteBody: Sendable {
    /// No body is read: whatever is sent is ignored.
    case ignored
    /// No body: a request with one is refused (400).
    case none
    /// A JSON object, required.
    case json
    /// A JSON object, or an empty body that reads as `{}`.
    case optionalJSON
}

extension Router where Handler: RouteDeclaration {
    /// A router of `routes`, each under its method and path.
    init(routes: [Handler]) {
        self.init()
        for route in routes { add(route.method, route.path, route) }
    }
}
