import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

final class MigrationTests: DatabaseTestCase {
    func testMigratesAnEmptyDatabaseAndReRunningIsANoOp() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let storage = PostgresStorage(pool: pool)
        let all = try PostgresStorage.migrations().map(\.version)
        XCTAssertEqual(all, [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20])
        await assertEqual(try await storage.migrate(), all)
        await assertEqual(try await storage.migrate(), [])
        let tables = try await pool.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name"
        ).map { try $0.decode(String.self, "table_name") }
        XCTAssertEqual(
            tables,
            [
                "account_emails", "accounts", "admin_tokens", "audit_events", "authentication_sessions", "email_codes",
                "email_outbox",
                "failed_guesses",
                "passkey_account_registrations",
                "passkey_authentication_challenges", "passkey_credentials", "passkey_registration_challenges",
                "password_credentials", "recovery_attempt_decoys", "recovery_codes", "schema_migrations",
                "session_refresh_tokens", "session_signing_keys", "sign_in_method_changes", "sign_in_method_totals",
                "webhook_deliveries", "webhook_endpoints",
            ])
        let recorded = try await pool.query("SELECT version FROM schema_migrations ORDER BY version")
            .map { try $0.decode(Int.self, "version") }
        XCTAssertEqual(recorded, all)
        // Ceremony rows are unlogged (no WAL flush to issue or consume a challenge); everything else is durable.
        let unlogged = try await pool.query(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relpersistence = 'u' ORDER BY relname"
        ).map { try $0.decode(String.self, "relname") }
        XCTAssertEqual(
            unlogged,
            ["passkey_account_registrations", "passkey_authentication_challenges", "passkey_registration_challenges"])
        // They churn completely: vacuumed at fixed small thresholds, rarely analyzed (migration 0010).
        for table in unlogged {
            let options =
                try await pool.query(
                    "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE relname = \(table)"
                ).first?.decode(String.self, "options") ?? ""
            XCTAssertTrue(options.contains("autovacuum_vacuum_scale_factor=0"), "\(table): \(options)")
            XCTAssertTrue(options.contains("autovacuum_vacuum_threshold=2000"), "\(table): \(options)")
            XCTAssertTrue(options.contains("autovacuum_analyze_threshold=500000"), "\(table): \(options)")
        }
    }

    func testConcurrentMigratorsBothSucceedAndApplyEachMigrationOnce() async throws {
        let first = database.makePool(size: 1)
        let second = database.makePool(size: 1)
        defer {
            first.shutdown()
            second.shutdown()
        }
        async let a = PostgresStorage(pool: first).migrate()
        async let b = PostgresStorage(pool: second).migrate()
        let (appliedByA, appliedByB) = try await (a, b)
        let all = try PostgresStorage.migrations().map(\.version)
        XCTAssertEqual((appliedByA + appliedByB).sorted(), all)
        let count = try await first.query("SELECT count(*) AS n FROM schema_migrations").first!.decode(Int.self, "n")
        XCTAssertEqual(count, all.count)
    }

    func testAChangedMigrationStopsTheRun() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let migrator = PostgresMigrator(pool: pool)
        try await migrator.apply([PostgresMigration(version: 1, name: "t", sql: "CREATE TABLE t (a int)")])
        do {
            try await migrator.apply([PostgresMigration(version: 1, name: "t", sql: "CREATE TABLE t (a bigint)")])
            XCTFail("an edited migration was accepted")
        } catch let error as PostgresError {
            XCTAssertTrue(error.message.contains("changed after it was applied"))
        }
    }

    func testAFailingMigrationLeavesNoTrace() async throws {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        let migrator = PostgresMigrator(pool: pool)
        do {
            try await migrator.apply([
                PostgresMigration(version: 1, name: "bad", sql: "CREATE TABLE half (a int); SELECT no_such_function()")
            ])
            XCTFail("a broken migration succeeded")
        } catch {}
        let tables = try await pool.query("SELECT to_regclass('half') IS NULL AS gone").first!.decode(Bool.self, "gone")
        XCTAssertTrue(tables)
        let recorded = try await pool.query("SELECT count(*) AS n FROM schema_migrations").first!.decode(Int.self, "n")
        XCTAssertEqual(recorded, 0)
    }
}
