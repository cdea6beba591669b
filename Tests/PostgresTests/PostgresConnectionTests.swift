import Foundation
import Postgres
import PostgresTestSupport
import XCTest

final class PostgresConnectionTests: DatabaseTestCase {
    func testEveryBoundTypeRoundTrips() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let text = "it's \"quoted\" \\ and ünïcödé; DROP TABLE x; --"
        let bytes: [UInt8] = [0, 1, 0x5C, 0x27, 0xFF, 0]
        let uuid = UUID()
        let date = microsecondDate(Date(timeIntervalSince1970: 1_700_000_000.123456))
        let array = ["usb", "with,comma", "with\"quote", "back\\slash", "", "NULL"]
        let row = try await pool.query(
            """
            SELECT \(text)::text AS t, \(PostgresBytes(bytes))::bytea AS b, \(uuid)::uuid AS u, \(date)::timestamptz AS d,
                   \(Int.max)::bigint AS i, \(Int32.min)::integer AS i32, \(UInt32.max)::bigint AS u32, \(true) AS yes,
                   \(false) AS no, \(PostgresTextArray(array))::text[] AS a, \(PostgresTextArray([]))::text[] AS empty,
                   \(nil as String?)::text AS missing
            """
        ).first
        let decoded = try XCTUnwrap(row)
        XCTAssertEqual(try decoded.decode(String.self, "t"), text)
        XCTAssertEqual(try decoded.decode(PostgresBytes.self, "b").bytes, bytes)
        XCTAssertEqual(try decoded.decode(UUID.self, "u"), uuid)
        XCTAssertEqual(try decoded.decode(Date.self, "d"), date)
        XCTAssertEqual(try decoded.decode(Int.self, "i"), Int.max)
        XCTAssertEqual(try decoded.decode(Int32.self, "i32"), Int32.min)
        XCTAssertEqual(try decoded.decode(UInt32.self, "u32"), UInt32.max)
        XCTAssertTrue(try decoded.decode(Bool.self, "yes"))
        XCTAssertFalse(try decoded.decode(Bool.self, "no"))
        XCTAssertEqual(try decoded.decode(PostgresTextArray.self, "a").elements, array)
        XCTAssertEqual(try decoded.decode(PostgresTextArray.self, "empty").elements, [])
        XCTAssertNil(try decoded.decode(String?.self, "missing"))
        XCTAssertThrowsError(try decoded.decode(String.self, "missing"))
        XCTAssertThrowsError(try decoded.decode(Int.self, "t"))
        XCTAssertThrowsError(try decoded.decode(String.self, "no_such_column"))
    }

    func testInterpolatedValuesAreBoundNotSpliced() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE notes (body text NOT NULL)")
        let hostile = "x'); DROP TABLE notes; --"
        let query: PostgresQuery = "INSERT INTO notes (body) VALUES (\(hostile))"
        XCTAssertEqual(query.sql, "INSERT INTO notes (body) VALUES ($1)")
        try await pool.query(query)
        let rows = try await pool.query("SELECT body FROM notes")
        XCTAssertEqual(try rows.first?.decode(String.self, "body"), hostile)
    }

    func testRepeatedStatementsArePreparedOnceAndErrorsStillCarryTheirSQLState() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        for value in 0..<20 {
            let row = try await pool.query("SELECT \(value)::bigint + 1 AS next").first
            XCTAssertEqual(try row?.decode(Int.self, "next"), value + 1)
        }
        let prepared = try await pool.query(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE \("%+ 1 AS next%")")
        XCTAssertEqual(try prepared.first?.decode(Int.self, "n"), 1)
        do {
            try await pool.query("SELECT * FROM no_such_table WHERE id = \(1)")
            XCTFail("a query on a missing table succeeded")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "42P01")
        }
    }

    func testUniqueViolationCarriesSQLStateAndConstraint() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE items (name text CONSTRAINT items_name_key UNIQUE)")
        try await pool.query("INSERT INTO items VALUES (\("a"))")
        do {
            try await pool.query("INSERT INTO items VALUES (\("a"))")
            XCTFail("a duplicate was accepted")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .server)
            XCTAssertEqual(error.sqlState, "23505")
            XCTAssertTrue(error.isUniqueViolation)
            XCTAssertEqual(error.constraint, "items_name_key")
        }
    }

    func testTransactionRollsBackOnAnyThrownError() async throws {
        struct Abort: Error {}
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE items (name text)")
        do {
            _ = try await pool.transaction { connection -> Void in
                try connection.execute("INSERT INTO items VALUES (\("kept?"))")
                throw Abort()
            }
            XCTFail("the error was swallowed")
        } catch is Abort {}
        try await pool.transaction { connection in
            try connection.execute("INSERT INTO items VALUES (\("committed"))")
        }
        let rows = try await pool.query("SELECT name FROM items")
        XCTAssertEqual(try rows.map { try $0.decode(String.self, "name") }, ["committed"])
        // The connection is usable (not left inside a failed transaction).
        await assertEqual(try await pool.query("SELECT 1 AS one").first?.decode(Int.self, "one"), 1)
    }

    func testStatementTimeoutCancelsLongStatements() async throws {
        let pool = database.makePool(size: 1, statementTimeoutMilliseconds: 100)
        defer { pool.shutdown() }
        let started = Date()
        do {
            try await pool.query("SELECT pg_sleep(5)")
            XCTFail("the statement was not cancelled")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isQueryCanceled, "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        await assertEqual(try await pool.query("SELECT 2 AS two").first?.decode(Int.self, "two"), 2)
    }

    func testTerminatedConnectionIsReplacedBeforeTheNextQuery() async throws {
        let pool = database.makePool(size: 1)
        let admin = database.makePool(size: 1)
        defer {
            pool.shutdown()
            admin.shutdown()
        }
        let pid = try await pool.query("SELECT pg_backend_pid() AS pid").first!.decode(Int32.self, "pid")
        let terminated = try await admin.query("SELECT pg_terminate_backend(\(pid)) AS ok").first!.decode(
            Bool.self, "ok")
        XCTAssertTrue(terminated)
        // Give the backend a moment to exit and the socket to report it.
        try await Task.sleep(for: .milliseconds(200))
        let newPID = try await pool.query("SELECT pg_backend_pid() AS pid").first!.decode(Int32.self, "pid")
        XCTAssertNotEqual(newPID, pid)
        XCTAssertEqual(pool.currentStatistics.opened, 2)
    }

    func testPoolRunsStatementsConcurrentlyUpToItsSize() async throws {
        let pool = database.makePool(size: 4)
        defer { pool.shutdown() }
        let started = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { try await pool.query("SELECT pg_sleep(0.3)") } }
            try await group.waitForAll()
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.1)
    }
}

final class PostgresUnreachableTests: XCTestCase {
    func testUnreachableDatabaseFailsFastWithAClearMessage() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: "postgresql://app:s3cret@127.0.0.1:1/passkeys", poolSize: 1))
        defer { pool.shutdown() }
        let started = Date()
        do {
            try await pool.checkConnectivity()
            XCTFail("connected to a closed port")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionFailed)
            XCTAssertTrue(error.message.contains("cannot connect to the database at postgresql://app:***@127.0.0.1:1"))
            XCTAssertFalse(error.message.contains("s3cret"))
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }

    func testMalformedURLIsReportedNotHung() async throws {
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: "postgresql://x:y@host:notaport/db", poolSize: 1))
        defer { pool.shutdown() }
        do {
            try await pool.checkConnectivity()
            XCTFail("a malformed URL connected")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionFailed)
            XCTAssertFalse(error.message.contains(":y@"))
        }
    }

    func testMigrateCommandExitsNonZeroNamingTheVariable() throws {
        for url in ["postgresql://127.0.0.1:1/passkeys", "postgresql://u:p@host:notaport/db", ""] {
            let process = Process()
            process.executableURL = builtExecutable("passkey-migrate")
            var environment = ProcessInfo.processInfo.environment
            environment["DATABASE_URL"] = url
            process.environment = environment
            let errorPipe = Pipe()
            process.standardError = errorPipe
            process.standardOutput = Pipe()
            let started = Date()
            try process.run()
            process.waitUntilExit()
            let message = String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            XCTAssertEqual(process.terminationStatus, 1, url)
            XCTAssertTrue(message.contains("DATABASE_URL"), message)
            XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        }
    }

    func testRedactedURLHidesPasswords() {
        XCTAssertEqual(
            PostgresConfiguration(url: "postgresql://app:pw@db:5432/x?sslmode=require").redactedURL,
            "postgresql://app:***@db:5432/x?sslmode=require")
        XCTAssertEqual(PostgresConfiguration(url: "postgresql://db/x").redactedURL, "postgresql://db/x")
        XCTAssertEqual(
            PostgresConfiguration(url: "host=db password=pw dbname=x").redactedURL, "host=db password=*** dbname=x")
    }
}
