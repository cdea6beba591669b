/// A failure talking to Postgres, with the server's SQLSTATE when the server reported one.
///
/// `message` may contain SQL details: log it, never show it to a client.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this was.
    public enum Code: String, Sendable, Hashable {
        /// The connection could not be opened (bad URL, unreachable host, bad password, …).
        case connectionFailed = "connection_failed"
        /// The connection broke while a statement was running or about to run.
        case connectionLost = "connection_lost"
        /// The server rejected the statement; `sqlState` says why.
        case server
        /// A column could not be decoded as the requested Swift type.
        case decoding
        /// The pool was shut down.
        case poolClosed = "pool_closed"
    }

    public let code: Code
    /// The five-character SQLSTATE (for example `23505` for a unique violation), when the server sent one.
    public let sqlState: String?
    /// The name of the violated constraint, when the server sent one.
    public let constraint: String?
    public let message: String

    public init(_ code: Code, _ message: String, sqlState: String? = nil, constraint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.constraint = constraint
    }

    /// SQLSTATE 23505.
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// SQLSTATE 57014: the statement timeout (or a cancel) stopped the statement.
    public var isQueryCanceled: Bool { sqlState == "57014" }
    /// SQLSTATE 25006: the server refused a write because it is read-only — a standby, or a primary that was
    /// demoted. The connection is dropped, and a fresh one (libpq's `target_session_attrs=read-write`) finds the
    /// primary.
    public var isReadOnlyServer: Bool { sqlState == "25006" }
    /// Whether the failure was of the connection rather than of the statement: a retry on a fresh connection
    /// may succeed. A server that turned read-only counts: during a failover the next connection reaches the new
    /// primary.
    public var isConnectionFailure: Bool {
        code == .connectionFailed || code == .connectionLost || (sqlState?.hasPrefix("08") ?? false)
            || sqlState == "57P01" || sqlState == "57P02" || sqlState == "57P03" || isReadOnlyServer
    }

    public var description: String {
        var text = "postgres \(code.rawValue)"
        if let sqlState { text += " sqlstate=\(sqlState)" }
        if let constraint { text += " constraint=\(constraint)" }
        return text + ": \(message)"
    }
}
