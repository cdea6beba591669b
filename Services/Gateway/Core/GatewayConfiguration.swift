import Configuration
import IPAddresses

/// What the gateway reads from the environment (docs/configuration.md's table, the rows read by `gateway`),
/// validated at start.
public struct GatewayConfiguration: Sendable, Equatable {
    public var relyingPartyID: String
    /// Allowed client-data origins, exact match: web origins and app origins (`android:apk-key-hash:…`,
    /// `ios:bundle-id:…`).
    public var origins: [String]
    /// Web origins outside the RP ID's domain that share its passkeys (`PASSKEY_RELATED_ORIGINS`), listed in
    /// `/.well-known/webauthn` with the web origins of `origins`.
    public var relatedOrigins: [String]
    /// `TEAMID.bundle.id` entries for the apple-app-site-association file.
    public var appleAppIDs: [String]
    /// Android apps (`PASSKEY_ANDROID_APPS`): their `assetlinks.json` statements.
    public var androidApps: [AndroidApp]
    /// The enroll and manage pages `/.well-known/passkey-endpoints` names (`PASSKEY_ENROLL_PAGE`,
    /// `PASSKEY_MANAGE_PAGE`).
    public var passkeyPages: PasskeyEndpointPages
    /// What the options ask of passkeys (`PASSKEY_ALGORITHMS`, user verification, ...).
    public var passkeyPolicy: PasskeyPolicyConfiguration
    public var passwordRateLimitPerEmail: Rate?
    public var passwordRateLimitPerAddress: Rate?
    public var passkeyRateLimitPerAddress: Rate?
    /// Passkey ceremony starts that write a challenge row (signing in, adding a passkey), per client address and on
    /// one gateway replica in all. Each start writes a row, so the global rate bounds how fast the challenge tables
    /// can grow between sweeps.
    public var startRateLimitPerAddress: Rate?
    public var startRateLimitGlobal: Rate?
    /// Account sign-ups (a password account, or starting one with a passkey), per client address and on one gateway
    /// replica in all.
    public var signUpRateLimitPerAddress: Rate?
    public var signUpRateLimitGlobal: Rate?
    /// Recovery starts and finishes, and email verification attempts and resends, per normalized email (or account)
    /// and per client address.
    public var recoveryRateLimitPerEmail: Rate?
    public var recoveryRateLimitPerAddress: Rate?
    /// Peers whose `X-Forwarded-For` is believed.
    public var trustedProxies: [String]
    /// The prefix length (48 to 64) an IPv6 client is counted by in the per-address limits
    /// (`PASSKEY_RATE_LIMIT_IPV6_PREFIX`): every address of one `/64` (by default) shares one bucket.
    public var rateLimitIPv6PrefixLength: Int
    /// `EVENT_LOOP_THREADS`; nil means one per online core.
    public var eventLoopThreads: Int?
    public var gatewayListen: ServiceAddress
    /// Where each service's replicas are found: numeric addresses, or names resolved again every
    /// `serviceDiscoveryInterval` and after a connection fails.
    public var challengeServiceAddresses: [ServiceTarget]
    public var verificationServiceAddresses: [ServiceTarget]
    public var sessionServiceAddresses: [ServiceTarget]
    /// Seconds between lookups of the replica names in `*_SERVICE_ADDRESSES` (`SERVICE_DISCOVERY_INTERVAL`).
    public var serviceDiscoveryInterval: Double
    /// Where the gateway serves the admin API (`ADMIN_LISTEN`); nil: no admin API.
    public var adminListen: ServiceAddress?
    /// Admin API calls per client address (`PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS`).
    public var adminRateLimitPerAddress: Rate?
    /// How gRPC to the services is secured; nil when nothing says (refused by `GRPCTransportConfiguration.require`).
    public var grpcTransport: GRPCTransportConfiguration?
    /// PEM files for TLS on the gateway; both or neither.
    public var gatewayTLSCertificate: String?
    public var gatewayTLSKey: String?
    /// Trace export (`OTEL_*`).
    public var tracing: TracingConfiguration
    /// Web origins allowed to call the API from a browser (`PASSKEY_CORS_ORIGINS`): preflights are answered and
    /// credentials allowed for these only.
    public var corsOrigins: [String]
    /// Whether browsers get their refresh token in an `HttpOnly` cookie (`PASSKEY_REFRESH_COOKIE`).
    public var refreshCookie: Bool
    /// The access tokens' issuer (`PASSKEY_TOKEN_ISSUER`), for the discovery document.
    public var tokenIssuer: String
    /// Where the gateway serves `/metrics` (`GATEWAY_METRICS_LISTEN`), apart from the public listener, which then
    /// answers 404 for it; nil: on the public listener, as before.
    public var gatewayMetricsListen: ServiceAddress?
    /// How recent a session's sign-in must be for a sensitive change (`PASSKEY_REAUTHENTICATION_WINDOW`), seconds.
    public var reauthenticationWindow: Double

    /// Reads and validates. Throws `ConfigurationError` naming the first bad variable.
    public init(environment: [String: String]) throws {
        try self.init(EnvironmentReader(environment))
    }

    public init(_ env: EnvironmentReader) throws {
        relyingPartyID = try env.relyingPartyID()
        origins = try env.origins()
        appleAppIDs = try env.appleAppIDs()
        androidApps = try env.androidApps()
        relatedOrigins = try env.relatedOrigins()
        passkeyPages = try PasskeyEndpointPages(env)
        passkeyPolicy = try PasskeyPolicyConfiguration(env)
        passwordRateLimitPerEmail = try env.rate("PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL", default: "10/m")
        passwordRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS", default: "100/m")
        passkeyRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS", default: "6000/m")
        startRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_START_PER_ADDRESS", default: "6000/m")
        startRateLimitGlobal = try env.rate("PASSKEY_RATE_LIMIT_START_GLOBAL", default: "120000/m")
        signUpRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS", default: "30/m")
        signUpRateLimitGlobal = try env.rate("PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL", default: "3000/m")
        recoveryRateLimitPerEmail = try env.rate("PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL", default: "20/h")
        recoveryRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS", default: "100/h")
        trustedProxies = env.list("PASSKEY_TRUSTED_PROXIES")
        rateLimitIPv6PrefixLength = try env.integer("PASSKEY_RATE_LIMIT_IPV6_PREFIX", default: 64, range: 48...64)
        eventLoopThreads = try env.eventLoopThreads()
        gatewayListen = try env.address("GATEWAY_LISTEN", default: "127.0.0.1:8080")
        // A service's address defaults to where that service listens by default (or as configured here).
        challengeServiceAddresses = try env.targets(
            "CHALLENGE_SERVICE_ADDRESSES", default: [ServiceTarget(address: env.listenAddress(.challengeService))])
        verificationServiceAddresses = try env.targets(
            "VERIFICATION_SERVICE_ADDRESSES", default: [ServiceTarget(address: env.listenAddress(.verificationService))]
        )
        sessionServiceAddresses = try env.targets(
            "SESSION_SERVICE_ADDRESSES", default: [ServiceTarget(address: env.listenAddress(.sessionService))])
        serviceDiscoveryInterval = try env.duration("SERVICE_DISCOVERY_INTERVAL", default: "1s")
        adminListen = try env.optionalAddress("ADMIN_LISTEN")
        gatewayMetricsListen = try env.optionalAddress("GATEWAY_METRICS_LISTEN")
        adminRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS", default: "600/m")
        grpcTransport = try GRPCTransportConfiguration.read(env)
        gatewayTLSCertificate = env.raw("GATEWAY_TLS_CERTIFICATE")
        gatewayTLSKey = env.raw("GATEWAY_TLS_KEY")
        guard (gatewayTLSCertificate == nil) == (gatewayTLSKey == nil) else {
            throw ConfigurationError(
                variable: gatewayTLSCertificate == nil ? "GATEWAY_TLS_CERTIFICATE" : "GATEWAY_TLS_KEY",
                problem: "GATEWAY_TLS_CERTIFICATE and GATEWAY_TLS_KEY must be set together")
        }
        tracing = try TracingConfiguration(env)
        corsOrigins = try env.webOrigins("PASSKEY_CORS_ORIGINS") { "\($0) is not a web origin (https://host[:port])" }
        refreshCookie = try env.flag("PASSKEY_REFRESH_COOKIE", default: false)
        tokenIssuer = try env.tokenIssuer()
        reauthenticationWindow = try env.duration("PASSKEY_REAUTHENTICATION_WINDOW", default: "10m")
        guard (30...86_400).contains(reauthenticationWindow) else {
            throw ConfigurationError(variable: "PASSKEY_REAUTHENTICATION_WINDOW", problem: "expected 30s to 1d")
        }
    }

    /// The start-up checks of the origins (`OriginChecks`): a web origin outside the RP ID that is not a related
    /// origin, or an `android:apk-key-hash:` origin no configured app accounts for, stops the gateway.
    public func checkOrigins() throws(ConfigurationError) {
        try OriginChecks.check(
            relyingPartyID: relyingPartyID, origins: origins, relatedOrigins: relatedOrigins, androidApps: androidApps)
    }

    /// What `/.well-known/webauthn` lists: the web origins of `PASSKEY_ORIGINS`, then the related origins, each once.
    public var webAuthnOrigins: [String] { WellKnownDocuments.webOrigins(origins + relatedOrigins) }

    /// Set when `PASSKEY_RP_ID` is `localhost` while `GATEWAY_LISTEN` is beyond loopback: a deployment others reach,
    /// whose passkeys no device outside this machine can use (a browser accepts the RP ID `localhost` only on a
    /// localhost origin, and no app association names it). The gateway logs it at start and shows it in `/readyz`.
    public var relyingPartyIDWarning: String? {
        guard relyingPartyID == "localhost", !Self.isLoopback(host: gatewayListen.host) else { return nil }
        return """
            PASSKEY_RP_ID is localhost while the gateway listens on \(gatewayListen) (beyond loopback): passkeys \
            made here work only on this machine's http://localhost origins; set PASSKEY_RP_ID to the domain people \
            reach (and PASSKEY_ORIGINS to its origins)
            """
    }

    /// Whether a listen host accepts loopback connections only: `localhost`, 127.0.0.0/8, or ::1.
    static func isLoopback(host: String) -> Bool {
        if host.lowercased() == "localhost" { return true }
        guard let address = IPAddress(parsing: host) else { return false }
        return ["127.0.0.0/8", "::1/128"].contains { IPNetwork(parsing: $0)?.contains(address) ?? false }
    }
}
