import Foundation
import NetworkIO
import Postgres
import PostgresTestSupport
import XCTest

/// Single statements travel over pipelined connections owned by event loops (see `PostgresPool`).
final class PipelinedQueryTests: DatabaseTestCase {
    func testManyMoreConcurrentStatementsThanConnectionsAllCompleteAndAFailureTouchesNoOther() async throws {
        let pool = database.makePool(size: 2)
        defer { pool.shutdown() }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Result<Int, PostgresError>).self) { group in
            for index in 0..<300 {
                group.addTask {
                    do {
                        // Every tenth statement divides by zero: SQLSTATE 22012, for that statement alone.
                        let row = try await pool.query(
                            "SELECT \(index)::int / \(index % 10 == 0 ? 0 : 1)::int AS n"
                        ).first
                        return (index, .success(try row!.decode(Int.self, "n")))
                    } catch let error as PostgresError {
                        return (index, .failure(error))
                    }
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        XCTAssertEqual(outcomes.count, 300)
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(let value):
                XCTAssertNotEqual(index % 10, 0)
                XCTAssertEqual(value, index)
            case .failure(let error):
                XCTAssertEqual(index % 10, 0, "\(error)")
                XCTAssertEqual(error.sqlState, "22012")
            }
        }
        XCTAssertLessThanOrEqual(pool.currentStatistics.opened, 2, "pipelining, not more connections")
    }

    func testAStatementDoesNotWaitBehindASlowOneWhileAnotherConnectionCanOpen() async throws {
        let pool = database.makePool(size: 2)
        defer { pool.shutdown() }
        try await pool.query("SELECT \(1)::int AS warm")  // one connection open and idle
        async let slow = pool.query("SELECT pg_sleep(0.8)")
        try await Task.sleep(for: .milliseconds(100))  // the slow statement is now the oldest in flight
        let started = Date()
        await assertEqual(try await pool.query("SELECT \(5)::int AS n").first?.decode(Int.self, "n"), 5)
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "it went to a second connection")
        _ = try await slow
        XCTAssertEqual(pool.currentStatistics.opened, 2)
    }

    func testAPipelineThatKeepsAnsweringTakesMoreStatementsInsteadOfOpeningConnections() async throws {
        let pool = database.makePool(size: 8)
        defer { pool.shutdown() }
        try await pool.query("SELECT \(1)::int AS warm")
        // Statements arrive faster than the server finishes them (5 ms each), so a backlog builds and the oldest
        // statement in flight waits far past the 20 ms after which a silent pipeline counts as stuck; but replies
        // keep coming, so the connection is busy, not stuck, and no other connection is opened for it.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask { try await pool.query("SELECT pg_sleep(0.005)") }
                try await Task.sleep(for: .milliseconds(2))
            }
            try await group.waitForAll()
        }
        XCTAssertLessThanOrEqual(pool.currentStatistics.opened, 2, "a second one only after a stall of 20 ms")
    }

    func testAConnectionThatSendsNoReplyInTimeIsGivenUpAndReplaced() async throws {
        // The server would let the statement run for a minute; the pool waits for a reply only 300 ms.
        let pool = database.makePool(size: 1, statementTimeoutMilliseconds: 60_000, replyTimeoutMilliseconds: 300)
        defer { pool.shutdown() }
        let started = Date()
        do {
            try await pool.query("SELECT pg_sleep(5)")
            XCTFail("a statement with no reply was waited for")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .connectionLost, "\(error)")
        }
        let waited = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(waited, 0.25)
        XCTAssertLessThan(waited, 2)
        await assertEqual(try await pool.query("SELECT \(3)::int AS n").first?.decode(Int.self, "n"), 3)
        XCTAssertEqual(pool.currentStatistics.opened, 2, "a fresh connection replaced the silent one")
    }

    func testAStatementThatCannotBePreparedReportsItsOwnErrorAndTheConnectionCarriesOn() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        do {
            try await pool.query("SELEC \(1)")
            XCTFail("a syntax error was accepted")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .server)
            XCTAssertEqual(error.sqlState, "42601", "\(error)")
        }
        do {
            try await pool.query("SELECT * FROM no_such_table WHERE id = \(1)")
            XCTFail("an unknown table was accepted")
        } catch let error as PostgresError {
            XCTAssertEqual(error.sqlState, "42P01", "\(error)")
        }
        await assertEqual(try await pool.query("SELECT \(41)::int + 1 AS n").first?.decode(Int.self, "n"), 42)
        XCTAssertEqual(pool.currentStatistics.opened, 1)
    }

    func testAStatementFromATaskOnAnEventLoopResumesOnThatLoop() async throws {
        let pool = database.makePool(size: 1)
        let loops = try EventLoopGroup(threadCount: 1, name: "caller")
        defer {
            pool.shutdown()
            loops.shutdown()
        }
        let loop = loops.loops[0]
        let resumedOnCallerLoop = try await Task(executorPreference: loop) {
            let value = try await pool.query("SELECT \(7)::int AS n").first?.decode(Int.self, "n")
            XCTAssertEqual(value, 7)
            return EventLoop.current === loop
        }.value
        XCTAssertTrue(resumedOnCallerLoop)
    }

    func testAfterShutdownStatementsFailWithPoolClosed() async throws {
        let pool = database.makePool(size: 1)
        try await pool.query("SELECT \(1)::int AS n")
        pool.shutdown()
        do {
            try await pool.query("SELECT \(1)::int AS n")
            XCTFail("a closed pool ran a statement")
        } catch let error as PostgresError {
            XCTAssertEqual(error.code, .poolClosed, "\(error)")
        }
    }
}
