import HTTPMessages
import ServiceContracts

/// A route of the public API as one value: its method and path, the per-address limit it counts against and the
/// sessions it admits (both applied by `GatewayApplication.dispatch` before the handler runs, in that order), whether
/// it reads a JSON body, and its handler. The router, the route names of metrics and traces, and the check of the
/// table against `openapi.json` (every route documented with its method, authentication and body, every documented
/// operation routed) all come from `GatewayApplication.routes`.
struct Route: Sendable {
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

    enum Body: Sendable {
        case none
        /// A JSON object, required.
        case json
        /// A JSON object, or an empty body that reads as `{}`.
        case optionalJSON
    }

    let method: String
    let path: String
    let limit: Limit
    let session: Session
    let body: Body
    let handle: @Sendable (GatewayApplication, RequestContext) async throws -> HTTPResponse

    init(
        _ method: String, _ path: String, limit: Limit = .none, session: Session = .none, body: Body = .none,
        handle: @escaping @Sendable (GatewayApplication, RequestContext) async throws -> HTTPResponse
    ) {
        self.method = method
        self.path = path
        self.limit = limit
        self.session = session
        self.body = body
        self.handle = handle
    }
}

extension RequestContext {
    /// The session the route's middleware validated; 401 for a route that admits none (a programming error).
    func validatedSession() throws(APIProblem) -> SessionInfo {
        guard let session else { throw APIProblem.unauthenticated() }
        return session
    }
}
