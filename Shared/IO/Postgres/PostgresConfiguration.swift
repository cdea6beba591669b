import CLibPQ
import Foundation
import Observability

/// How to reach the database and how to behave once connected.
public struct PostgresConfiguration: Sendable {
    /// A `postgresql://` URL or libpq keyword/value string.
    public var url: String
    /// How many connections the pool keeps open; also how many statements run at once.
    public var poolSize: Int
    /// How long to wait for a connection to open, in seconds (libpq's `connect_timeout`).
    public var connectTimeoutSeconds: Int
    /// The server aborts any single statement that runs longer than this, in milliseconds.
    public var statementTimeoutMilliseconds: Int
    /// Shown in `pg_stat_activity`.
    public var applicationName: String
    /// A pipelined connection whose oldest statement has had no reply for this long is given up (its statements
    /// fail with `.connectionLost`), so a server or network that hangs cannot hold callers forever. By default
    /// two seconds past the statement timeout, by when the server should have cancelled the statement itself.
    public var replyTimeoutMilliseconds: Int
    /// How long a statement or a transaction may wait for a connection while none can be opened, before it fails
    /// as unavailable. During a failover no host takes writes until a standby is promoted (a few seconds); a
    /// statement that was never sent may wait for that, where one in flight when the primary went cannot be
    /// retried. Two seconds by default, under the gateway's three-second deadline for a call; 0 fails at once.
    public var connectWaitMilliseconds: Int
    /// Where statement times are recorded (`db_statement_duration_seconds{service, kind, outcome}`); nil for
    /// tools that serve no metrics.
    public var statementMetrics: StatementMetrics?

    /// A registry and the `service` label of the statement histogram.
    public struct StatementMetrics: Sendable {
        public let registry: MetricsRegistry
        public let service: String

        public init(registry: MetricsRegistry, service: String) {
            self.registry = registry
            self.service = service
        }
    }

    public init(
        url: String, poolSize: Int = 4, connectTimeoutSeconds: Int = 5, statementTimeoutMilliseconds: Int = 5_000,
        applicationName: String = "passkey-server", replyTimeoutMilliseconds: Int? = nil,
        connectWaitMilliseconds: Int = 2_000
    ) {
        self.connectWaitMilliseconds = max(0, connectWaitMilliseconds)
        self.url = url
        self.poolSize = max(1, poolSize)
        self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        self.statementTimeoutMilliseconds = max(1, statementTimeoutMilliseconds)
        self.applicationName = applicationName
        self.replyTimeoutMilliseconds = max(1, replyTimeoutMilliseconds ?? self.statementTimeoutMilliseconds + 2_000)
    }

    /// The URL with any password replaced by `***`, safe for messages and logs.
    public var redactedURL: String {
        guard let schemeEnd = url.range(of: "://") else {
            // Keyword/value form: hide the value of `password=`.
            return url.split(separator: " ").map { $0.hasPrefix("password=") ? "password=***" : String($0) }
                .joined(separator: " ")
        }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return url }
        let userInfo = authority[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return url }
        return String(url[..<colon]) + ":***" + String(url[at...])
    }
}

extension PostgresConfiguration {
    /// Checks a `DATABASE_URL` with libpq's own parser, without connecting: a URL libpq cannot read, or one that
    /// would let the services' writes reach a standby, is refused with a reason (the password never in it).
    ///
    /// Several hosts (`postgresql://h1:5432,h2:5432/db`) are libpq's multi-host form: each connection takes the
    /// first host that accepts writes. `target_session_attrs` may be left out (the services ask for
    /// `read-write`) or be `read-write` or `primary`; with several hosts `any` is refused too.
    public static func validate(url: String) throws(PostgresError) {
        let values = try options(of: url)
        let hosts = [values["host"], values["hostaddr"]].compactMap { $0 }.map { $0.split(separator: ",").count }
        let hostCount = hosts.max() ?? 1
        switch values["target_session_attrs"] {
        case nil, "read-write", "primary":
            break
        case "any" where hostCount == 1:
            break
        case let attributes?:
            throw PostgresError(
                .connectionFailed,
                "target_session_attrs=\(attributes) could send the services' writes to a standby; "
                    + "leave it out or use read-write")
        }
        if let port = values["port"] {
            let ports = port.split(separator: ",", omittingEmptySubsequences: false)
            for given in ports where !given.isEmpty {
                guard let number = Int(given), (1...65_535).contains(number) else {
                    throw PostgresError(.connectionFailed, "cannot be read: the port \"\(given)\" is not a port number")
                }
            }
            if ports.count != 1 && ports.count != hostCount {
                throw PostgresError(
                    .connectionFailed,
                    "names \(hostCount) hosts but \(ports.count) ports; give one port, or one per host")
            }
        }
    }
}

extension PostgresConfiguration {
    /// The connection options a URL sets, read by libpq's own parser.
    static func options(of url: String) throws(PostgresError) -> [String: String] {
        var failure: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &failure) else {
            let reason = failure.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
            if let failure { PQfreemem(failure) }
            throw PostgresError(.connectionFailed, "cannot be read: \(reason ?? "out of memory")")
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return values
    }

    /// The order keeper for a URL naming several hosts by `host` (not `hostaddr`); nil otherwise.
    func makeHostPreference() -> HostPreference? {
        guard let values = try? Self.options(of: url), values["hostaddr"] == nil, let host = values["host"] else {
            return nil
        }
        let hosts = host.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let ports = (values["port"] ?? "").split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        return HostPreference(hosts: hosts, ports: ports)
    }
}
