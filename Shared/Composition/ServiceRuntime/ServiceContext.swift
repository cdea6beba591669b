import Configuration
import Domain
import Observability
import PostgresStorage

/// What every service handler may use: configuration, logging, metrics, tracing and storage, built once in `main`.
public struct ServiceContext: Sendable {
    /// The executable's name, for example `verification-service`.
    public let name: String
    public let configuration: ServerConfiguration
    public let logger: Logger
    public let metrics: MetricsRegistry
    public let storage: PostgresStorage
    /// Makes each call's span, continuing the caller's trace.
    public let tracer: Tracer
    /// Work beyond the calls; ended after they drain.
    public let backgroundTasks: BackgroundTasks

    public init(
        name: String, configuration: ServerConfiguration, logger: Logger, metrics: MetricsRegistry,
        storage: PostgresStorage, tracer: Tracer
    ) {
        self.name = name
        self.configuration = configuration
        self.logger = logger
        self.metrics = metrics
        self.storage = storage
        self.tracer = tracer
        self.backgroundTasks = BackgroundTasks()
    }

    /// Runs `body` beside the calls until the service has drained; see `BackgroundTasks`.
    public func background(_ body: @escaping @Sendable () async -> Void) {
        backgroundTasks.start(body)
    }
}
