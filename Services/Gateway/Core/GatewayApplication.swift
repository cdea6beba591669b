import Configuration
import GRPC
import HTTPMessages
import HTTPServer
import Observability
import PasskeyPolicy
import PasskeyProviders
import RateLimiting
import ServiceContracts
import WebAuthn

/// Settings of the gateway's own behavior (the deployment's settings are ``GatewayConfiguration``).
public struct GatewaySettings: Sendable {
    /// The wall clock in Unix milliseconds.
    public var now: @Sendable () -> Int64 = { unixMillisecondsNow() }
    /// The monotonic clock the rate limiters use, in seconds.
    public var limiterClock: @Sendable () -> Double = TokenBucketLimiter.monotonicSeconds

    /// The defaults.
    public init() {}
}

/// The public API: authenticates bearer tokens, calls the services, and maps their answers to the JSON of
/// docs/api.md. Every request ends in a response; failures are problem+json. A request goes through
/// ``RouteResponder`` and the ``middleware`` to its route's handler (``routes``), whose calls to the services go
/// through the ``BackendCallInterceptor``.
public final class GatewayApplication: HTTPResponder {
    let configuration: GatewayConfiguration
    /// What the passkey options offer: the configured policy (`PASSKEY_ALGORITHMS`, user verification, ...), which
    /// verification-service enforces.
    let ceremonyOptions: CeremonyOptions
    /// Every call to the services goes through it.
    let backend: BackendCallInterceptor
    let logger: Logger
    /// The registry the gateway's metrics are recorded in (served at `/metrics`).
    public let metrics: MetricsRegistry
    let settings: GatewaySettings
    let addressResolver: ClientAddressResolver
    /// The token buckets of both listeners.
    let limits: RateLimits
    /// The sensitive changes' rule, `PASSKEY_REAUTHENTICATION_WINDOW`.
    let recentSignIn: RecentSignIn
    let wellKnown: [String: [UInt8]]
    /// The passkey providers' names and icons.
    let providers: ProviderDirectory
    /// The JWKS, from session-service, refreshed at most every two seconds.
    let publishedKeys: PublishedKeyCache
    /// `/.well-known/openid-configuration`, made once.
    let discoveryDocument: [UInt8]
    /// What `/readyz` warns of (``GatewayConfiguration/relyingPartyIDWarning``), worked out once.
    let relyingPartyIDWarning: String?
    private let responder: RouteResponder<Route>

    /// Creates the application; nothing is called until requests arrive.
    public init(
        configuration: GatewayConfiguration, backends: any ServiceBackends, logger: Logger,
        metrics: MetricsRegistry, tracer: Tracer = .off, settings: GatewaySettings = GatewaySettings(),
        providers: PasskeyProviderCatalog? = nil
    ) {
        self.providers = ProviderDirectory(
            catalog: providers ?? ((try? PasskeyProviderCatalog.shipped.get()) ?? .empty))
        self.configuration = configuration
        ceremonyOptions = PasskeyPolicy(checked: configuration.passkeyPolicy).options
        let backend = BackendCallInterceptor(backends: backends, metrics: metrics, logger: logger)
        let addressResolver = ClientAddressResolver(
            trustedProxies: configuration.trustedProxies, ipv6LimitPrefixLength: configuration.rateLimitIPv6PrefixLength
        )
        let limits = RateLimits(
            configuration: configuration, clock: settings.limiterClock, metrics: metrics, logger: logger)
        let recentSignIn = RecentSignIn(window: configuration.reauthenticationWindow, now: settings.now)
        self.backend = backend
        self.addressResolver = addressResolver
        self.limits = limits
        self.recentSignIn = recentSignIn
        self.logger = logger
        self.metrics = metrics
        self.settings = settings
        wellKnown = WellKnownDocuments.served(by: configuration)
        discoveryDocument = Self.discoveryDocument(issuer: configuration.tokenIssuer)
        relyingPartyIDWarning = configuration.relyingPartyIDWarning
        publishedKeys = PublishedKeyCache { [backends] in
            var metadata = Metadata()
            metadata.add(AuditContext.requestIDKey, "jwks")
            let keys = try await backends.call(
                .session, SessionServiceMethods.getPublishedKeys, GetPublishedKeysRequest(), idempotent: true,
                metadata: metadata)
            return Array(keys.jwksJSON.utf8)
        }
        responder = RouteResponder(
            router: Self.router, pages: WebPage(), addressResolver: addressResolver,
            chain: Self.middleware(
                configuration: configuration, metrics: metrics, logger: logger, tracer: tracer,
                addressResolver: addressResolver, limits: limits, backend: backend, recentSignIn: recentSignIn))
    }

    /// The public listener's middleware, outermost first: CORS, the request's span, its metrics and common headers,
    /// failures as problems; then what the route declares: its limits, the session it admits, its body.
    static func middleware(
        configuration: GatewayConfiguration, metrics: MetricsRegistry, logger: Logger, tracer: Tracer,
        addressResolver: ClientAddressResolver, limits: RateLimits, backend: BackendCallInterceptor,
        recentSignIn: RecentSignIn
    ) -> MiddlewareChain<Route> {
        typealias Chain = MiddlewareChain<Route>
        var headers = [("x-content-type-options", "nosniff")]
        // Served over the gateway's own TLS: browsers are told to use nothing else for a year (RFC 6797). Behind a
        // proxy that terminates TLS, the proxy sets it.
        if configuration.gatewayTLSCertificate != nil {
            headers.append(("strict-transport-security", "max-age=31536000"))
        }
        return Chain([
            Chain.step(
                CrossOriginMiddleware(crossOrigin: CrossOrigin(origins: configuration.corsOrigins), metrics: metrics)),
            Chain.step(RequestTracing<Route>(tracer: tracer, addressResolver: addressResolver)),
            Chain.step(
                RequestMetrics<Route>(
                    metrics: metrics,
                    requests: .init(name: "gateway_http_requests_total", help: "HTTP requests by route and status."),
                    durations: .init(
                        name: "gateway_http_request_duration_seconds", help: "HTTP request latency by route and status."
                    ),
                    headers: headers, logger: logger)),
            Chain.step(ProblemResponses<Route>(logger: logger, failureEvent: "request.failed")),
            Chain.step(
                RouteRateLimits<Route>(limits: limits) { [limits] route in limits.buckets(for: route.limit) }),
            Chain.step(SessionAdmission(backend: backend, recentSignIn: recentSignIn)),
            Chain.step(
                BodyPolicy<Route>(reading: .anyJSONType, unexpectedBodyDetail: "This route takes no body.")),
        ])
    }

    /// Every route as `METHOD pattern`.
    public static var routeNames: [String] { router.routeNames }

    /// The methods of the path `pattern` (as a 405's `Allow` lists them: HEAD beside GET); empty for no such path.
    public static func methods(of pattern: String) -> [String] { router.methods(of: pattern) }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        await responder.respond(to: request, application: self)
    }

    public func refusal(status: Int, detail: String) -> HTTPResponse {
        metrics.increment(
            "gateway_http_requests_total", help: "HTTP requests by route and status.",
            labels: ["route": "unreadable", "status": String(status)])
        var response = APIProblem.refusal(status: status).response
        response.headers.set("x-content-type-options", "nosniff")
        return response
    }

    /// A typed client of challenge-service for one request's calls.
    func challengeService(_ context: PublicContext) -> ChallengeServiceClient<BackendClient> {
        backend.challengeService(for: context.origin)
    }

    /// A typed client of verification-service for one request's calls; `ceremony` says how a failed check reads.
    func verificationService(
        _ context: PublicContext, ceremony: Ceremony? = nil
    ) -> VerificationServiceClient<BackendClient> {
        backend.verificationService(for: context.origin, ceremony: ceremony)
    }

    /// A typed client of session-service for one request's calls.
    func sessionService(_ context: PublicContext) -> SessionServiceClient<BackendClient> {
        backend.sessionService(for: context.origin)
    }
}
