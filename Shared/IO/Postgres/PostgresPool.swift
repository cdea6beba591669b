import CLibPQ
import NetworkIO
import Observability
import Synchronization
import WorkerThreads

#if canImport(Glibc)
    import Glibc
#endif

/// Connections to one database, in two kinds:
/// - single statements (`query`) go over pipelined connections owned by event loops: the loop the caller runs on
///   (a request handler on a server loop) or, off every loop, the pool's own. The statement is sent and its result
///   read on that loop's thread, so a handler's query costs no thread switch, and concurrent statements share a
///   connection without waiting for each other's round trips.
/// - `withConnection` and `transaction` get a blocking connection on a worker thread of the pool's, for work that
///   holds a connection across several statements.
///
/// Callers `await` either way; libpq never blocks Swift's cooperative pool or an event loop. A connection found
/// dead (terminated backend, restarted server) is replaced before the next statement runs on it; a statement that
/// was running when its connection broke fails with `.connectionLost`.
public final class PostgresPool: Sendable {
    public let configuration: PostgresConfiguration
    private let workers: BlockingWorkerPool<PostgresConnection?>
    private let statistics = Mutex(PoolStatistics())
    /// The pool's own loop, for statements from threads that run no event loop.
    private let ownLoops: EventLoopGroup?
    private let pipelines = Mutex<[ObjectIdentifier: LoopConnections]>([:])
    private let isShutDown = Atomic<Bool>(false)
    /// Raised by ``dropConnections(_:)``: a blocking connection opened before is replaced before its next job.
    private let generation = Atomic<Int>(0)
    /// The order a multi-host URL's hosts are tried in; nil for one host.
    private let hostPreference: HostPreference?

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
        self.hostPreference = configuration.makeHostPreference()
        self.workers = BlockingWorkerPool(name: "postgres", threadCount: configuration.poolSize) { nil }
        self.ownLoops = try? EventLoopGroup(threadCount: 1, name: "postgres")
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
        try await withConnection(spanName: "connection", body)
    }

    private func withConnection<Result: Sendable>(
        spanName: String, _ body: @escaping @Sendable (PostgresConnection) throws -> Result
    ) async throws -> Result {
        // The statements run on a worker thread, outside this task: they are traced as children of a span made
        // here, which the connection carries while the job runs.
        let span = ActiveSpan.startChild(spanName, kind: .client)
        span?.set("db.system", "postgresql")
        let started = monotonicNanoseconds()
        var failed = false
        defer {
            span?.end()
            record(.transaction, since: started, failed: failed)
        }
        do {
            return try await workers.run { [self] connection in
                let generation = generation.load(ordering: .acquiring)
                // A connection whose host stopped answering on another connection (a frozen primary) is replaced
                // rather than left to wait out its reply timeout.
                if let current = connection,
                    !current.isHealthy || current.generation != generation
                        || hostPreference?.isSuspect(
                            host: current.host, port: current.port, now: monotonicNanoseconds())
                            == true
                {
                    connection = nil
                }
                let current: PostgresConnection
                if let existing = connection {
                    current = existing
                } else {
                    current = try openWaiting(since: started)
                    current.generation = generation
                    connection = current
                    statistics.withLock { $0.opened += 1 }
                }
                statistics.withLock { $0.busy += 1 }
                current.traceParent = span?.active
                defer {
                    current.traceParent = nil
                    statistics.withLock { $0.busy -= 1 }
                }
                return try body(current)
            }
        } catch is BlockingWorkerPool<PostgresConnection?>.Failure {
            failed = true
            span?.fail("the pool is shut down")
            throw PostgresError(.poolClosed, "the pool is shut down")
        } catch {
            failed = true
            span?.fail(String(describing: error))
            throw error
        }
    }

    /// A new blocking connection; while none can be opened (no host takes writes), tries again with a pause from
    /// 50 ms doubling to 400 ms, the last try at `connectWaitMilliseconds` after `since`. The job has not run yet.
    private func openWaiting(since: UInt64) throws -> PostgresConnection {
        var pause: UInt64 = 50_000_000
        let budget = UInt64(configuration.connectWaitMilliseconds) * 1_000_000
        while true {
            do {
                return try PostgresConnection(configuration: configuration, hostPreference: hostPreference)
            } catch let error as PostgresError where error.isConnectionFailure {
                let waited = monotonicNanoseconds() &- since
                guard waited < budget else { throw error }
                var delay = timespec(tv_sec: 0, tv_nsec: Int(min(pause, budget - waited)))
                nanosleep(&delay, nil)
                pause = min(pause * 2, 400_000_000)
            }
        }
    }

    enum StatementKind: String { case pipelined, transaction }

    private func record(_ kind: StatementKind, since started: UInt64, failed: Bool) {
        guard let metrics = configuration.statementMetrics else { return }
        metrics.registry.observe(
            "db_statement_duration_seconds",
            help: "Time from asking for a statement (pipelined) or a connection's job (transaction) to its end.",
            labels: ["service": metrics.service, "kind": kind.rawValue, "outcome": failed ? "error" : "ok"],
            Double(monotonicNanoseconds() &- started) / 1e9)
    }

    /// Runs one statement, in a transaction of its own.
    ///
    /// Text with several `;`-separated statements runs on a blocking connection: a pipeline carries one statement
    /// per message.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        guard !isShutDown.load(ordering: .acquiring) else {
            throw PostgresError(.poolClosed, "the pool is shut down")
        }
        guard !query.sql.utf8.contains(UInt8(ascii: ";")), let loop = EventLoop.current ?? ownLoops?.loops.first else {
            return try await withConnection { try $0.execute(query) }
        }
        let connections = pipelineConnections(on: loop)
        let span = ActiveSpan.startChild(PostgresConnection.spanName(query.sql), kind: .client)
        span?.set("db.system", "postgresql")
        span?.set("db.query.text", query.sql)
        let started = monotonicNanoseconds()
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<PostgresRows, PostgresError>, Never>) in
            if loop.inEventLoop {
                connections.submit(query) { continuation.resume(returning: $0) }
            } else {
                loop.execute { connections.submit(query) { continuation.resume(returning: $0) } }
            }
        }
        var failed = false
        if case .failure(let error) = outcome {
            failed = true
            span?.fail(error.message)
        }
        span?.end()
        record(.pipelined, since: started, failed: failed)
        return try outcome.get()
    }

    private func pipelineConnections(on loop: EventLoop) -> LoopConnections {
        pipelines.withLock { pipelines in
            if let existing = pipelines[ObjectIdentifier(loop)] { return existing }
            let created = LoopConnections(
                loop: loop, limit: configuration.poolSize,
                replyTimeoutNanoseconds: UInt64(configuration.replyTimeoutMilliseconds) * 1_000_000,
                hostPreference: hostPreference,
                connectWaitNanoseconds: UInt64(configuration.connectWaitMilliseconds) * 1_000_000
            ) { [weak self] done in
                // Weak: the pool holds its loops' connections, which must not hold the pool in turn (a pool that
                // was shut down is then freed, its own loop's descriptors with it).
                guard let self else { return done(.failure(PostgresError(.poolClosed, "the pool is shut down"))) }
                Task.detached { [self] in done(await openDetached()) }
            }
            pipelines[ObjectIdentifier(loop)] = created
            return created
        }
    }

    /// Opens a connection on a worker thread and hands its libpq handle over for a pipeline.
    private func openDetached() async -> Result<SendableHandle, PostgresError> {
        do {
            let handle = try await workers.run { [configuration, hostPreference] _ in
                let connection = try PostgresConnection(configuration: configuration, hostPreference: hostPreference)
                guard let handle = connection.detachHandle() else {
                    throw PostgresError(.connectionFailed, "the connection closed while opening")
                }
                return SendableHandle(handle: handle)
            }
            statistics.withLock { $0.opened += 1 }
            return .success(handle)
        } catch let error as PostgresError {
            return .failure(error)
        } catch is BlockingWorkerPool<PostgresConnection?>.Failure {
            return .failure(PostgresError(.poolClosed, "the pool is shut down"))
        } catch {
            return .failure(PostgresError(.connectionFailed, "\(error)"))
        }
    }

    /// Runs `body` inside `BEGIN … COMMIT`; any error thrown rolls the transaction back and is rethrown.
    @discardableResult
    public func transaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> Result
    ) async throws -> Result {
        try await withConnection(spanName: "transaction") { connection in
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

    /// Checks that the database answers and takes writes: it throws `.connectionFailed` (or another connection
    /// failure) when it cannot be reached, and a SQLSTATE 25006 error when it answers as a standby or read-only,
    /// after dropping every connection, so that the next ones look for the primary again.
    public func checkConnectivity() async throws {
        let rows = try await query(
            "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only")
        guard try rows.first?.decode(Bool.self, "read_only") == false else {
            let error = PostgresError(
                .server, "the database at \(configuration.redactedURL) is read-only (a standby)", sqlState: "25006")
            dropConnections(error)
            throw error
        }
    }

    /// Closes every open connection (statements in flight on them fail with `error`) and has the next
    /// statements open fresh ones: what follows a failover, when the old connections may reach a node that no
    /// longer takes writes.
    public func dropConnections(_ error: PostgresError) {
        generation.add(1, ordering: .releasing)
        for connections in pipelines.withLock({ Array($0.values) }) {
            connections.loop.executeOnLoop { connections.closeOpen(error) }
        }
    }

    /// Stops the workers after the jobs already queued; later calls fail with `.poolClosed`.
    public func shutdown() {
        isShutDown.store(true, ordering: .releasing)
        let closed = PostgresError(.poolClosed, "the pool is shut down")
        let open = pipelines.withLock { pipelines in
            defer { pipelines.removeAll() }
            return Array(pipelines.values)
        }
        for connections in open {
            connections.loop.executeOnLoop { connections.closeAll(closed) }
        }
        workers.shutdown()
        ownLoops?.shutdown()
    }
}
