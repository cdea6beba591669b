import Foundation
import Postgres
import PostgresTestSupport
import XCTest

final class PostgresCopyTests: DatabaseTestCase {
    func testCopyStoresEveryValueExactlyAndReportsTheRowCount() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let id = UUID()
        let date = microsecondDate(Date(timeIntervalSince1970: 1_700_000_000.654321))
        let text = "tab\there, newline\nthere, cr\r, back\\slash, \\N, ünïcödé 😀"
        let bytes: [UInt8] = [0, 0x5C, 0x09, 0x0A, 0xFF]
        let stored = try await pool.withConnection { connection -> Int in
            try connection.execute(
                "CREATE TABLE copied (id uuid, t text, n text, b bytea, d timestamptz, i bigint, f boolean)")
            var rows = PostgresCopyRows()
            rows.append(id)
            rows.append(text)
            rows.append(nil as String?)
            rows.append(PostgresBytes(bytes))
            rows.append(date)
            rows.append(-42)
            rows.append(true)
            rows.endRow()
            rows.append(UUID())
            rows.append("")
            rows.append("NULL")
            rows.append(PostgresBytes([]))
            rows.append(nil as Date?)
            rows.append(0)
            rows.append(false)
            rows.endRow()
            XCTAssertEqual(rows.rowCount, 2)
            return try connection.copy("COPY copied (id, t, n, b, d, i, f) FROM STDIN", rows: rows)
        }
        XCTAssertEqual(stored, 2)
        let firstRows = try await pool.query("SELECT * FROM copied WHERE id = \(id)")
        let first = try XCTUnwrap(firstRows.first)
        XCTAssertEqual(try first.decode(String.self, "t"), text)
        XCTAssertNil(try first.decode(String?.self, "n"))
        XCTAssertEqual(try first.decode(PostgresBytes.self, "b").bytes, bytes)
        XCTAssertEqual(try first.decode(Date.self, "d"), date)
        XCTAssertEqual(try first.decode(Int.self, "i"), -42)
        XCTAssertTrue(try first.decode(Bool.self, "f"))
        let secondRows = try await pool.query("SELECT * FROM copied WHERE id <> \(id)")
        let second = try XCTUnwrap(secondRows.first)
        XCTAssertEqual(try second.decode(String.self, "t"), "")
        XCTAssertEqual(try second.decode(String.self, "n"), "NULL")
        XCTAssertEqual(try second.decode(PostgresBytes.self, "b").bytes, [])
        XCTAssertNil(try second.decode(Date?.self, "d"))
    }

    func testARejectedRowStoresNothingAndTheConnectionStaysUsable() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        try await pool.query("CREATE TABLE unique_rows (k text PRIMARY KEY)")
        try await pool.query("INSERT INTO unique_rows VALUES ('taken')")
        do {
            try await pool.withConnection { connection in
                var rows = PostgresCopyRows()
                for key in ["a", "b", "taken", "c"] {
                    rows.append(key)
                    rows.endRow()
                }
                try connection.copy("COPY unique_rows (k) FROM STDIN", rows: rows)
            }
            XCTFail("a duplicate key was copied")
        } catch let error as PostgresError {
            XCTAssertTrue(error.isUniqueViolation, "\(error)")
            XCTAssertEqual(error.constraint, "unique_rows_pkey")
        }
        await assertEqual(try await pool.query("SELECT count(*) AS n FROM unique_rows").first?.decode(Int.self, "n"), 1)
        // Not a COPY statement, and binds: refused without leaving the connection in COPY state.
        try await pool.withConnection { connection in
            XCTAssertThrowsError(try connection.copy("SELECT 1", rows: PostgresCopyRows()))
            XCTAssertThrowsError(
                try connection.copy("COPY unique_rows (k) FROM STDIN WHERE k = \("x")", rows: PostgresCopyRows()))
            XCTAssertThrowsError(try connection.copy("COPY no_such_table FROM STDIN", rows: PostgresCopyRows()))
            XCTAssertEqual(try connection.execute("SELECT 2 AS two").first?.decode(Int.self, "two"), 2)
        }
    }
}
