import Configuration
import Domain
import Observability
import PostgresStorage

/// What every service handler may use: logging, metrics, tracing and the database, built once in `main` (the
/// service's configuration goes to its `register` beside it). A service builds the repositories it uses on `database.pool`, and no others.
public struct ServiceContext: Sendable {
    /// The executable's name, for example `verification-service`.
    public let name: String
    public let logger: Logger
    public let metrics: MetricsRegistry
    public let database: PostgresStorage
    /// Makes each call's span, continuing the caller's trace.
    public let tracer: Tracer
    /// Work beyond the calls; ended after they drain.
    public let backgroundTasks: BackgroundTasks

    public init(
        name: String, logger: Logger, metrics: MetricsRegistry, database: PostgresStorage, tracer: Tracer
    ) {
        self.name = name
        self.logger = logger
        self.metrics = metrics
        self.database = database
        self.tracer = tracer
        self.backgroundTasks = BackgroundTasks()
    }

    /// Runs `body` beside the calls until the service has drained; see `BackgroundTasks`.
    public func background(_ body: @escaping @Sendable () async -> Void) {
        backgroundTasks.start(body)
    }

    /// Deletes the ended rows of `tables` (which this service owns) on every replica, in batches, every
    /// `settings.interval`; see ``Sweeper``.
    public func sweep(_ tables: [SweptTable], settings: SweepConfiguration) {
        let sweeper = Sweeper(
            service: name, tables: tables, settings: Sweeper.Settings(settings), metrics: metrics, logger: logger)
        background { await sweeper.run() }
    }
}
