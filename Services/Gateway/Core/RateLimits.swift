import Configuration
import HTTPMessages
import Observability
import RateLimiting

/// The gateway's token buckets (`PASSKEY_RATE_LIMIT_*`, `ADMIN_RATE_LIMIT_PER_ADDRESS`), each per replica, and the one
/// way a request is counted against one: a refusal is 429 `rate_limited` with `Retry-After`, counted in
/// `gateway_rate_limited_total` by limit and logged. The limits a route declares are taken by ``RouteRateLimits``
/// before anything else; those keyed by an email or an account are taken by the handlers, which know the key.
final class RateLimits: Sendable {
    /// One bucket a request is counted against.
    struct Bucket: Sendable {
        /// What the request is counted as.
        enum Key: Sendable {
            /// The client address, or its IPv6 block.
            case clientAddress
            /// The whole replica.
            case global
            /// A key the handler knows (an email, an account).
            case named(String)
        }

        let limiter: TokenBucketLimiter?
        let key: Key
        /// The `limit` label and log field: `signup_per_address`, `password_per_email`, ...
        let name: String
    }

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
    /// Admin calls per client address; unknown and bad tokens count alike.
    let adminPerAddress: TokenBucketLimiter?
    private let metrics: MetricsRegistry
    private let logger: Logger

    init(
        configuration: GatewayConfiguration, clock: @escaping @Sendable () -> Double, metrics: MetricsRegistry,
        logger: Logger
    ) {
        func limiter(_ rate: Rate?, keys: Int = 100_000) -> TokenBucketLimiter? {
            rate.map {
                TokenBucketLimiter(ratePerSecond: $0.perSecond, burst: $0.burst, maximumKeys: keys, clock: clock)
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
        adminPerAddress = limiter(configuration.adminRateLimitPerAddress, keys: 10_000)
        self.metrics = metrics
        self.logger = logger
    }

    /// Counts the request against `buckets` in order; the first that is empty refuses it.
    func take<Declaration: RouteDeclaration>(_ buckets: [Bucket], _ context: RequestContext<Declaration>)
        throws(APIProblem)
    {
        for bucket in buckets {
            guard let limiter = bucket.limiter else { continue }
            let key: String
            switch bucket.key {
            case .clientAddress: key = context.clientLimitKey
            case .global: key = ""
            case .named(let named): key = named
            }
            guard case .limited(let seconds) = limiter.attempt(key) else { continue }
            metrics.increment(
                "gateway_rate_limited_total", help: "Requests refused by a rate limit.", labels: ["limit": bucket.name])
            logger.log(
                .warning, "rate_limited",
                fields: [
                    ("request.id", context.requestID), ("route", context.routeName),
                    ("client.address", context.clientAddress), ("limit", bucket.name),
                ])
            throw .rateLimited(retryAfterSeconds: seconds)
        }
    }

    /// The buckets of a route that writes a row for anyone who asks: the client address's first, so that a flooding
    /// address is refused by its own and leaves the replica-wide one to everyone else, then that one.
    static func perAddressThenGlobal(
        _ perAddress: TokenBucketLimiter?, _ global: TokenBucketLimiter?, name: String
    ) -> [Bucket] {
        [
            Bucket(limiter: perAddress, key: .clientAddress, name: "\(name)_per_address"),
            Bucket(limiter: global, key: .global, name: "\(name)_global"),
        ]
    }

    /// The buckets a public route's ``Route/Limit`` names.
    func buckets(for limit: Route.Limit) -> [Bucket] {
        switch limit {
        case .none: []
        case .signUp: Self.perAddressThenGlobal(signUpPerAddress, signUpGlobal, name: "signup")
        case .start: Self.perAddressThenGlobal(startPerAddress, startGlobal, name: "start")
        case .passkey: [Bucket(limiter: passkeyPerAddress, key: .clientAddress, name: "passkey_per_address")]
        case .refresh: [Bucket(limiter: refreshPerAddress, key: .clientAddress, name: "refresh_per_address")]
        }
    }

    /// The buckets of an admin route: the per-address one, for every route that takes a token.
    func buckets(for route: AdminRoute) -> [Bucket] {
        route.authenticated ? [Bucket(limiter: adminPerAddress, key: .clientAddress, name: "admin_per_address")] : []
    }

    /// The password guesses of a sign-in or reauthentication: the client address's bucket, then (at sign-in) the
    /// email's.
    func passwordBuckets(emailKey: String?) -> [Bucket] {
        var buckets = [Bucket(limiter: passwordPerAddress, key: .clientAddress, name: "password_per_address")]
        if let emailKey {
            buckets.append(Bucket(limiter: passwordPerEmail, key: .named(emailKey), name: "password_per_email"))
        }
        return buckets
    }

    /// The recovery limits: the client address's bucket, then the email's (or account's).
    func recoveryBuckets(key: String) -> [Bucket] {
        [
            Bucket(limiter: recoveryPerAddress, key: .clientAddress, name: "recovery_per_address"),
            Bucket(limiter: recoveryPerEmail, key: .named(key), name: "recovery_per_email"),
        ]
    }
}

/// Takes the limits a route declares before anything else runs (``RateLimits``): a refused request costs no token
/// check and no service call.
struct RouteRateLimits<Route: RouteDeclaration>: RouteMiddleware {
    let limits: RateLimits
    /// The buckets the route's value names, in order.
    let buckets: @Sendable (Route) -> [RateLimits.Bucket]

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        try limits.take(buckets(context.route), context)
        return try await next(context)
    }
}
