import CLibPQ
import Foundation
import Glibc
import NetworkIO
import Observability

/// One libpq connection. Not thread-safe: the pool gives each connection to one worker thread, and every call on
/// it blocks that thread, never a Swift concurrency thread.
public final class PostgresConnection {
    private var handle: OpaquePointer?
    private let configuration: PostgresConfiguration
    /// Statements prepared on this connection, by SQL text: parsed and planned once, then only executed.
    private var prepared: [String: String] = [:]
    /// Beyond this many distinct statements, further ones run unprepared.
    static let maximumPreparedStatements = 256
    /// The span of the job this connection runs now (a transaction), whose statements are traced as its children.
    var traceParent: ActiveSpan?
    /// The pool's generation when this connection was opened (``PostgresPool/dropConnections(_:)``).
    var generation = 0

    /// Where the hosts of a multi-host URL are tried from (``HostPreference``); nil for one host.
    let hostPreference: HostPreference?
    /// The host and port this connection reached.
    private(set) var host = ""
    private(set) var port = ""

    /// Opens a connection and sets the session up (UTC, ISO dates, statement timeout).
    /// Throws `.connectionFailed` with libpq's reason and the redacted URL.
    public convenience init(configuration: PostgresConfiguration) throws {
        try self.init(configuration: configuration, hostPreference: nil)
    }

    /// A connection whose hosts are tried in `hostPreference`'s order, which learns where it got.
    init(configuration: PostgresConfiguration, hostPreference: HostPreference?) throws {
        self.configuration = configuration
        self.hostPreference = hostPreference
        // Keywords before `dbname` are defaults the URL may override: a URL naming several hosts (libpq
        // multi-host) reaches the one that takes writes unless it says otherwise.
        let keywords = ["connect_timeout", "application_name", "target_session_attrs", "dbname"]
        let values = [
            String(configuration.connectTimeoutSeconds), configuration.applicationName, "read-write", configuration.url,
        ]
        // With a host preference, one libpq attempt per list it gives, the `host` and `port` after `dbname`
        // overriding the URL's own lists.
        let attempts: [(host: String, port: String)?] =
            hostPreference.map { $0.connectionAttempts(now: monotonicNanoseconds()) } ?? [nil]
        var reason = ""
        var opened: OpaquePointer?
        for attempt in attempts {
            let extraKeywords = attempt == nil ? [] : ["host", "port"]
            let extraValues = attempt.map { [$0.host, $0.port] } ?? []
            let connection = withCStringArray(keywords + extraKeywords) { keywordPointers in
                withCStringArray(values + extraValues) { valuePointers in
                    PQconnectdbParams(keywordPointers, valuePointers, 1)
                }
            }
            guard let connection else {
                throw PostgresError(.connectionFailed, "out of memory opening a connection")
            }
            if PQstatus(connection) == CONNECTION_OK {
                opened = connection
                break
            }
            reason = errorMessage(of: connection)
            PQfinish(connection)
        }
        guard let connection = opened else {
            throw PostgresError(
                .connectionFailed, "cannot connect to the database at \(configuration.redactedURL): \(reason)")
        }
        handle = connection
        host = PQhost(connection).map { String(cString: $0) } ?? ""
        port = PQport(connection).map { String(cString: $0) } ?? ""
        // Server notices (including the FATAL one a terminated backend sends) are not printed to stderr; the
        // failures they announce surface as errors of the statements that meet them.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        do {
            _ = try execute(
                PostgresQuery(
                    unsafeSQL:
                        "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET statement_timeout = \(configuration.statementTimeoutMilliseconds)"
                ))
        } catch {
            // The statement may have closed the connection itself (no reply in time).
            if let handle { PQfinish(handle) }
            handle = nil
            throw error
        }
        hostPreference?.connected(host: host, port: port)
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Whether the connection is still usable. Reads whatever the server sent while the connection sat idle, so a
    /// backend that was terminated (or a server that restarted) is noticed before a statement is sent on it.
    public var isHealthy: Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        // A terminated backend first sends a FATAL notice and then closes the socket: keep reading while there is
        // something to read, so the close itself is seen. An idle healthy connection has nothing to read.
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready < 0 { return false }
            if ready == 0 { break }
            if PQconsumeInput(handle) == 0 { return false }
            while let notification = PQnotifies(handle) { PQfreemem(notification) }
        }
        return PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs one statement with its binds and returns its rows. Several `;`-separated statements are allowed only
    /// without binds.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> PostgresRows {
        guard let span = traceParent?.child(Self.spanName(query.sql), kind: .client) else { return try run(query) }
        span.set("db.system", "postgresql")
        span.set("db.query.text", query.sql)
        defer { span.end() }
        do {
            return try run(query)
        } catch let error as PostgresError {
            span.fail(error.message)
            throw error
        }
    }

    /// A statement's span name: its first keyword (`SELECT`, `UPDATE`, `WITH`, …), as the text's operation.
    static func spanName(_ sql: String) -> String {
        let keyword = sql.utf8.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\t") }
            .prefix {
                ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
            }
            .prefix(16)
        return keyword.isEmpty ? "statement" : String(decoding: keyword, as: UTF8.self).uppercased()
    }

    private func run(_ query: PostgresQuery) throws -> PostgresRows {
        guard let handle else { throw PostgresError(.connectionLost, "the connection is closed") }
        let sent: Bool
        if query.binds.isEmpty {
            sent = PQsendQuery(handle, query.sql) == 1
        } else {
            sent = try sendWithBinds(handle, query)
        }
        guard sent, let result = try awaitReply(handle) else {
            throw PostgresError(.connectionLost, errorMessage(of: handle))
        }
        defer { PQclear(result) }
        let outcome = PostgresResult.outcome(result, connection: handle)
        if case .failure(let error) = outcome, error.isReadOnlyServer {
            // A standby or a demoted primary: this connection will never write again. Closed now, it is replaced
            // (by one to the primary) before the next job.
            hostPreference?.suspect(host: host, port: port, now: monotonicNanoseconds())
            PQfinish(handle)
            self.handle = nil
        }
        return try outcome.get()
    }

    /// Runs `COPY … FROM STDIN` (text format) with `rows` as its data and returns how many rows the server
    /// stored. The statement takes no binds. Either every row is stored or, on any error, none: the server rejects
    /// the whole `COPY` at the first bad row. A connection that breaks while sending throws `.connectionLost`.
    @discardableResult
    public func copy(_ statement: PostgresQuery, rows: PostgresCopyRows) throws -> Int {
        guard let handle else { throw PostgresError(.connectionLost, "the connection is closed") }
        guard statement.binds.isEmpty else { throw PostgresError(.server, "COPY takes no bound parameters") }
        guard PQsendQuery(handle, statement.sql) == 1, let started = try awaitReply(handle) else {
            throw PostgresError(.connectionLost, errorMessage(of: self.handle ?? handle))
        }
        let status = PQresultStatus(started)
        guard status == PGRES_COPY_IN else {
            defer { PQclear(started) }
            _ = try PostgresResult.outcome(started, connection: handle).get()
            throw PostgresError(.server, "the statement did not start a COPY FROM STDIN")
        }
        PQclear(started)
        var sendFailure: String?
        rows.bytes.withUnsafeBufferPointer { buffer in
            // Chunks bound the size of each libpq send buffer; a blocking connection accepts each one whole.
            let chunk = 256 * 1024
            var offset = 0
            while offset < buffer.count {
                let length = min(chunk, buffer.count - offset)
                let start = buffer.baseAddress!.advanced(by: offset)
                let sent = start.withMemoryRebound(to: CChar.self, capacity: length) {
                    PQputCopyData(handle, $0, Int32(length))
                }
                guard sent == 1 else {
                    sendFailure = errorMessage(of: handle)
                    return
                }
                offset += length
            }
        }
        if PQputCopyEnd(handle, sendFailure) != 1 {
            sendFailure = sendFailure ?? errorMessage(of: handle)
        }
        var firstFailure: PostgresError?
        var stored = 0
        while let result = PQgetResult(handle) {
            switch PostgresResult.outcome(result, connection: handle) {
            case .success: stored = Int(String(cString: PQcmdTuples(result))) ?? 0
            case .failure(let error): if firstFailure == nil { firstFailure = error }
            }
            PQclear(result)
        }
        if let firstFailure { throw firstFailure }
        if let sendFailure { throw PostgresError(.connectionLost, sendFailure) }
        return stored
    }

    /// Hands the open libpq connection to a new owner (the pipelined path); this object is closed afterwards.
    func detachHandle() -> OpaquePointer? {
        defer { handle = nil }
        return handle
    }

    private func sendWithBinds(_ handle: OpaquePointer, _ query: PostgresQuery) throws -> Bool {
        try PostgresResult.withParameters(query.binds) { count, types, values, lengths, formats in
            guard let name = try preparedName(handle, query.sql, count, types) else {
                return PQsendQueryParams(handle, query.sql, count, types, values, lengths, formats, 0) == 1
            }
            return PQsendQueryPrepared(handle, name, count, values, lengths, formats, 0) == 1
        }
    }

    /// The name of the prepared statement for `sql`, preparing it on first use; nil when it cannot be prepared
    /// here (the table is full, or preparing failed, in which case running it unprepared reports the error).
    private func preparedName(_ handle: OpaquePointer, _ sql: String, _ count: Int32, _ types: [Oid]) throws -> String?
    {
        if let name = prepared[sql] { return name }
        guard prepared.count < Self.maximumPreparedStatements else { return nil }
        let name = "s\(prepared.count + 1)"
        guard PQsendPrepare(handle, name, sql, count, types) == 1, let result = try awaitReply(handle) else {
            return nil
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { return nil }
        prepared[sql] = name
        return name
    }

    /// Waits for the reply to what was just sent and returns it as `PQexec` would: the first error, else the last
    /// result (a `COPY` start at once). A server that sends nothing for the reply timeout (frozen, or cut off
    /// without a reset) is given up on: the connection is closed and `.connectionLost` thrown, so a transaction
    /// thread is never held for longer than the pipelined statements are.
    private func awaitReply(_ handle: OpaquePointer) throws -> OpaquePointer? {
        let timeout = UInt64(configuration.replyTimeoutMilliseconds) * 1_000_000
        var deadline = monotonicNanoseconds() &+ timeout
        var kept: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                let now = monotonicNanoseconds()
                guard now < deadline else {
                    if let kept { PQclear(kept) }
                    hostPreference?.suspect(host: host, port: port, now: now)
                    PQfinish(handle)
                    self.handle = nil
                    throw PostgresError(
                        .connectionLost, "the database sent no reply in time; the connection was dropped")
                }
                var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
                let waitMilliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 1_000))
                if poll(&descriptor, 1, waitMilliseconds) > 0 {
                    // A reply moves the deadline: a long COPY or many results keep the connection alive.
                    deadline = monotonicNanoseconds() &+ timeout
                    if PQconsumeInput(handle) == 0 { break }
                }
            }
            guard let result = PQgetResult(handle) else { return kept }
            let status = PQresultStatus(result)
            if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                PQclear(result)
                continue
            }
            if let previous = kept { PQclear(previous) }
            kept = result
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { return kept }
        }
    }
}

private func errorMessage(of connection: OpaquePointer) -> String { PostgresResult.errorMessage(of: connection) }

private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer { for duplicate in duplicates { free(duplicate) } }
    var pointers: [UnsafePointer<CChar>?] = duplicates.map { UnsafePointer($0) }
    pointers.append(nil)
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}
