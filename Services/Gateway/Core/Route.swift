import HTTPMessages
import ServiceContracts

/// A route of the public API as one value: its method and path, the client-address limit it counts against, the
/// sessions it admits and the body it takes, each enforced by the public listener's middleware before the handler
/// runs (``GatewayApplication/middleware``: ``RouteRateLimits``, then ``SessionAdmission``, then ``BodyPolicy``), and
/// its handler. The router, the route names of metrics and traces, and the check of the table against
/// `openapi.json` (every route documented with its method, authentication and body, every documented operation
/// routed) all come from ``GatewayApplication/routes``.
struct Route: RouteDeclaration {
    typealias Application = GatewayApplication

    /// The client-address limit checked first (the limits keyed by an email or an account are the handlers', as
    /// they need the body or the session).
    enum Limit: Sendable {
        case none
        /// Sign-ups: `PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS` and `_GLOBAL`.
        case signUp
        /// Passkey ceremony starts: `PASSKEY_RATE_LIMIT_START_PER_ADDRESS` and `_GLOBAL`.
        case start
        /// Passkey finishes: `PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS`.
        case passkey
        /// Session refreshes: the same rate as passkey finishes, in a bucket of their own.
        case refresh
    }

    /// Whether the route takes a bearer session, and which.
    enum Session: Sendable {
        case none
        case required(AdmittedSessions)
        /// A full session whose sign-in (or last reauthentication) is within `PASSKEY_REAUTHENTICATION_WINDOW`:
        /// a sensitive change. An older one gets 403 `reauthentication_required`.
        case recentSignIn
    }

    let method: String
    let path: String
    let limit: Limit
    let session: Session
    let body: RouteBody
    let handle: @Sendable (GatewayApplication, RequestContext<Route>) async throws -> HTTPResponse

    /// A route; `body` `.ignored` (the default) for one that reads none.
    init(
        _ method: String, _ path: String, limit: Limit = .none, session: Session = .none, body: RouteBody = .ignored,
        handle: @escaping @Sendable (GatewayApplication, RequestContext<Route>) async throws -> HTTPResponse
    ) {
        self.method = method
        self.path = path
        self.limit = limit
        self.session = session
        self.body = body
        self.handle = handle
    }

    static func fallback(_ respond: @escaping @Sendable () throws -> HTTPResponse) -> Route {
        Route("", "") { _, _ in try respond() }
    }
}

/// A request to a public route, as its middleware and handler see it.
typealias PublicContext = RequestContext<Route>
