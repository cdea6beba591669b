import Synchronization
import WorkerThreads

/// A fixed-size pool of connections, each owned by a worker thread of its own.
///
/// Callers `await`; the blocking libpq work runs on the pool's threads, never on Swift's cooperative pool.
/// A connection found dead (terminated backend, restarted server) is replaced before the next statement runs on
/// it; a statement that was running when its connection broke fails with `.connectionLost`.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    private let workers: BlockingWorkerPool<PostgresConnection?>
    private let statistics = Mutex(PoolStatistics())

    /// Pool use, for metrics.
    public struct PoolStatistics: Sendable {
        /// Connections currently running a job.
        public var busy = 0
        /// Connections opened since start, replacements included.
        public var opened = 0
        /// Jobs waiting for a connection.
        public var waiting = 0
    }

    /// Starts the worker threads. Connections open lazily; call `checkConnectivity()` to fail fast at start.
    public init(configuration: PostgresConfiguration) {
        self.configuration = configuration
        self.workers = BlockingWorkerPool(name: "postgres", threadCount: configuration.poolSize) { nil }
    }

    /// Current pool use.
    public var currentStatistics: PoolStatistics {
        var snapshot = statistics.withLock { $0 }
        snapshot.waiting = workers.queuedCount
        return snapshot
    }

    /// Runs `body` with a healthy connection on a pool thread.
    public func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Result
    ) async throws -> Result {
        do {
            return try await workers.run { [self] connection in
                if let current = connection, !current.isHealthy { connection = nil }
                let current: PostgresConnection
                if let existing = connection {
                    current = existing
                } else {
                    current = try PostgresConnection(configuration: configuration)
                    connection = current
                    statistics.withLock { $0.opened += 1 }
                }
                statistics.withLock { $0.busy += 1 }
                defer { statistics.withLock { $0.busy -= 1 } }
                return try body(current)
            }
        } catch is BlockingWorkerPool<PostgresConnection?>.Failure {
            throw PostgresError(.poolClosed, "the pool is shut down")
        }
    }

    /// Runs one statement.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        try await withConnection { try $0.execute(query) }
    }

    /// Runs `body` inside `BEGIN … COMMIT`; any error thrown rolls the transaction back and is rethrown.
    @discardableResult
    public func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try connection.execute("BEGIN")
            do {
                let result = try body(connection)
                try connection.execute("COMMIT")
                return result
            } catch {
                // The rollback can itself fail when the connection broke; the original error is the one to report.
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Opens a connection now and runs `SELECT 1`, so a bad or unreachable database is reported at start.
    public func checkConnectivity() async throws {
        try await query("SELECT 1")
    }

    /// Stops the workers after the jobs already queued; later calls fail with `.poolClosed`.
    public func shutdown() {
        workers.shutdown()
    }
}
