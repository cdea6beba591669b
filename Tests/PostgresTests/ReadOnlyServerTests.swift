import Foundation
import Postgres
import PostgresTestSupport
import XCTest

/// What a pool does when its server stops taking writes, as a primary does when it is demoted in a failover. The
/// server's `default_transaction_read_only`, turned on with `ALTER SYSTEM` and a reload, stands in for the standby:
/// sessions already open then refuse writes with SQLSTATE 25006 exactly as a hot standby's do, and new ones are
/// refused by `target_session_attrs=read-write` as a standby's are. The cluster itself is exercised in
/// Tests/PostgresHA and the services' failover tests.
final class ReadOnlyServerTests: DatabaseTestCase {
    /// A pool that may connect to a read-only server, to turn it read-only and back.
    private func admin() -> PostgresPool {
        let separator = TestDatabase.serverURL!.contains("?") ? "&" : "?"
        return PostgresPool(
            configuration: PostgresConfiguration(
                url: TestDatabase.serverURL! + separator + "target_session_attrs=any", poolSize: 1))
    }

    /// Turns the whole server read-only (or back) and waits for its sessions to take the reloaded setting.
    private func setReadOnly(_ readOnly: Bool) async throws {
        let pool = admin()
        defer { pool.shutdown() }
        let statement =
            readOnly
            ? "ALTER SYSTEM SET default_transaction_read_only = on" : "ALTER SYSTEM RESET default_transaction_read_only"
        try await pool.transaction { connection in
            // The statements run on the worker's blocking connection, outside any transaction block.
            try connection.execute("COMMIT")
            try connection.execute(PostgresQuery(unsafeSQL: statement))
            try connection.execute("SELECT pg_reload_conf()")
            try connection.execute("BEGIN")
        }
        // Backends take the reloaded file before their next command; the signal takes a moment to arrive.
        try await Task.sleep(for: .milliseconds(400))
    }

    override func tearDown() async throws {
        if database != nil { try? await setReadOnly(false) }
        try await super.tearDown()
    }

    private func backend(_ pool: PostgresPool) async throws -> Int {
        try await pool.query("SELECT pg_backend_pid()::bigint AS pid").first!.decode(Int.self, "pid")
    }

    func testAPipelinedConnectionThatMeetsAReadOnlyServerIsDroppedAndTheNextStatementWritesOnAFreshOne() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE notes (body text NOT NULL)")
        let before = try await backend(pool)
        try await setReadOnly(true)
        do {
            try await pool.query("INSERT INTO notes (body) VALUES (\("during"))")
            XCTFail("a write on a read-only server succeeded")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "25006", "\(error)")
            XCTAssertTrue(error.isConnectionFailure, "a read-only server is the wrong node, not a bad statement")
        }
        try await setReadOnly(false)
        try await pool.query("INSERT INTO notes (body) VALUES (\("after"))")
        let after = try await backend(pool)
        XCTAssertNotEqual(after, before, "the connection that met the read-only server was kept")
        let rows = try await pool.query("SELECT body FROM notes")
        XCTAssertEqual(rows.map { try? $0.decode(String.self, "body") }, ["after"])
    }

    func testATransactionConnectionThatMeetsAReadOnlyServerIsReplacedBeforeTheNextJob() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let before = try await pool.transaction { connection in
            try connection.execute("CREATE TABLE notes (body text NOT NULL)")
            return try connection.execute("SELECT pg_backend_pid()::bigint AS pid").first!.decode(Int.self, "pid")
        }
        try await setReadOnly(true)
        do {
            try await pool.transaction { _ = try $0.execute("INSERT INTO notes (body) VALUES ('during')") }
            XCTFail("a write on a read-only server committed")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isReadOnlyServer, "\(error)")
        }
        try await setReadOnly(false)
        let after = try await pool.transaction { connection in
            try connection.execute("INSERT INTO notes (body) VALUES ('after')")
            return try connection.execute("SELECT pg_backend_pid()::bigint AS pid").first!.decode(Int.self, "pid")
        }
        XCTAssertNotEqual(after, before, "the connection that met the read-only server was kept")
        let count = try await pool.query("SELECT count(*)::bigint AS n FROM notes").first?.decode(Int.self, "n")
        XCTAssertEqual(count, 1)
    }

    func testTheReadinessCheckRefusesAReadOnlyServerAndDropsWhatReachedIt() async throws {
        let pool = database.makePool(size: 2)
        defer { pool.shutdown() }
        try await pool.checkConnectivity()
        let before = try await backend(pool)
        try await setReadOnly(true)
        do {
            try await pool.checkConnectivity()
            XCTFail("the check passed on a read-only server")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isReadOnlyServer, "\(error)")
            XCTAssertTrue(error.message.contains("read-only"), error.message)
        }
        try await setReadOnly(false)
        try await pool.checkConnectivity()
        let after = try await backend(pool)
        XCTAssertNotEqual(after, before, "the check kept the connection that reached a read-only server")
    }

    func testANewConnectionRefusesAServerThatTakesNoWrites() async throws {
        try await setReadOnly(true)
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        do {
            try await pool.checkConnectivity()
            XCTFail("connected to a read-only server")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionFailed, "\(error)")
            XCTAssertTrue(error.isConnectionFailure)
            XCTAssertTrue(error.message.contains("read-only"), error.message)
        }
        do {
            try await pool.transaction { _ = try $0.execute("SELECT 1") }
            XCTFail("connected to a read-only server")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionFailed, "\(error)")
        }
    }

    func testATransactionWhoseServerSendsNoReplyInTimeIsGivenUpAndItsConnectionReplaced() async throws {
        // A frozen primary answers nothing, not even the statement timeout it would enforce: the server here would
        // let the statement run for a minute, the pool waits for a reply only 300 ms, as it does on pipelines.
        let pool = database.makePool(size: 1, statementTimeoutMilliseconds: 60_000, replyTimeoutMilliseconds: 300)
        defer { pool.shutdown() }
        let started = Date()
        do {
            try await pool.transaction { connection in
                try connection.execute("SELECT 1")
                try connection.execute("SELECT pg_sleep(5)")
            }
            XCTFail("a statement with no reply was waited for")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionLost, "\(error)")
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(waited, 0.25)
        XCTAssertLessThan(waited, 2)
        let value = try await pool.transaction { connection in
            try connection.execute("SELECT \(3)::int AS n").first!.decode(Int.self, "n")
        }
        XCTAssertEqual(value, 3)
        XCTAssertEqual(pool.currentStatistics.opened, 2, "a fresh connection replaced the silent one")
    }

    /// A database that refuses connections for a moment, as a cluster does between losing its primary and
    /// promoting a standby.
    private func refuseConnections(for milliseconds: Int) async throws {
        let pool = admin()
        defer { pool.shutdown() }
        try await pool.query(PostgresQuery(unsafeSQL: "ALTER DATABASE \(database.name) ALLOW_CONNECTIONS false"))
        let reopen = PostgresQuery(unsafeSQL: "ALTER DATABASE \(database.name) ALLOW_CONNECTIONS true")
        let later = admin()
        Task {
            defer { later.shutdown() }
            try await Task.sleep(for: .milliseconds(milliseconds))
            try await later.query(reopen)
        }
    }

    func testStatementsNeverSentWaitForAConnectionWhileNoneCanBeOpenedWithinTheirBudget() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: database.url, poolSize: 2, connectWaitMilliseconds: 3_000))
        defer { pool.shutdown() }
        try await refuseConnections(for: 700)
        let started = Date()
        // Pipelined and transaction alike: neither fails while the database comes back within the budget.
        async let pipelined = pool.query("SELECT \(1)::int AS n")
        async let transaction = pool.transaction { try $0.execute("SELECT 2 AS n").first!.decode(Int.self, "n") }
        let (rows, two) = try await (pipelined, transaction)
        XCTAssertEqual(try rows.first?.decode(Int.self, "n"), 1)
        XCTAssertEqual(two, 2)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.5, "the database was refusing")
    }

    func testAStatementThatCannotGetAConnectionWithinItsBudgetFailsAsUnavailable() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: database.url, poolSize: 1, connectWaitMilliseconds: 300))
        defer { pool.shutdown() }
        try await refuseConnections(for: 3_000)
        for attempt in ["pipelined", "transaction"] {
            let started = Date()
            do {
                if attempt == "pipelined" {
                    try await pool.query("SELECT 1")
                } else {
                    try await pool.transaction { _ = try $0.execute("SELECT 1") }
                }
                XCTFail("\(attempt): a statement ran while the database refused connections")
            } catch let error as PostgresError {
                XCTAssertEqual(error.code, .connectionFailed, "\(attempt): \(error)")
            }
            let waited = Date().timeIntervalSince(started)
            XCTAssertGreaterThanOrEqual(waited, 0.2, attempt)
            XCTAssertLessThan(waited, 2, attempt)
        }
    }

    func testAMultiHostURLSkipsAHostThatDoesNotAnswer() async throws {
        // The first host is a socket directory with no server in it; libpq moves on to the next.
        let url = try XCTUnwrap(multiHostURL(database.url, deadHostFirst: true))
        try PostgresConfiguration.validate(url: url)
        let pool = PostgresPool(configuration: PostgresConfiguration(url: url, poolSize: 1, connectTimeoutSeconds: 2))
        defer { pool.shutdown() }
        try await pool.checkConnectivity()
        try await pool.query("CREATE TABLE t (id int)")
        try await pool.transaction { try $0.execute("INSERT INTO t VALUES (1)") }
    }

    func testURLsThatCannotBeReadOrCouldWriteToAStandbyAreRefusedWithoutConnecting() throws {
        let refused: [(String, String)] = [
            ("postgresql://user:secret@host:notaport/db", "cannot be read"),
            (
                "postgresql://user:secret@h1:5432,h2:5432,h3:5432/db?target_session_attrs=any",
                "target_session_attrs=any"
            ),
            ("postgresql://user:secret@h1,h2/db?target_session_attrs=standby", "target_session_attrs=standby"),
            ("postgresql://user:secret@h1,h2/db?target_session_attrs=prefer-standby", "prefer-standby"),
            ("postgresql://user:secret@h1/db?target_session_attrs=read-only", "read-only"),
            ("host=h1,h2,h3 port=5432,5433 dbname=db", "3 hosts but 2 ports"),
            ("postgresql://user:secret@h1/db?no_such_option=1", "cannot be read"),
            ("not a url = at all", "cannot be read"),
        ]
        for (url, reason) in refused {
            XCTAssertThrowsError(try PostgresConfiguration.validate(url: url), url) { error in
                let message = (error as? PostgresError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(reason), "\(url): \(message)")
                XCTAssertFalse(message.contains("secret"), "\(url): the password is in \(message)")
            }
        }
        let accepted = [
            "postgresql://user:secret@db:5432/passkey",
            "postgresql://user:secret@h1:5432,h2:5433,h3:5434/passkey?target_session_attrs=read-write&connect_timeout=2",
            "postgresql://user:secret@h1,h2,h3:5432/passkey?target_session_attrs=primary",
            "postgresql://user@db/passkey?target_session_attrs=any",
            "postgresql:///postgres?host=/tmp/x&user=postgres",
            "host=h1,h2 port=5432 dbname=db",
        ]
        for url in accepted {
            XCTAssertNoThrow(try PostgresConfiguration.validate(url: url), url)
        }
    }

    /// `url` (a `postgresql://…?host=DIR…` URL on a unix socket, or a TCP one) with a dead host put before its own.
    private func multiHostURL(_ url: String, deadHostFirst: Bool) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        var items = components.queryItems ?? []
        if let index = items.firstIndex(where: { $0.name == "host" }), let host = items[index].value {
            items[index].value = "/nonexistent-socket-directory," + host
            components.queryItems = items
            return components.string
        }
        guard let host = components.host else { return nil }
        let port = components.port.map { ":\($0)" } ?? ""
        let user = components.user.map { $0 + (components.password.map { ":" + $0 } ?? "") + "@" } ?? ""
        return "postgresql://\(user)127.0.0.1:1,\(host)\(port)\(components.path)"
            + (components.query.map { "?" + $0 } ?? "")
    }
}
