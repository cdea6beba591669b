/// Everything a deployment sets, read from the environment (docs/configuration.md's table) and validated at start.
///
/// Every executable reads the same variables, so one `.env` serves the whole stack.
public struct ServerConfiguration: Sendable, Equatable {
    public var relyingPartyID: String
    public var relyingPartyName: String
    /// Allowed client-data origins, exact match: web origins and app origins (`android:apk-key-hash:…`,
    /// `ios:bundle-id:…`).
    public var origins: [String]
    /// `TEAMID.bundle.id` entries for the apple-app-site-association file.
    public var appleAppIDs: [String]
    /// Android apps for assetlinks.json.
    public var androidApps: [AndroidApp]
    /// The enroll and manage pages `/.well-known/passkey-endpoints` names (`PASSKEY_ENROLL_PAGE`,
    /// `PASSKEY_MANAGE_PAGE`).
    public var passkeyPages: PasskeyEndpointPages
    /// Seconds.
    public var challengeLifetime: Double
    public var accountRegistrationLifetime: Double
    public var sessionLifetime: Double
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
    /// Seconds between sweeps of ended rows (challenge-service: ceremony rows; session-service: sessions).
    public var sweepInterval: Double
    /// Rows one sweep statement deletes at most.
    public var sweepBatchSize: Int
    /// Seconds a sweep waits between two batches, so that it never holds the table's rows for long.
    public var sweepBatchPause: Double
    /// Seconds a ceremony row is kept after it expired or was consumed.
    public var ceremonyRetention: Double
    /// Seconds a session is kept after it expired or was revoked.
    public var sessionRetention: Double
    /// Seconds a stored audit event is kept.
    public var auditRetention: Double
    /// Peers whose `X-Forwarded-For` is believed.
    public var trustedProxies: [String]
    /// nil: the run command starts a local Postgres and sets it.
    public var databaseURL: String?
    public var databasePoolSize: Int
    /// How long a service that cannot reach its database at start keeps trying before it gives up and exits
    /// (`DATABASE_WAIT_TIMEOUT`); nil (`0`, the default) waits as long as it takes. Meanwhile it serves health
    /// as NOT_SERVING, and liveness as SERVING.
    public var databaseWaitTimeout: Double?
    /// Event-loop threads for a process's server (`EVENT_LOOP_THREADS`); nil means one per online core. Processes
    /// that share a small machine do better with fewer each.
    public var eventLoopThreads: Int?
    public var gatewayListen: ServiceAddress
    public var challengeServiceListen: ServiceAddress
    public var verificationServiceListen: ServiceAddress
    public var sessionServiceListen: ServiceAddress
    /// Where each service's replicas are found: numeric addresses, or names resolved again every
    /// `serviceDiscoveryInterval` and after a connection fails.
    public var challengeServiceAddresses: [ServiceTarget]
    public var verificationServiceAddresses: [ServiceTarget]
    public var sessionServiceAddresses: [ServiceTarget]
    /// Seconds between lookups of the replica names in `*_SERVICE_ADDRESSES` (`SERVICE_DISCOVERY_INTERVAL`).
    public var serviceDiscoveryInterval: Double
    /// Where a service serves `/metrics` and `/healthz` over HTTP; nil for none.
    public var metricsListen: ServiceAddress?
    /// Where the gateway serves the admin API (`ADMIN_LISTEN`); nil: no admin API.
    public var adminListen: ServiceAddress?
    /// Admin API calls per client address (`PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS`).
    public var adminRateLimitPerAddress: Rate?
    /// How gRPC between the gateway and the services is secured; nil when nothing says (which the executables
    /// refuse: see ``requireGRPCTransport()``).
    public var grpcTransport: GRPCTransportConfiguration?
    /// Where a service also serves `grpc.health.v1` alone, in plaintext, for probes that cannot speak TLS
    /// (`GRPC_HEALTH_LISTEN`); nil for none.
    public var grpcHealthListen: ServiceAddress?
    /// PEM files for TLS on the gateway; both or neither.
    public var gatewayTLSCertificate: String?
    public var gatewayTLSKey: String?

    // MARK: Mail and account recovery

    /// The mail relay (`smtp://host[:port]` or `smtps://host[:port]`); nil: session-service sends no mail, and
    /// queued messages wait in the outbox.
    public var smtpURL: String?
    /// The relay's AUTH credentials, when it wants them.
    public var smtpUsername: String?
    public var smtpPassword: String?
    /// The `From` address of every message.
    public var smtpFrom: String
    /// Whether a `smtp://` relay must upgrade with STARTTLS before anything, AUTH included, is sent.
    public var smtpRequireStartTLS: Bool
    /// Certificate authorities to trust for the relay instead of the system's.
    public var smtpCAFile: String?
    /// Recovery starts and finishes, and email verification attempts and resends, per normalized email (or account)
    /// and per client address.
    public var recoveryRateLimitPerEmail: Rate?
    public var recoveryRateLimitPerAddress: Rate?
    /// Whether finishing a recovery revokes the account's other sessions.
    public var recoveryRevokesSessions: Bool
    /// What the options ask of passkeys and verification enforces (`PASSKEY_ALGORITHMS`, user verification, ...).
    public var passkeyPolicy: PasskeyPolicyConfiguration
    /// Trace export (`OTEL_*`).
    public var tracing: TracingConfiguration

    /// An Android app: its package name and the SHA-256 fingerprint of its signing certificate.
    public struct AndroidApp: Sendable, Equatable {
        public var packageName: String
        /// Colon-separated uppercase hex, as `keytool` prints it.
        public var sha256Fingerprint: String
    }

    /// Reads and validates. Throws `ConfigurationError` naming the first bad variable.
    public init(environment: [String: String]) throws {
        let env = EnvironmentReader(environment)
        relyingPartyID = env.string("PASSKEY_RP_ID", default: "localhost").lowercased()
        guard Self.isValidHostName(relyingPartyID) else {
            throw ConfigurationError(variable: "PASSKEY_RP_ID", problem: "expected a domain name, got \(relyingPartyID)")
        }
        relyingPartyName = env.string("PASSKEY_RP_NAME", default: "Passkey Demo")
        origins = env.list("PASSKEY_ORIGINS", default: ["http://localhost:8080"])
        guard !origins.isEmpty else {
            throw ConfigurationError(variable: "PASSKEY_ORIGINS", problem: "at least one origin is required")
        }
        for origin in origins where !Self.isValidOrigin(origin) {
            throw ConfigurationError(
                variable: "PASSKEY_ORIGINS",
                problem:
                    "\(origin) is not an origin (https://host[:port], http://localhost[:port], android:apk-key-hash:<base64url>, ios:bundle-id:<id>)"
            )
        }
        appleAppIDs = env.list("PASSKEY_APPLE_APP_IDS")
        for id in appleAppIDs where !Self.isValidAppleAppID(id) {
            throw ConfigurationError(variable: "PASSKEY_APPLE_APP_IDS", problem: "expected TEAMID.bundle.id, got \(id)")
        }
        androidApps = try env.list("PASSKEY_ANDROID_APPS").map { entry in
            guard let app = Self.parseAndroidApp(entry) else {
                throw ConfigurationError(
                    variable: "PASSKEY_ANDROID_APPS", problem: "expected package:SHA256FINGERPRINT, got \(entry)")
            }
            return app
        }
        passkeyPages = try PasskeyEndpointPages(env)
        challengeLifetime = try env.duration("PASSKEY_CHALLENGE_LIFETIME", default: "5m")
        accountRegistrationLifetime = try env.duration("PASSKEY_ACCOUNT_REGISTRATION_LIFETIME", default: "10m")
        sessionLifetime = try env.duration("PASSKEY_SESSION_LIFETIME", default: "30d")
        passwordRateLimitPerEmail = try env.rate("PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL", default: "10/m")
        passwordRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS", default: "100/m")
        passkeyRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS", default: "6000/m")
        startRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_START_PER_ADDRESS", default: "6000/m")
        startRateLimitGlobal = try env.rate("PASSKEY_RATE_LIMIT_START_GLOBAL", default: "120000/m")
        signUpRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS", default: "30/m")
        signUpRateLimitGlobal = try env.rate("PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL", default: "3000/m")
        sweepInterval = try env.duration("PASSKEY_SWEEP_INTERVAL", default: "2s")
        sweepBatchSize = try env.integer("PASSKEY_SWEEP_BATCH_SIZE", default: 1000, range: 1...100_000)
        sweepBatchPause = try env.duration("PASSKEY_SWEEP_BATCH_PAUSE", default: "50ms", allowingZero: true)
        ceremonyRetention = try env.duration("PASSKEY_CEREMONY_RETENTION", default: "1m", allowingZero: true)
        sessionRetention = try env.duration("PASSKEY_SESSION_RETENTION", default: "7d", allowingZero: true)
        auditRetention = try env.duration("PASSKEY_AUDIT_RETENTION", default: "365d")
        trustedProxies = env.list("PASSKEY_TRUSTED_PROXIES")
        databaseURL = env.raw("DATABASE_URL")
        databasePoolSize = try env.integer("DATABASE_POOL_SIZE", default: 8, range: 1...256)
        let databaseWait = try env.duration("DATABASE_WAIT_TIMEOUT", default: "0", allowingZero: true)
        databaseWaitTimeout = databaseWait > 0 ? databaseWait : nil
        eventLoopThreads = try env.raw("EVENT_LOOP_THREADS").map { _ in
            try env.integer("EVENT_LOOP_THREADS", default: 1, range: 1...256)
        }
        gatewayListen = try env.address("GATEWAY_LISTEN", default: "127.0.0.1:8080")
        challengeServiceListen = try env.address("CHALLENGE_SERVICE_LISTEN", default: "127.0.0.1:50051")
        verificationServiceListen = try env.address("VERIFICATION_SERVICE_LISTEN", default: "127.0.0.1:50052")
        sessionServiceListen = try env.address("SESSION_SERVICE_LISTEN", default: "127.0.0.1:50053")
        challengeServiceAddresses = try env.targets(
            "CHALLENGE_SERVICE_ADDRESSES", default: [ServiceTarget(address: challengeServiceListen)])
        verificationServiceAddresses = try env.targets(
            "VERIFICATION_SERVICE_ADDRESSES", default: [ServiceTarget(address: verificationServiceListen)])
        sessionServiceAddresses = try env.targets(
            "SESSION_SERVICE_ADDRESSES", default: [ServiceTarget(address: sessionServiceListen)])
        serviceDiscoveryInterval = try env.duration("SERVICE_DISCOVERY_INTERVAL", default: "1s")
        metricsListen = try env.raw("METRICS_LISTEN").map { _ in try env.address("METRICS_LISTEN", default: "") }
        adminListen = try env.raw("ADMIN_LISTEN").map { _ in try env.address("ADMIN_LISTEN", default: "") }
        adminRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_ADMIN_PER_ADDRESS", default: "600/m")
        grpcTransport = try GRPCTransportConfiguration.read(env)
        grpcHealthListen = try env.raw("GRPC_HEALTH_LISTEN").map { _ in try env.address("GRPC_HEALTH_LISTEN", default: "") }
        gatewayTLSCertificate = env.raw("GATEWAY_TLS_CERTIFICATE")
        gatewayTLSKey = env.raw("GATEWAY_TLS_KEY")
        guard (gatewayTLSCertificate == nil) == (gatewayTLSKey == nil) else {
            throw ConfigurationError(
                variable: gatewayTLSCertificate == nil ? "GATEWAY_TLS_CERTIFICATE" : "GATEWAY_TLS_KEY",
                problem: "GATEWAY_TLS_CERTIFICATE and GATEWAY_TLS_KEY must be set together")
        }
        smtpURL = env.raw("SMTP_URL")
        if let smtpURL, !Self.isValidSMTPURL(smtpURL) {
            throw ConfigurationError(
                variable: "SMTP_URL", problem: "expected smtp://host[:port] or smtps://host[:port], got \(smtpURL)")
        }
        smtpUsername = env.raw("SMTP_USERNAME")
        smtpPassword = env.raw("SMTP_PASSWORD")
        guard smtpPassword == nil || smtpUsername != nil else {
            throw ConfigurationError(variable: "SMTP_USERNAME", problem: "is required when SMTP_PASSWORD is set")
        }
        smtpFrom = env.raw("SMTP_FROM") ?? "no-reply@\(relyingPartyID)"
        guard Self.isValidMailbox(smtpFrom) else {
            throw ConfigurationError(variable: "SMTP_FROM", problem: "expected an address like no-reply@example.com, got \(smtpFrom)")
        }
        switch env.string("SMTP_STARTTLS", default: "required") {
        case "required": smtpRequireStartTLS = true
        case "off": smtpRequireStartTLS = false
        case let other:
            throw ConfigurationError(variable: "SMTP_STARTTLS", problem: "expected required or off, got \(other)")
        }
        smtpCAFile = env.raw("SMTP_CA_FILE")
        recoveryRateLimitPerEmail = try env.rate("PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL", default: "20/h")
        recoveryRateLimitPerAddress = try env.rate("PASSKEY_RATE_LIMIT_RECOVERY_PER_ADDRESS", default: "100/h")
        switch env.string("PASSKEY_RECOVERY_REVOKES_SESSIONS", default: "true") {
        case "true": recoveryRevokesSessions = true
        case "false": recoveryRevokesSessions = false
        case let other:
            throw ConfigurationError(
                variable: "PASSKEY_RECOVERY_REVOKES_SESSIONS", problem: "expected true or false, got \(other)")
        }
        passkeyPolicy = try PasskeyPolicyConfiguration(env)
        tracing = try TracingConfiguration(env)
    }

    /// How gRPC is secured, required by every executable that speaks it: mutual TLS unless plaintext was asked
    /// for explicitly.
    public func requireGRPCTransport() throws -> GRPCTransportConfiguration {
        guard let grpcTransport else {
            throw ConfigurationError(variable: "GRPC_TLS_CERTIFICATE", problem: GRPCTransportConfiguration.missingProblem)
        }
        return grpcTransport
    }

    /// The database URL, required by the services that use the database.
    public func requireDatabaseURL() throws -> String {
        guard let databaseURL else {
            throw ConfigurationError(variable: "DATABASE_URL", problem: "is required (a postgresql:// URL)")
        }
        return databaseURL
    }

    static func isValidSMTPURL(_ url: String) -> Bool {
        let scheme = url.hasPrefix("smtps://") ? "smtps://" : url.hasPrefix("smtp://") ? "smtp://" : nil
        guard let scheme else { return false }
        let rest = url.dropFirst(scheme.count)
        guard !rest.contains("@"), !rest.contains("?"), !rest.contains("#"),
            let authority = rest.split(separator: "/", omittingEmptySubsequences: false).first, !authority.isEmpty
        else { return false }
        return rest.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value != 0x7F }
    }

    static func isValidMailbox(_ address: String) -> Bool {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && address.utf8.count <= 254
            && address.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">" }
    }

    static func isValidHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" }
        }
    }

    static func isValidOrigin(_ origin: String) -> Bool {
        if origin.hasPrefix("android:apk-key-hash:") {
            let hash = origin.dropFirst("android:apk-key-hash:".count)
            return hash.count == 43 && hash.unicodeScalars.allSatisfy(isBase64URLCharacter)
        }
        if origin.hasPrefix("ios:bundle-id:") {
            let id = origin.dropFirst("ios:bundle-id:".count)
            return !id.isEmpty && id.unicodeScalars.allSatisfy { isBase64URLCharacter($0) || $0 == "." }
        }
        let scheme: String
        if origin.hasPrefix("https://") {
            scheme = "https://"
        } else if origin.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return false
        }
        let authority = origin.dropFirst(scheme.count)
        let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let host = String(parts[0])
        if parts.count == 2 {
            guard let port = Int(parts[1]), (1...65535).contains(port), !parts[1].hasPrefix("0") else { return false }
        }
        guard isValidHostName(host), host == host.lowercased() else { return false }
        // Plain http is a secure context only on loopback.
        return scheme == "https://" || host == "localhost" || host.hasSuffix(".localhost") || host == "127.0.0.1"
    }

    static func isValidAppleAppID(_ id: String) -> Bool {
        guard let dot = id.firstIndex(of: ".") else { return false }
        let team = id[..<dot]
        let bundle = id[id.index(after: dot)...]
        return team.count == 10 && team.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isUppercase || ("0"..."9").contains($0)) }
            && !bundle.isEmpty && bundle.unicodeScalars.allSatisfy { isBase64URLCharacter($0) || $0 == "." }
    }

    static func parseAndroidApp(_ entry: String) -> AndroidApp? {
        guard let colon = entry.firstIndex(of: ":") else { return nil }
        let package = String(entry[..<colon])
        let fingerprint = String(entry[entry.index(after: colon)...]).uppercased()
        let bytes = fingerprint.split(separator: ":", omittingEmptySubsequences: false)
        guard !package.isEmpty, package.contains("."),
            package.unicodeScalars.allSatisfy({ ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }),
            bytes.count == 32, bytes.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isHexDigit) })
        else { return nil }
        return AndroidApp(packageName: package, sha256Fingerprint: fingerprint)
    }
}

private func isBase64URLCharacter(_ scalar: Unicode.Scalar) -> Bool {
    scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
}
