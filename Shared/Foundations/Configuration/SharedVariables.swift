import PublicSuffixes

/// The variables more than one process reads, each read and validated here only, so that every process that reads
/// one takes the same default and refuses the same values. Which process reads which is its own configuration's
/// business (`GatewayConfiguration`, `ChallengeServiceConfiguration`, ...), and `docs/configuration.md` lists it.
extension EnvironmentReader {
    /// `PASSKEY_RP_ID`: the relying party's domain, lowercased.
    public func relyingPartyID() throws -> String {
        let id = string("PASSKEY_RP_ID", default: "localhost").lowercased()
        guard ConfigurationValues.isValidHostName(id) else {
            throw ConfigurationError(variable: "PASSKEY_RP_ID", problem: "expected a domain name, got \(id)")
        }
        guard let suffixes = PublicSuffixList.shipped else {
            throw ConfigurationError(
                variable: "PASSKEY_RP_ID",
                problem:
                    "the Public Suffix List (public_suffix_list.dat beside the executable) is missing or empty, so \(id) cannot be checked"
            )
        }
        // Browsers refuse a public suffix as a relying party ID: no passkey could ever be made for it.
        guard !suffixes.isListedPublicSuffix(id) else {
            throw ConfigurationError(
                variable: "PASSKEY_RP_ID",
                problem:
                    "\(id) is a public suffix (Public Suffix List), and browsers make no passkey for one: use your own domain under it"
            )
        }
        return id
    }

    /// `PASSKEY_RP_NAME`: the name people see for the service.
    public func relyingPartyName() -> String { string("PASSKEY_RP_NAME", default: "Passkey Demo") }

    /// `PASSKEY_ORIGINS`: the allowed client-data origins, exact match: web origins and app origins
    /// (`android:apk-key-hash:…`, `ios:bundle-id:…`).
    public func origins() throws -> [String] {
        let origins = list("PASSKEY_ORIGINS", default: ["http://localhost:8080"])
        guard !origins.isEmpty else {
            throw ConfigurationError(variable: "PASSKEY_ORIGINS", problem: "at least one origin is required")
        }
        for origin in origins where !ConfigurationValues.isValidOrigin(origin) {
            throw ConfigurationError(
                variable: "PASSKEY_ORIGINS",
                problem:
                    "\(origin) is not an origin (https://host[:port], http://localhost[:port], android:apk-key-hash:<base64url>, ios:bundle-id:<id>)"
            )
        }
        return origins
    }

    /// `PASSKEY_RELATED_ORIGINS`: web origins outside the relying party ID's domain that use its passkeys through
    /// related origin requests (WebAuthn Level 3 §5.11). They are allowed client-data origins as well, and the
    /// gateway lists them in `/.well-known/webauthn`.
    public func relatedOrigins() throws -> [String] {
        try webOrigins("PASSKEY_RELATED_ORIGINS") {
            "\($0.prefix(120)) is not a web origin (https://host[:port], or http://localhost[:port])"
        }
    }

    /// A list of web origins (``ConfigurationValues/isValidWebOrigin(_:)``), empty when unset; the first entry that is
    /// not one is refused with the problem `refusal` words for it.
    public func webOrigins(_ name: String, refusal: (String) -> String) throws -> [String] {
        let origins = list(name)
        for origin in origins where !ConfigurationValues.isValidWebOrigin(origin) {
            throw ConfigurationError(variable: name, problem: refusal(origin))
        }
        return origins
    }

    /// `PASSKEY_SESSION_LIFETIME`, in seconds.
    public func sessionLifetime() throws -> Double { try duration("PASSKEY_SESSION_LIFETIME", default: "30d") }

    /// `PASSKEY_CEREMONY_RETENTION`: seconds a ceremony row (a challenge, a recovery code) is kept after it expired
    /// or was consumed.
    public func ceremonyRetention() throws -> Double {
        try duration("PASSKEY_CEREMONY_RETENTION", default: "1m", allowingZero: true)
    }

    /// `EVENT_LOOP_THREADS`: event-loop threads for a process's server; nil means one per online core. Processes
    /// that share a small machine do better with fewer each.
    public func eventLoopThreads() throws -> Int? {
        try raw("EVENT_LOOP_THREADS").map { _ in try integer("EVENT_LOOP_THREADS", default: 1, range: 1...256) }
    }

    /// Where a gRPC service listens (`CHALLENGE_SERVICE_LISTEN`, ...); the gateway's default target for it too.
    public func listenAddress(_ service: GRPCServiceName) throws -> ServiceAddress {
        try address(service.listenVariable, default: service.defaultListen)
    }

    /// An optional listen address: nil when the variable is unset.
    public func optionalAddress(_ name: String) throws -> ServiceAddress? {
        try raw(name).map { _ in try address(name, default: "") }
    }

    /// `true` or `false`, or the default when unset.
    public func flag(_ name: String, default defaultValue: Bool) throws -> Bool {
        switch string(name, default: defaultValue ? "true" : "false") {
        case "true": return true
        case "false": return false
        case let other:
            throw ConfigurationError(variable: name, problem: "expected true or false, got \(other.prefix(40))")
        }
    }
}

/// The three gRPC services, with the variable each listens on and its default.
public enum GRPCServiceName: String, Sendable, CaseIterable {
    case challengeService = "challenge-service"
    case verificationService = "verification-service"
    case sessionService = "session-service"

    /// `CHALLENGE_SERVICE_LISTEN`, `VERIFICATION_SERVICE_LISTEN` or `SESSION_SERVICE_LISTEN`.
    public var listenVariable: String {
        switch self {
        case .challengeService: "CHALLENGE_SERVICE_LISTEN"
        case .verificationService: "VERIFICATION_SERVICE_LISTEN"
        case .sessionService: "SESSION_SERVICE_LISTEN"
        }
    }

    public var defaultListen: String {
        switch self {
        case .challengeService: "127.0.0.1:50051"
        case .verificationService: "127.0.0.1:50052"
        case .sessionService: "127.0.0.1:50053"
        }
    }
}
