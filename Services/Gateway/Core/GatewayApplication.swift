import HTTPServer
import Configuration
import Domain
import Encoding
import GRPC
import Glibc
import HTTPMessages
import JSON
import Observability
import PasskeyPolicy
import WebAuthn
import PasskeyProviders
import Protobuf
import RateLimiting
import ServiceContracts
import Synchronization

/// Settings of the gateway's own behavior (the deployment's settings are ``GatewayConfiguration``).
public struct GatewaySettings: Sendable {
    /// The wall clock in Unix milliseconds.
    public var now: @Sendable () -> Int64 = { unixMillisecondsNow() }
    /// The monotonic clock the rate limiters use, in seconds.
    public var limiterClock: @Sendable () -> Double = TokenBucketLimiter.monotonicSeconds

    /// The defaults.
    public init() {}
}

/// The gateway's routes: authenticates bearer tokens, calls the services, and maps their answers to the JSON of
/// docs/api.md. Every request ends in a response; failures are problem+json.
public final class GatewayApplication: HTTPResponder {
    let configuration: GatewayConfiguration
    /// What the passkey options offer: the configured policy (`PASSKEY_ALGORITHMS`, user verification, ...), which
    /// verification-service enforces.
    let ceremonyOptions: CeremonyOptions
    let backends: any ServiceBackends
    let logger: Logger
    private let webPage: WebPage
    /// The registry the gateway's metrics are recorded in (served at `/metrics`).
    public let metrics: MetricsRegistry
    /// Makes each request's span: a trace is started here, or continued from the request's `traceparent`.
    let tracer: Tracer
    let settings: GatewaySettings
    private let addressResolver: ClientAddressResolver
    let passwordPerEmail: TokenBucketLimiter?
    let passwordPerAddress: TokenBucketLimiter?
    let passkeyPerAddress: TokenBucketLimiter?
    let refreshPerAddress: TokenBucketLimiter?
    let startPerAddress: TokenBucketLimiter?
    let startGlobal: TokenBucketLimiter?
    let signUpPerAddress: TokenBucketLimiter?
    let signUpGlobal: TokenBucketLimiter?
    let recoveryPerEmail: TokenBucketLimiter?
    let recoveryPerAddress: TokenBucketLimiter?
    private let wellKnown: [String: [UInt8]]
    /// The passkey providers' names and icons.
    let providers: ProviderDirectory
    /// CORS for `PASSKEY_CORS_ORIGINS`.
    let crossOrigin: CrossOrigin
    /// The JWKS, from session-service, refreshed at most every two seconds.
    let publishedKeys: PublishedKeyCache
    /// `/.well-known/openid-configuration`, made once.
    let discoveryDocument: [UInt8]
    /// What `/readyz` warns of (``GatewayConfiguration/relyingPartyIDWarning``), worked out once.
    private let relyingPartyIDWarning: String?
    /// `Strict-Transport-Security` when the gateway terminates TLS itself (`GATEWAY_TLS_CERTIFICATE`), else nil: behind
    /// a proxy that terminates it, the proxy sets it.
    private let strictTransportSecurity: String?
    /// During an outage every request fails the same way: one line per service and status per second is enough.
    private let failureLog = LogThrottle(interval: 1)

    /// Creates the application; nothing is called until requests arrive.
    public init(
        configuration: GatewayConfiguration, backends: any ServiceBackends, logger: Logger,
        metrics: MetricsRegistry, tracer: Tracer = .off, settings: GatewaySettings = GatewaySettings(),
        providers: PasskeyProviderCatalog? = nil
    ) {
        self.tracer = tracer
        self.providers = ProviderDirectory(
            catalog: providers ?? ((try? PasskeyProviderCatalog.shipped.get()) ?? .empty))
        self.configuration = configuration
        ceremonyOptions = PasskeyPolicy(checked: configuration.passkeyPolicy).options
        self.backends = backends
        self.logger = logger
        self.metrics = metrics
        self.settings = settings
        addressResolver = ClientAddressResolver(
            trustedProxies: configuration.trustedProxies, ipv6LimitPrefixLength: configuration.rateLimitIPv6PrefixLength)
        func limiter(_ rate: Rate?, keys: Int = 100_000) -> TokenBucketLimiter? {
            rate.map {
                TokenBucketLimiter(
                    ratePerSecond: $0.perSecond, burst: $0.burst, maximumKeys: keys, clock: settings.limiterClock)
            }
        }
        passwordPerEmail = limiter(configuration.passwordRateLimitPerEmail)
        passwordPerAddress = limiter(configuration.passwordRateLimitPerAddress)
        passkeyPerAddress = limiter(configuration.passkeyRateLimitPerAddress)
        refreshPerAddress = limiter(configuration.passkeyRateLimitPerAddress)
        startPerAddress = limiter(configuration.startRateLimitPerAddress)
        startGlobal = limiter(configuration.startRateLimitGlobal, keys: 1)
        signUpPerAddress = limiter(configuration.signUpRateLimitPerAddress)
        signUpGlobal = limiter(configuration.signUpRateLimitGlobal, keys: 1)
        recoveryPerEmail = limiter(configuration.recoveryRateLimitPerEmail)
        recoveryPerAddress = limiter(configuration.recoveryRateLimitPerAddress)
        var documents: [String: [UInt8]] = [
            "/.well-known/apple-app-site-association": WellKnownDocuments.appleAppSiteAssociation(
                appIDs: configuration.appleAppIDs
            ).serialized(),
            "/.well-known/assetlinks.json": WellKnownDocuments.assetLinks(apps: configuration.androidApps).serialized(),
            "/.well-known/webauthn": WellKnownDocuments.relatedOrigins(origins: configuration.webAuthnOrigins).serialized(),
        ]
        if let endpoints = WellKnownDocuments.passkeyEndpoints(
            origins: configuration.origins, pages: configuration.passkeyPages) {
            documents["/.well-known/passkey-endpoints"] = endpoints.serialized()
        }
        wellKnown = documents
        webPage = WebPage()
        crossOrigin = CrossOrigin(origins: configuration.corsOrigins)
        discoveryDocument = Self.discoveryDocument(issuer: configuration.tokenIssuer)
        relyingPartyIDWarning = configuration.relyingPartyIDWarning
        strictTransportSecurity = configuration.gatewayTLSCertificate == nil ? nil : "max-age=31536000"
        publishedKeys = PublishedKeyCache { [backends] in
            var metadata = Metadata()
            metadata.add(AuditContext.requestIDKey, "jwks")
            let keys = try await backends.call(
                .session, SessionServiceMethods.getPublishedKeys, GetPublishedKeysRequest(), idempotent: true,
                metadata: metadata)
            return Array(keys.jwksJSON.utf8)
        }
    }

    /// Every route as `METHOD pattern`.
    public static var routeNames: [String] { router.routeNames }

    /// The methods of the path `pattern` (as a 405's `Allow` lists them: HEAD beside GET); empty for no such path.
    public static func methods(of pattern: String) -> [String] { router.methods(of: pattern) }

    // MARK: - Dispatch

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        if let preflight = crossOrigin.preflight(request) {
            metrics.increment(
                "gateway_http_requests_total", help: "HTTP requests by route and status.",
                labels: ["route": "preflight", "status": "204"])
            return preflight
        }
        var response = await respondInSpan(to: request)
        crossOrigin.decorate(&response, for: request)
        return response
    }

    private func respondInSpan(to request: HTTPRequest) async -> HTTPResponse {
        let started = monotonicSeconds()
        let match = Self.router.match(method: request.method, path: request.path)
        // The caller's trace when it sent a valid traceparent, else a new one; either way the calls to the
        // services carry it and every log line names it.
        let parent = request.headers[TraceContext.headerName].flatMap {
            $0.utf8.count <= 128 ? TraceContext.parse(traceparent: $0) : nil
        }
        let spanName: String
        if case .found(_, let route, _) = match { spanName = route } else { spanName = request.method }
        // A sampled traceparent is taken as given only from a trusted proxy; anyone else's trace is continued, and
        // sampled at the configured ratio.
        let span = tracer.startSpan(
            spanName, kind: .server, continuing: parent,
            trustingSampling: parent == nil || addressResolver.isTrustedPeer(request.remoteAddress))
        var response = await ActiveSpan.$current.withValue(span.active) {
            await respond(to: request, match: match, started: started)
        }
        if span.isRecording {
            span.set("http.request.method", request.method)
            span.set("http.response.status_code", response.status)
            // The route is `METHOD pattern`; the attribute is the pattern.
            if case .found(_, let route, _) = match { span.set("http.route", String(route.drop { $0 != " " }.dropFirst())) }
            if response.status >= 500 { span.fail("HTTP \(response.status)") }
        }
        span.end()
        response.headers.set("traceresponse", span.context.traceparent)
        return response
    }

    private func respond(to request: HTTPRequest, match: RouteMatch<Route>, started: Double) async -> HTTPResponse {
        let requestID = Self.requestID(from: request.headers["x-request-id"])
        let client = self.client(of: request)
        var routeName = "unmatched"
        var response: HTTPResponse
        switch match {
        case .notFound:
            if let page = webPage.response(method: request.method, path: request.path) {
                routeName = "page"
                response = page
                break
            }
            response =
                webPage.serves(request.path)
                ? APIProblem.methodNotAllowed(allowed: ["GET", "HEAD"]).response : APIProblem.notFound.response
        case .methodNotAllowed(let allowed):
            response = APIProblem.methodNotAllowed(allowed: allowed).response
        case .found(let found, let route, let parameters):
            routeName = route
            let context = RequestContext(
                request: request, route: route, parameters: parameters, requestID: requestID, client: client)
            response = await answer(context, failureEvent: "request.failed") { try await dispatch(found, context) }
        }
        response.headers.set("x-request-id", requestID)
        response.headers.set("x-content-type-options", "nosniff")
        // Served over the gateway's own TLS: browsers are told to use nothing else for a year (RFC 6797).
        if let hsts = strictTransportSecurity { response.headers.set("strict-transport-security", hsts) }
        let elapsed = monotonicSeconds() - started
        let status = String(response.status)
        metrics.increment(
            "gateway_http_requests_total", help: "HTTP requests by route and status.",
            labels: ["route": routeName, "status": status])
        metrics.observe(
            "gateway_http_request_duration_seconds", help: "HTTP request latency by route and status.",
            labels: ["route": routeName, "status": status], elapsed)
        guard logger.minimumLevel <= .debug else { return response }
        logger.log(
            .debug, "http.request",
            fields: [
                ("request.id", requestID), ("route", routeName), ("status", status),
                ("client.address", client.address), ("duration.ms", String(Int(elapsed * 1000))),
            ])
        return response
    }

    /// A route handler's response, or the one its failure maps to: its problem, 499 when the client went away, a
    /// logged 500 for anything else.
    func answer(
        _ context: RequestContext, failureEvent: String, _ handler: () async throws -> HTTPResponse
    ) async -> HTTPResponse {
        do {
            return try await handler()
        } catch let problem as APIProblem {
            return problem.response
        } catch is CancellationError {
            // Nobody reads this: the client reset the stream. 499 (as nginx logs it) keeps it apart in metrics.
            return HTTPResponse(status: 499)
        } catch {
            logger.log(
                .error, failureEvent,
                fields: [("request.id", context.requestID), ("route", context.route), ("error", String(describing: error))])
            return APIProblem.internalError.response
        }
    }

    /// The client of `request` (see ``ClientAddressResolver``).
    func client(of request: HTTPRequest) -> ClientAddressResolver.Client {
        addressResolver.client(peer: request.remoteAddress, forwardedFor: request.headers.values("x-forwarded-for"))
    }

    public func refusal(status: Int, detail: String) -> HTTPResponse {
        metrics.increment(
            "gateway_http_requests_total", help: "HTTP requests by route and status.",
            labels: ["route": "unreadable", "status": String(status)])
        var response = APIProblem.refusal(status: status).response
        response.headers.set("x-content-type-options", "nosniff")
        return response
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

    private func monotonicSeconds() -> Double { TokenBucketLimiter.monotonicSeconds() }

    // MARK: - Routes

    /// The public API's routes (docs/api.md) and the operational ones.
    static let routes: [Route] = [
        Route("POST", "/v1/accounts/password", limit: .signUp, body: .json) { try await $0.createPasswordAccount($1) },
        Route("POST", "/v1/sessions/password", body: .json) { try await $0.signInWithPassword($1) },
        Route("POST", "/v1/passkeys/registrations", limit: .start, session: .required(.fullAccessOrRecovery), body: .optionalJSON) {
            try await $0.beginRegistration($1)
        },
        Route("POST", "/v1/passkeys/registrations/finish", limit: .passkey, session: .required(.fullAccess), body: .json) {
            try await $0.finishRegistration($1)
        },
        Route("POST", "/v1/passkeys/account-registrations", limit: .signUp, body: .optionalJSON) {
            try await $0.beginAccountRegistration($1)
        },
        Route("POST", "/v1/passkeys/account-registrations/finish", limit: .passkey, body: .json) {
            try await $0.finishAccountRegistration($1)
        },
        Route("POST", "/v1/passkeys/authentications", limit: .start, body: .optionalJSON) {
            try await $0.beginAuthentication($1)
        },
        Route("POST", "/v1/passkeys/authentications/finish", limit: .passkey, body: .json) {
            try await $0.finishAuthentication($1)
        },
        Route("GET", "/v1/session", session: .required(.fullAccess)) { try await $0.currentSession($1) },
        Route("POST", "/v1/session/refresh", limit: .refresh, body: .optionalJSON) { try await $0.refreshSession($1) },
        Route("DELETE", "/v1/session", session: .required(.fullAccessOrRecovery)) { try await $0.signOut($1) },
        Route("GET", "/v1/sessions", session: .required(.fullAccess)) { try await $0.listSessions($1) },
        Route("DELETE", "/v1/sessions/{sessionID}", session: .recentSignIn) { try await $0.revokeSession($1) },
        Route("GET", "/v1/account", session: .required(.fullAccess)) { try await $0.account($1) },
        Route("PATCH", "/v1/account", session: .required(.fullAccess), body: .json) { try await $0.renameAccount($1) },
        Route("GET", "/v1/passkeys", session: .required(.fullAccess)) { try await $0.listPasskeys($1) },
        Route("PATCH", "/v1/passkeys/{credentialID}", session: .required(.fullAccess), body: .json) {
            try await $0.renamePasskey($1)
        },
        Route("DELETE", "/v1/passkeys/{credentialID}", session: .recentSignIn) { try await $0.removePasskey($1) },
        Route("GET", "/v1/passkey-providers/{aaguid}/icons/{variant}") { try $0.providerIcon($1) },
        Route("POST", "/v1/account/email/verification", session: .recentSignIn, body: .optionalJSON) {
            try await $0.requestEmailVerification($1)
        },
        Route("POST", "/v1/account/email/verify", session: .recentSignIn, body: .json) {
            try await $0.verifyEmail($1)
        },
        Route("POST", "/v1/account/recovery-codes", session: .recentSignIn, body: .optionalJSON) {
            try await $0.generateRecoveryCodes($1)
        },
        Route("DELETE", "/v1/account/password", session: .recentSignIn) { try await $0.removePassword($1) },
        Route("POST", "/v1/account/password", session: .recentSignIn, body: .json) { try await $0.setPassword($1) },
        Route("POST", "/v1/session/reauthentication/password", session: .required(.fullAccess), body: .json) {
            try await $0.reauthenticateWithPassword($1)
        },
        Route(
            "POST", "/v1/session/reauthentication/passkey", limit: .passkey, session: .required(.fullAccess), body: .json
        ) { try await $0.reauthenticateWithPasskey($1) },
        Route("POST", "/v1/recovery", body: .json) { try await $0.startRecovery($1) },
        Route("POST", "/v1/recovery/finish", body: .json) { try await $0.finishRecovery($1) },
        Route("POST", "/v1/recovery/passkeys/finish", limit: .passkey, session: .required(.recoveryOnly), body: .json) {
            try await $0.finishRecoveryRegistration($1)
        },
        Route("POST", "/v1/recovery/password/finish", session: .required(.recoveryOnly), body: .json) {
            try await $0.finishRecoveryWithPassword($1)
        },
        Route("GET", "/.well-known/apple-app-site-association") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/assetlinks.json") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/webauthn") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/passkey-endpoints") { try $0.wellKnownDocument($1) },
        Route("GET", "/.well-known/jwks.json") { try await $0.jsonWebKeySet($1) },
        Route("GET", "/.well-known/openid-configuration") { try $0.openIDConfiguration($1) },
        Route("GET", "/healthz") { _, _ in GatewayApplication.json(200, ["status": "ok"]) },
        Route("GET", "/readyz") { application, _ in await application.readiness() },
        Route("GET", "/metrics") { application, _ in
            // With a metrics listener of its own, the public one does not tell.
            guard application.configuration.gatewayMetricsListen == nil else { throw APIProblem.notFound }
            return MetricsEndpoint.exposition(application.metrics)
        },
        Route("GET", "/openapi.json") { _, _ in
            GatewayApplication.jsonResponse(200, bytes: OpenAPIDocument.bytes, cacheable: true)
        },
    ]

    static let router: Router<Route> = {
        var router = Router<Route>()
        for route in routes { router.add(route.method, route.path, route) }
        return router
    }()

    /// The route's middleware, then its handler: the per-address limit, then the session it admits (401 without a
    /// live one, 403 for a kind it does not admit), which the handler then reads from the context.
    func dispatch(_ route: Route, _ context: RequestContext) async throws -> HTTPResponse {
        var context = context
        switch route.limit {
        case .none: break
        case .signUp: try limit(perAddress: signUpPerAddress, global: signUpGlobal, name: "signup", context)
        case .start: try limit(perAddress: startPerAddress, global: startGlobal, name: "start", context)
        case .passkey: try limit(passkeyPerAddress, key: context.clientLimitKey, name: "passkey_per_address", context)
        case .refresh: try limit(refreshPerAddress, key: context.clientLimitKey, name: "refresh_per_address", context)
        }
        switch route.session {
        case .none: break
        case .required(let admitted): context.session = try await authenticate(context, allowing: admitted)
        case .recentSignIn:
            let session = try await authenticate(context, allowing: .fullAccess)
            try requireRecentSignIn(session)
            context.session = session
        }
        return try await route.handle(self, context)
    }

    func wellKnownDocument(_ context: RequestContext) throws -> HTTPResponse {
        guard let document = wellKnown[context.request.path] else { throw APIProblem.notFound }
        return Self.jsonResponse(200, bytes: document, cacheable: true)
    }

    // MARK: - Operations

    func readiness() async -> HTTPResponse {
        let services = BackendService.allCases
        let results = await withTaskGroup(of: (BackendService, Bool).self) { group in
            for service in services {
                group.addTask { [backends] in (service, await backends.isServing(service)) }
            }
            var results: [BackendService: Bool] = [:]
            for await (service, serving) in group { results[service] = serving }
            return results
        }
        let ready = services.allSatisfy { results[$0] == true }
        let states = JSONObject(
            services.map { ($0.rawValue, .string(results[$0] == true ? "serving" : "unavailable")) })
        var body: JSONObject = ["status": .string(ready ? "ready" : "unavailable"), "services": .object(states)]
        // A configuration that serves but cannot work for devices (PASSKEY_RP_ID left at localhost) stays ready,
        // and says so here as well as in the log at start.
        if let warning = relyingPartyIDWarning { body["warnings"] = [.string(warning)] }
        return Self.json(ready ? 200 : 503, .object(body))
    }

    // MARK: - Helpers

    /// Resolves the bearer token to its live session through ValidateSession; 401 when missing or not live, and 403
    /// when the route does not admit sessions signed in that way (a recovery session, outside its passkey
    /// registration).
    func authenticate(_ context: RequestContext, allowing admitted: AdmittedSessions = .fullAccess) async throws
        -> SessionInfo
    {
        guard let token = Self.bearerToken(context.request.headers["authorization"]) else {
            throw APIProblem.unauthenticated()
        }
        var request = ValidateSessionRequest()
        request.accessToken = token
        let session = try await sessionService(context).validateSession(request, idempotent: true)
        guard admitted.admits(session.authenticationMethod) else {
            throw APIProblem(
                status: 403, code: DomainError.Code.forbidden.rawValue,
                detail: session.authenticationMethod == .recovery
                    ? "A recovery session can only register a new passkey." : "This session may not do this.")
        }
        return session
    }

    /// The token of `Authorization: Bearer <token>` (scheme case-insensitive); nil when absent or malformed.
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1]
        guard token.utf8.count <= 1024,
            token.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._~+/=".unicodeScalars.contains($0))
            })
        else { return nil }
        return String(token)
    }

    func limit(_ limiter: TokenBucketLimiter?, key: String, name: String, _ context: RequestContext) throws {
        guard let limiter else { return }
        if case .limited(let seconds) = limiter.attempt(key) {
            metrics.increment(
                "gateway_rate_limited_total", help: "Requests refused by a rate limit.", labels: ["limit": name])
            logger.log(
                .warning, "rate_limited",
                fields: [
                    ("request.id", context.requestID), ("route", context.route),
                    ("client.address", context.clientAddress), ("limit", name),
                ])
            throw APIProblem.rateLimited(retryAfterSeconds: seconds)
        }
    }

    /// The limits of a route that writes a row for anyone who asks: the client address's bucket first, so that a
    /// flooding address is refused by its own and leaves the replica-wide one to everyone else, then that one.
    func limit(
        perAddress: TokenBucketLimiter?, global: TokenBucketLimiter?, name: String, _ context: RequestContext
    ) throws {
        try limit(perAddress, key: context.clientLimitKey, name: "\(name)_per_address", context)
        try limit(global, key: "", name: "\(name)_global", context)
    }

    /// One call to a service, with metrics; a failure becomes the API problem apps see.
    /// A typed client of challenge-service for one request's calls (see `BackendCaller`).
    func challengeService(_ context: RequestContext) -> ChallengeServiceClient<BackendCaller> {
        ChallengeServiceClient(BackendCaller(application: self, service: .challenge, context: context, ceremony: nil))
    }

    /// A typed client of verification-service for one request's calls; `ceremony` says how a failed check reads.
    func verificationService(_ context: RequestContext, ceremony: Ceremony? = nil) -> VerificationServiceClient<BackendCaller> {
        VerificationServiceClient(
            BackendCaller(application: self, service: .verification, context: context, ceremony: ceremony))
    }

    /// A typed client of session-service for one request's calls.
    func sessionService(_ context: RequestContext) -> SessionServiceClient<BackendCaller> {
        SessionServiceClient(BackendCaller(application: self, service: .session, context: context, ceremony: nil))
    }

    /// Calls a service for a request: counted and timed by service, method and outcome, a failure logged (rate
    /// limited) and mapped to the problem apps see.
    func call<Request, Response>(
        _ service: BackendService, _ descriptor: GRPCMethodDescriptor<Request, Response>, _ request: Request,
        context: RequestContext, idempotent: Bool, ceremony: Ceremony?
    ) async throws -> Response {
        let method = descriptor.name
        try Task.checkCancellation()
        let started = monotonicSeconds()
        func record(_ outcome: String) {
            metrics.increment(
                "gateway_backend_calls_total", help: "Calls to the services by service, method and outcome.",
                labels: ["service": service.rawValue, "method": method, "outcome": outcome])
            metrics.observe(
                "gateway_backend_call_duration_seconds", help: "Latency of calls to the services.",
                labels: ["service": service.rawValue, "method": method], monotonicSeconds() - started)
        }
        do {
            // The services log the audit events they decide, with where the request came from.
            var metadata = Metadata()
            metadata.add(AuditContext.requestIDKey, context.requestID)
            metadata.add(AuditContext.clientAddressKey, context.clientAddress)
            // The service's span is a child of this call's span when the trace is sampled, else of the request's.
            let span = ActiveSpan.startChild(String(descriptor.path.dropFirst()), kind: .client)
            if let traced = span?.context ?? ActiveSpan.current?.context {
                metadata.add(TraceContext.headerName, traced.traceparent)
            }
            span?.set("rpc.system", "grpc")
            span?.set("rpc.method", method)
            span?.set("peer.service", service.rawValue)
            defer { span?.end() }
            do {
                let response = try await backends.call(
                    service, descriptor, request, idempotent: idempotent, metadata: metadata)
                record("ok")
                return response
            } catch let error as RPCError {
                span?.set("rpc.grpc.status_code", error.code.rawValue)
                span?.fail(String(describing: error.code))
                throw error
            }
        } catch let error as RPCError {
            let domain = ServiceErrors.domainError(from: error)
            record(domain?.code.rawValue ?? String(describing: error.code).lowercased())
            let problem = ProblemMapping.problem(for: error, ceremony: ceremony)
            if let ceremony, problem.code == "verification_failed" || problem.code == "invalid_credentials" {
                metrics.increment(
                    "gateway_verification_failures_total", help: "WebAuthn verification failures by reason.",
                    labels: [
                        "ceremony": ceremony == .registration ? "registration" : "authentication",
                        "reason": problem.reason ?? "unspecified",
                    ])
            }
            if domain == nil,
                let suppressed = failureLog.admit("\(service.rawValue) \(error.code)", at: monotonicSeconds())
            {
                logger.log(
                    .warning, "backend.call_failed",
                    fields: [
                        ("request.id", context.requestID), ("route", context.route),
                        ("backend.service", service.rawValue), ("backend.method", method),
                        ("grpc.status", String(describing: error.code)), ("message", error.message),
                        ("suppressed", String(suppressed)),
                    ])
            }
            throw problem
        } catch {
            record("error")
            throw APIProblem.internalError
        }
    }

    /// 204 for a change that worked; never cached.
    static let noContent = HTTPResponse(status: 204, headers: HTTPHeaders([("cache-control", "no-store")]))

    static func json(_ status: Int, _ value: JSONValue) -> HTTPResponse {
        jsonResponse(status, bytes: value.serialized(), cacheable: false)
    }

    static func jsonResponse(_ status: Int, bytes: [UInt8], cacheable: Bool) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: HTTPHeaders([
                ("content-type", "application/json"), ("cache-control", cacheable ? "public, max-age=300" : "no-store"),
            ]),
            body: bytes)
    }
}

/// The calls one request makes to one service, through the gateway's bookkeeping: what the generated typed clients
/// (`ChallengeServiceClient`, …) call through.
struct BackendCaller: GRPCUnaryCaller {
    let application: GatewayApplication
    let service: BackendService
    let context: RequestContext
    let ceremony: Ceremony?

    func call<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request, idempotent: Bool
    ) async throws -> Response {
        try await application.call(
            service, method, request, context: context, idempotent: idempotent, ceremony: ceremony)
    }
}
