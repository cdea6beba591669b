import Foundation
import Synchronization

/// A fixed-size pool of connections, each owned by a worker thread of its own.
///
/// Callers `await`; the blocking libpq work runs on the pool's threads, never on Swift's cooperative pool.
/// A connection found dead (terminated backend, restarted server) is replaced before the next statement runs on
/// it; a statement that was running when its connection broke fails with `.connectionLost`.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    private let queue: JobQueue
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
        self.queue = JobQueue()
        for index in 0..<configuration.poolSize {
            let worker = Thread { [self] in runWorker() }
            worker.name = "postgres-\(index)"
            worker.start()
        }
    }

    /// Current pool use.
    public var currentStatistics: PoolStatistics {
        var snapshot = statistics.withLock { $0 }
        snapshot.waiting = queue.pendingCount
        return snapshot
    }

    /// Runs `body` with a connection on a pool thread.
    public func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.enqueue { outcome in
                switch outcome {
                case .success(let connection): continuation.resume(with: Swift.Result { try body(connection) })
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
            if !accepted {
                continuation.resume(throwing: PostgresError(.poolClosed, "the pool is shut down"))
            }
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
        queue.close()
    }

    /// A worker's life: take a job, make sure its connection is alive, run the job; until the pool closes.
    private func runWorker() {
        var connection: PostgresConnection?
        while let job = queue.next() {
            if let current = connection, !current.isHealthy { connection = nil }
            if connection == nil {
                do {
                    connection = try PostgresConnection(configuration: configuration)
                    statistics.withLock { $0.opened += 1 }
                } catch {
                    job(.failure(error))
                    continue
                }
            }
            guard let current = connection else { continue }
            statistics.withLock { $0.busy += 1 }
            job(.success(current))
            statistics.withLock { $0.busy -= 1 }
        }
    }
}

/// A job handed to a worker: it receives a healthy connection, or the error that kept one from opening.
typealias PoolJob = @Sendable (Result<PostgresConnection, any Error>) -> Void

/// A blocking FIFO of jobs shared by the worker threads.
final class JobQueue: Sendable {
    private struct State {
        var jobs: [PoolJob] = []
        var head = 0
        var closed = false
    }

        private let condition = NSCondition()
    // Only read or written while `condition` is locked.
    private nonisolated(unsafe) var state = State()

    var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.jobs.count - state.head
    }

    /// Adds a job; false when the queue is closed.
    func enqueue(_ job: @escaping PoolJob) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !state.closed else { return false }
        state.jobs.append(job)
        condition.signal()
        return true
    }

    /// Blocks until a job is available; nil once the queue is closed and empty.
    func next() -> PoolJob? {
        condition.lock()
        defer { condition.unlock() }
        while state.head == state.jobs.count && !state.closed { condition.wait() }
        guard state.head < state.jobs.count else { return nil }
        let job = state.jobs[state.head]
        state.head += 1
        if state.head > 64 && state.head * 2 > state.jobs.count {
            state.jobs.removeFirst(state.head)
            state.head = 0
        }
        return job
    }

    func close() {
        condition.lock()
        state.closed = true
        condition.broadcast()
        condition.unlock()
    }
}
