import Domain
import HTTPMessages
import ServiceContracts

/// Admits the bearer session a public route declares (``Route/session``) before its handler runs: 401 without a live
/// one (session-service's ValidateSession decides), 403 for a session signed in a way the route does not admit, 403
/// `reauthentication_required` on a `recentSignIn` route for a sign-in older than the window. The handler reads the
/// session from ``RequestContext/session``.
struct SessionAdmission: RouteMiddleware {
    let backend: BackendCallInterceptor
    let recentSignIn: RecentSignIn

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        switch context.route.session {
        case .none: break
        case .required(let admitted): context.session = try await authenticate(context, allowing: admitted)
        case .recentSignIn:
            let session = try await authenticate(context, allowing: .fullAccess)
            try recentSignIn.require(session)
            context.session = session
        }
        return try await next(context)
    }

    /// Resolves the bearer token to its live session through ValidateSession; 401 when missing or not live, and 403
    /// when the route does not admit sessions signed in that way (a recovery session, outside its passkey
    /// registration).
    func authenticate(_ context: RequestContext<Route>, allowing admitted: AdmittedSessions) async throws -> SessionInfo
    {
        guard let token = BearerToken.read(context.request.headers["authorization"]) else {
            throw APIProblem.unauthenticated()
        }
        var request = ValidateSessionRequest()
        request.accessToken = token
        let session = try await backend.sessionService(for: context.origin).validateSession(request, idempotent: true)
        guard admitted.admits(session.authenticationMethod) else {
            throw APIProblem(
                status: 403, code: DomainError.Code.forbidden.rawValue,
                detail: session.authenticationMethod == .recovery
                    ? "A recovery session can only register a new passkey." : "This session may not do this.")
        }
        return session
    }
}

/// Which sessions a route admits. Every route admits only sessions with full access (password and passkey sign-ins),
/// except the two passkey-registration steps of a recovery: a recovery session can do nothing else.
enum AdmittedSessions: Sendable {
    /// Password and passkey sessions.
    case fullAccess
    /// Full sessions and recovery sessions (starting a passkey registration).
    case fullAccessOrRecovery
    /// Recovery sessions only (finishing a recovery's passkey registration).
    case recoveryOnly

    /// Whether a session signed in by `method` (nil: unknown to this gateway) may use the route. Fails closed.
    func admits(_ method: AuthenticationMethod?) -> Bool {
        guard let method else { return false }
        switch self {
        case .fullAccess: return method.grantsFullAccess
        case .fullAccessOrRecovery: return true
        case .recoveryOnly: return method == .recovery
        }
    }
}

/// The rule of a sensitive change: the session signed in (or last reauthenticated) within
/// `PASSKEY_REAUTHENTICATION_WINDOW`. Routes marked `recentSignIn` have it applied by ``SessionAdmission``; adding a
/// passkey applies it in its handler, as its exceptions depend on the body.
struct RecentSignIn: Sendable {
    /// The code of the 403 a sensitive change answers a session whose sign-in is too old.
    static let reauthenticationRequired = "reauthentication_required"

    /// The window, in seconds.
    let window: Double
    /// The wall clock in Unix milliseconds.
    let now: @Sendable () -> Int64

    /// 403 `reauthentication_required` unless the session signed in (or reauthenticated) within the window. A
    /// session-service that does not send the time yet (during a rolling upgrade) is read as the session's creation.
    func require(_ session: SessionInfo) throws(APIProblem) {
        let signedIn = max(session.authenticatedAtUnixMilliseconds, session.createdAtUnixMilliseconds)
        let age = Double(now() - signedIn) / 1000
        guard age <= window else {
            throw APIProblem(
                status: 403, code: Self.reauthenticationRequired,
                detail: "This change needs a sign-in within the last \(Int(window / 60)) "
                    + "minutes: reauthenticate with a passkey or the password, then try again.")
        }
    }
}
