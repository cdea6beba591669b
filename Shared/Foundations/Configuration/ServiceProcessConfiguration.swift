/// What every gRPC service process reads, whatever it serves: where it listens, its database, its server's threads,
/// how gRPC is secured, where it serves metrics and health, and where its traces go. `ServiceMain` runs a service
/// from it.
public struct ServiceProcessConfiguration: Sendable, Equatable {
    /// The service, and its own gRPC address (`CHALLENGE_SERVICE_LISTEN`, ...).
    public var service: GRPCServiceName
    public var listen: ServiceAddress
    /// The variable that sets ``listen``.
    public var listenVariable: String { service.listenVariable }
    /// `DATABASE_URL`; nil: the run command starts a local Postgres and sets it. Checked by ``requireDatabaseURL()``.
    public var databaseURL: String?
    public var databasePoolSize: Int
    /// How long a service that cannot reach its database at start keeps trying before it gives up and exits
    /// (`DATABASE_WAIT_TIMEOUT`); nil (`0`, the default) waits as long as it takes. Meanwhile it serves health
    /// as NOT_SERVING, and liveness as SERVING.
    public var databaseWaitTimeout: Double?
    /// `EVENT_LOOP_THREADS`; nil means one per online core.
    public var eventLoopThreads: Int?
    /// Where the service serves `/metrics` and `/healthz` over HTTP (`METRICS_LISTEN`); nil for none.
    public var metricsListen: ServiceAddress?
    /// How gRPC is secured; nil when nothing says (refused by `GRPCTransportConfiguration.require`).
    public var grpcTransport: GRPCTransportConfiguration?
    /// Where the service also serves `grpc.health.v1` alone, in plaintext, for probes that cannot speak TLS
    /// (`GRPC_HEALTH_LISTEN`); nil for none.
    public var grpcHealthListen: ServiceAddress?
    /// Trace export (`OTEL_*`).
    public var tracing: TracingConfiguration

    /// Reads and validates the variables of `service`'s process. Throws `ConfigurationError` naming the first bad one.
    public init(_ env: EnvironmentReader, service: GRPCServiceName) throws {
        self.service = service
        listen = try env.listenAddress(service)
        databaseURL = env.raw("DATABASE_URL")
        databasePoolSize = try env.integer("DATABASE_POOL_SIZE", default: 8, range: 1...256)
        let databaseWait = try env.duration("DATABASE_WAIT_TIMEOUT", default: "0", allowingZero: true)
        databaseWaitTimeout = databaseWait > 0 ? databaseWait : nil
        eventLoopThreads = try env.eventLoopThreads()
        metricsListen = try env.optionalAddress("METRICS_LISTEN")
        grpcTransport = try GRPCTransportConfiguration.read(env)
        grpcHealthListen = try env.optionalAddress("GRPC_HEALTH_LISTEN")
        tracing = try TracingConfiguration(env)
    }

    /// The database URL, which every service needs.
    public func requireDatabaseURL() throws -> String {
        guard let databaseURL else {
            throw ConfigurationError(variable: "DATABASE_URL", problem: "is required (a postgresql:// URL)")
        }
        return databaseURL
    }
}

/// A gRPC service's whole configuration: what every service process reads (``process``), and its own values.
/// Each service reads only its own variables, so a value that only another service uses cannot stop it.
public protocol ServiceConfiguration: Sendable {
    /// The service this configures.
    static var service: GRPCServiceName { get }
    /// Reads and validates the service's variables. Throws `ConfigurationError` naming the first bad one.
    init(_ env: EnvironmentReader) throws
    var process: ServiceProcessConfiguration { get }
}

extension ServiceConfiguration {
    /// Reads and validates `environment`.
    public init(environment: [String: String]) throws {
        try self.init(EnvironmentReader(environment))
    }
}

/// How the services that own tables of ended rows delete them (`PASSKEY_SWEEP_*`).
public struct SweepConfiguration: Sendable, Equatable {
    /// Seconds between sweeps of ended rows.
    public var interval: Double
    /// Rows one sweep statement deletes at most.
    public var batchSize: Int
    /// Seconds a sweep waits between two batches, so that it never holds the table's rows for long.
    public var batchPause: Double

    public init(_ env: EnvironmentReader) throws {
        interval = try env.duration("PASSKEY_SWEEP_INTERVAL", default: "2s")
        batchSize = try env.integer("PASSKEY_SWEEP_BATCH_SIZE", default: 1000, range: 1...100_000)
        batchPause = try env.duration("PASSKEY_SWEEP_BATCH_PAUSE", default: "50ms", allowingZero: true)
    }
}
