import CLibPQ
import NetworkIO

#if canImport(Glibc)
    import Glibc
#endif

/// One libpq connection in pipeline mode, owned by one event loop: statements are sent without waiting for the
/// ones before them, each followed by a sync point so that it is its own transaction and its failure touches no
/// other, and results are read as the socket becomes readable, on the loop thread.
///
/// A statement submitted from a task running on the same loop therefore never leaves that thread: no worker
/// thread to wake, no hop back. Everything here is confined to `loop`'s thread, which is what makes the
/// `@unchecked Sendable` sound.
final class PipelinedConnection: EventLoopSource, @unchecked Sendable {
    typealias Completion = (Result<PostgresRows, PostgresError>) -> Void

    /// What the server will answer next, in order.
    private enum Item {
        /// A `Parse` sent ahead of the first use of a statement on this connection.
        case prepare(sql: String)
        /// A statement whose caller waits.
        case query(Waiter)
        /// The sync point after each statement.
        case sync
    }

    private final class Waiter {
        let completion: Completion
        let sentAt = monotonicNanoseconds()
        var outcome: Result<PostgresRows, PostgresError>?
        init(_ completion: @escaping Completion) { self.completion = completion }
    }

    let loop: EventLoop
    private var handle: OpaquePointer?
    private let socket: Int32
    private var key: UInt64 = 0
    private var items: [Item] = []
    private var head = 0
    private var prepared: [String: String] = [:]
    /// A failed `Parse`, reported to the statement that followed it.
    private var prepareFailure: PostgresError?
    private var watchingWritable = false
    private let onClose: (PipelinedConnection) -> Void
    private let replyTimeoutNanoseconds: UInt64
    private var replyTimer: TimerID?
    /// Statements sent whose results have not all arrived.
    private(set) var inFlight = 0
    /// When the last statement completed (monotonic nanoseconds).
    private(set) var lastReplyAt: UInt64 = 0
    /// An idle connection that answered within this long is not checked for a close before reuse.
    static let recentReplyNanoseconds: UInt64 = 1_000_000_000
    private(set) var isClosed = false

    /// Takes over an open connection (from ``PostgresConnection/detachHandle()``) on `loop`'s thread.
    /// Told when this connection's host stops answering or turns read-only.
    private let hostPreference: HostPreference?
    let host: String
    let port: String

    init(
        loop: EventLoop, handle: OpaquePointer, replyTimeoutNanoseconds: UInt64, hostPreference: HostPreference? = nil,
        onClose: @escaping (PipelinedConnection) -> Void
    ) throws(PostgresError) {
        self.loop = loop
        self.handle = handle
        self.hostPreference = hostPreference
        self.host = PQhost(handle).map { String(cString: $0) } ?? ""
        self.port = PQport(handle).map { String(cString: $0) } ?? ""
        self.socket = PQsocket(handle)
        self.replyTimeoutNanoseconds = replyTimeoutNanoseconds
        self.onClose = onClose
        guard socket >= 0, PQsetnonblocking(handle, 1) == 0, PQenterPipelineMode(handle) == 1 else {
            let message = PostgresResult.errorMessage(of: handle)
            PQfinish(handle)
            self.handle = nil
            throw PostgresError(.connectionFailed, "cannot switch the connection to pipeline mode: \(message)")
        }
        do {
            key = try loop.register(fd: socket, events: EpollEvents.readable, source: self)
        } catch {
            PQfinish(handle)
            self.handle = nil
            throw PostgresError(.connectionFailed, "cannot watch the connection's socket: \(error)")
        }
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Sends one statement; `completion` runs on the loop thread with its rows or error.
    func submit(_ query: PostgresQuery, completion: @escaping Completion) {
        guard let handle, !isClosed else {
            completion(.failure(PostgresError(.connectionLost, "the connection is closed")))
            return
        }
        var name = prepared[query.sql]
        let sent = PostgresResult.withParameters(query.binds) { count, types, values, lengths, formats -> Bool in
            if name == nil, prepared.count < PostgresConnection.maximumPreparedStatements {
                let newName = "p\(prepared.count + 1)"
                guard PQsendPrepare(handle, newName, query.sql, count, types) == 1 else { return false }
                items.append(.prepare(sql: query.sql))
                prepared[query.sql] = newName
                name = newName
            }
            if let name {
                return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) == 1
            }
            return PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 0) == 1
        }
        guard sent, PQpipelineSync(handle) == 1 else {
            let error = PostgresError(.connectionLost, PostgresResult.errorMessage(of: handle))
            close(error)
            completion(.failure(error))
            return
        }
        items.append(.query(Waiter(completion)))
        items.append(.sync)
        inFlight += 1
        if replyTimer == nil { armReplyTimer(sentAt: monotonicNanoseconds()) }
        flush()
    }

    /// Watches the oldest statement in flight: with no reply by its deadline, the connection is given up.
    private func armReplyTimer(sentAt: UInt64) {
        let deadline = sentAt &+ replyTimeoutNanoseconds
        let now = monotonicNanoseconds()
        replyTimer = loop.scheduleTimer(afterNanoseconds: deadline > now ? deadline - now : 0) { [weak self] in
            guard let self else { return }
            replyTimer = nil
            guard !isClosed, let oldest = oldestInFlightSentAt else { return }
            if monotonicNanoseconds() &- oldest >= replyTimeoutNanoseconds {
                hostPreference?.suspect(host: host, port: port, now: monotonicNanoseconds())
                close(PostgresError(.connectionLost, "the database sent no reply in time; the connection was dropped"))
            } else {
                armReplyTimer(sentAt: oldest)
            }
        }
    }

    /// Fails every statement in flight with `error` and closes the connection.
    func close(_ error: PostgresError) {
        guard !isClosed else { return }
        isClosed = true
        if let replyTimer { loop.cancelTimer(replyTimer) }
        replyTimer = nil
        loop.deregister(key: key, fd: socket)
        if let handle { PQfinish(handle) }
        handle = nil
        let pending = items[head...]
        items = []
        head = 0
        inFlight = 0
        for item in pending {
            if case .query(let waiter) = item { waiter.completion(.failure(error)) }
        }
        onClose(self)
    }

    func handleEvents(_ events: UInt32) {
        guard let handle, !isClosed else { return }
        if events & EpollEvents.writable != 0 { flush() }
        if events & (EpollEvents.readable | EpollEvents.error | EpollEvents.hangUp) != 0 {
            guard PQconsumeInput(handle) == 1 else {
                close(PostgresError(.connectionLost, PostgresResult.errorMessage(of: handle)))
                return
            }
            readResults(handle)
            if !isClosed, PQstatus(handle) != CONNECTION_OK {
                close(PostgresError(.connectionLost, PostgresResult.errorMessage(of: handle)))
            }
        }
    }

    private func flush() {
        guard let handle else { return }
        switch PQflush(handle) {
        case 0:
            if watchingWritable {
                watchingWritable = false
                loop.modify(key: key, fd: socket, events: EpollEvents.readable)
            }
        case 1:
            if !watchingWritable {
                watchingWritable = true
                loop.modify(key: key, fd: socket, events: EpollEvents.readable | EpollEvents.writable)
            }
        default:
            close(PostgresError(.connectionLost, PostgresResult.errorMessage(of: handle)))
        }
    }

    /// Reads every result that has fully arrived and completes the statements they finish.
    private func readResults(_ handle: OpaquePointer) {
        var readOnlyServer: PostgresError?
        while head < items.count, !isClosed, PQisBusy(handle) == 0 {
            let result = PQgetResult(handle)
            switch items[head] {
            case .sync:
                // The sync point's own result; no NULL follows it.
                if let result { PQclear(result) }
                head += 1
            case .prepare(let sql):
                guard let result else {
                    head += 1
                    continue
                }
                if PQresultStatus(result) != PGRES_COMMAND_OK {
                    prepared[sql] = nil
                    if case .failure(let error) = PostgresResult.outcome(result, connection: handle) {
                        prepareFailure = error
                    }
                }
                PQclear(result)
            case .query(let waiter):
                guard let result else {
                    head += 1
                    inFlight -= 1
                    lastReplyAt = monotonicNanoseconds()
                    let outcome =
                        waiter.outcome ?? .failure(PostgresError(.connectionLost, "the statement returned nothing"))
                    prepareFailure = nil
                    waiter.completion(outcome)
                    continue
                }
                if waiter.outcome == nil {
                    if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                        waiter.outcome = .failure(
                            prepareFailure ?? PostgresError(.server, "the statement was skipped after an error"))
                    } else {
                        waiter.outcome = PostgresResult.outcome(result, connection: handle)
                        if case .failure(let error) = waiter.outcome, error.isReadOnlyServer { readOnlyServer = error }
                    }
                }
                PQclear(result)
            }
        }
        if let readOnlyServer, !isClosed {
            hostPreference?.suspect(host: host, port: port, now: monotonicNanoseconds())
            // A standby or a demoted primary answers every write so: the statements behind this one fail the same
            // way now, and the next ones go to a fresh connection, which finds the primary.
            close(readOnlyServer)
            return
        }
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    /// When the oldest statement still in flight was sent (monotonic nanoseconds), or nil when none is.
    var oldestInFlightSentAt: UInt64? {
        for item in items[head...] {
            if case .query(let waiter) = item { return waiter.sentAt }
        }
        return nil
    }

    /// Whether an idle connection is still open. A backend that was terminated while the connection sat idle
    /// sends a FATAL notice and closes its socket, which the loop may not have read yet: read it now, so that the
    /// next statement goes to a fresh connection instead of failing on this one.
    func isOpenAfterIdle() -> Bool {
        guard let handle, !isClosed else { return false }
        // A connection that answered moments ago is taken as open without a syscall; a backend terminated in that
        // window fails the next statement as a lost connection, as it would mid-statement anyway.
        if monotonicNanoseconds() &- lastReplyAt < Self.recentReplyNanoseconds { return true }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, 0) > 0, PQconsumeInput(handle) == 0 || PQstatus(handle) != CONNECTION_OK {
            close(PostgresError(.connectionLost, PostgresResult.errorMessage(of: handle)))
            return false
        }
        return true
    }
}

/// The pipelined connections a pool keeps on one event loop. A statement is pipelined behind the busiest connection
/// that is moving (its oldest statement was sent, or its latest reply arrived, moments ago), else goes to an idle
/// one: few connections carrying many statements cost the server far less than many connections carrying one each. Behind
/// a connection that is stuck on a slow statement, a statement instead waits for a new connection while there are
/// fewer than `limit`, and only beyond that joins the least busy queue. Confined to `loop`'s thread.
final class LoopConnections: @unchecked Sendable {
    /// A connection whose oldest statement in flight, or latest reply, is younger than this takes more statements.
    static let movingPipelineNanoseconds: UInt64 = 20_000_000
    /// Never more statements than this in flight on one connection while another may be opened.
    static let pipelineDepth = 32

    typealias Opener = @Sendable (_ done: @escaping @Sendable (Result<SendableHandle, PostgresError>) -> Void) -> Void

    let loop: EventLoop
    private let limit: Int
    private let replyTimeoutNanoseconds: UInt64
    private let open: Opener
    private var connections: [PipelinedConnection] = []
    private var opening = 0
    /// Statements waiting for a connection, with when each began to wait.
    private var waiting: [(query: PostgresQuery, completion: PipelinedConnection.Completion, since: UInt64)] = []
    private var closedError: PostgresError?

    private let hostPreference: HostPreference?
    /// How long a statement may wait for a connection while none can be opened before it fails (0: not at all).
    private let connectWaitNanoseconds: UInt64
    /// The pause before the next try while none can be opened: 50 ms, doubling to 400 ms.
    private var retryDelayNanoseconds: UInt64 = 50_000_000
    private var retryTimer: TimerID?

    init(
        loop: EventLoop, limit: Int, replyTimeoutNanoseconds: UInt64, hostPreference: HostPreference? = nil,
        connectWaitNanoseconds: UInt64 = 0, open: @escaping Opener
    ) {
        self.loop = loop
        self.hostPreference = hostPreference
        self.connectWaitNanoseconds = connectWaitNanoseconds
        self.limit = max(1, limit)
        self.replyTimeoutNanoseconds = replyTimeoutNanoseconds
        self.open = open
    }

    func submit(_ query: PostgresQuery, completion: @escaping PipelinedConnection.Completion) {
        submit(query, mayOpen: true, completion: completion)
    }

    private func submit(_ query: PostgresQuery, mayOpen: Bool, completion: @escaping PipelinedConnection.Completion) {
        if let closedError {
            completion(.failure(closedError))
            return
        }
        // The busiest connection that is still moving: statements gather on as few connections as keep up.
        let now = monotonicNanoseconds()
        var busiestMoving: PipelinedConnection?
        for connection in connections where isMoving(connection, now: now) {
            if connection.inFlight > busiestMoving?.inFlight ?? -1 { busiestMoving = connection }
        }
        if let busiestMoving {
            busiestMoving.submit(query, completion: completion)
            return
        }
        // Else an idle one; one closed by the server meanwhile leaves the list on this check, as does one to a host
        // that stopped answering on another connection (a frozen primary).
        while let idle = connections.first(where: { $0.inFlight == 0 }) {
            if hostPreference?.isSuspect(host: idle.host, port: idle.port, now: now) == true {
                idle.close(PostgresError(.connectionFailed, "the database host stopped answering"))
            } else if idle.isOpenAfterIdle() {
                idle.submit(query, completion: completion)
                return
            }
            connections.removeAll { $0 === idle }
        }
        // Every connection is stuck behind a slow statement or full.
        if let leastBusy = connections.min(by: { $0.inFlight < $1.inFlight }),
            !mayOpen || connections.count + opening >= limit
        {
            leastBusy.submit(query, completion: completion)
            return
        }
        waiting.append((query, completion, monotonicNanoseconds()))
        // One connection on its way for each statement waiting, within the limit.
        while opening < waiting.count && connections.count + opening < limit { openConnection() }
    }

    /// Moving: its oldest statement was sent moments ago, or a reply arrived moments ago. Under load a deep pipeline
    /// keeps answering, and is not stuck however long its oldest statement has waited; opening connections then
    /// would only add work for a server that is already busy.
    private func isMoving(_ connection: PipelinedConnection, now: UInt64) -> Bool {
        guard connection.inFlight < Self.pipelineDepth, let sentAt = connection.oldestInFlightSentAt else {
            return false
        }
        return now &- max(sentAt, connection.lastReplyAt) < Self.movingPipelineNanoseconds
    }

    /// Closes the connections open now, failing their statements in flight with `error`; later statements open
    /// fresh ones.
    func closeOpen(_ error: PostgresError) {
        let open = connections
        connections = []
        for connection in open { connection.close(error) }
    }

    /// Closes every connection; statements in flight or waiting fail with `error`, later ones too.
    func closeAll(_ error: PostgresError) {
        closedError = error
        if let retryTimer { loop.cancelTimer(retryTimer) }
        retryTimer = nil
        for connection in connections { connection.close(error) }
        connections = []
        let pending = waiting
        waiting = []
        for statement in pending { statement.completion(.failure(error)) }
    }

    private func openConnection() {
        opening += 1
        open { [self] result in
            loop.execute { [self] in opened(result) }
        }
    }

    private func opened(_ result: Result<SendableHandle, PostgresError>) {
        opening -= 1
        let connection: PipelinedConnection
        do {
            let handle = try result.get().handle
            if let closedError {
                PQfinish(handle)
                throw closedError
            }
            connection = try PipelinedConnection(
                loop: loop, handle: handle, replyTimeoutNanoseconds: replyTimeoutNanoseconds,
                hostPreference: hostPreference
            ) { [weak self] closed in
                self?.connections.removeAll { $0 === closed }
            }
        } catch {
            let failure = error as? PostgresError ?? PostgresError(.connectionFailed, "\(error)")
            if connections.isEmpty && opening == 0 && failure.isConnectionFailure && closedError == nil
                && connectWaitNanoseconds > 0
            {
                // No host takes writes now: in a failover, for the seconds until a standby is promoted. The
                // statements were never sent, so they may wait for it, within their budget.
                failWaiting(olderThan: connectWaitNanoseconds, failure)
                scheduleRetry(failure)
            } else if connections.isEmpty && opening == 0 {
                failWaiting(olderThan: 0, failure)
            } else {
                // Not every waiting statement gets a connection of its own: pipeline the rest on the open ones.
                redistributeExcess()
            }
            return
        }
        connections.append(connection)
        retryDelayNanoseconds = 50_000_000
        if !waiting.isEmpty {
            let statement = waiting.removeFirst()
            connection.submit(statement.query, completion: statement.completion)
        }
        redistributeExcess()
    }

    /// Fails the waiting statements that have waited `age` or longer (every one for 0).
    private func failWaiting(olderThan age: UInt64, _ failure: PostgresError) {
        let now = monotonicNanoseconds()
        let expired = waiting.filter { now &- $0.since >= age }
        waiting.removeAll { now &- $0.since >= age }
        for statement in expired { statement.completion(.failure(failure)) }
    }

    /// Tries to open a connection again after a pause, while statements wait and none is open or opening; each
    /// pass fails the statements whose wait is over.
    private func scheduleRetry(_ failure: PostgresError) {
        guard retryTimer == nil, !waiting.isEmpty else { return }
        retryTimer = loop.scheduleTimer(afterNanoseconds: retryDelayNanoseconds) { [weak self] in
            guard let self else { return }
            retryTimer = nil
            retryDelayNanoseconds = min(retryDelayNanoseconds * 2, 400_000_000)
            guard closedError == nil, connections.isEmpty else { return }
            failWaiting(olderThan: connectWaitNanoseconds, failure)
            if !waiting.isEmpty && opening == 0 { openConnection() }
            scheduleRetry(failure)
        }
    }

    /// Statements waiting beyond the connections still opening are pipelined on the open ones.
    private func redistributeExcess() {
        guard !connections.isEmpty, waiting.count > opening else { return }
        let excess = waiting.suffix(waiting.count - opening)
        waiting.removeLast(excess.count)
        for statement in excess { submit(statement.query, mayOpen: false, completion: statement.completion) }
    }
}

/// A libpq connection handle in transit from the thread that opened it to the loop that will own it.
struct SendableHandle: @unchecked Sendable {
    let handle: OpaquePointer
}
