import Foundation
import GRPC
import GRPCHealth
import NetworkIO
import Postgres
import PostgresStorage
import PostgresTestSupport
import XCTest

/// A service started before its database: it does not exit (Kubernetes would restart it into a crash loop), it
/// reports NOT_SERVING on readiness while liveness stays SERVING, it serves once the database answers, and a
/// configured limit ends the wait with a message naming `DATABASE_URL` without its password.
final class DatabaseStartTests: XCTestCase {
    private var logDirectory: URL!

    override func setUp() async throws {
        try await super.setUp()
        logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "passkey-dbstart-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: logDirectory)
        try await super.tearDown()
    }

    private func serviceEnvironment(databaseURL: String, extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("GRPC_TLS_") }
        environment.merge([
            "DATABASE_URL": databaseURL, "GRPC_PLAINTEXT": "true", "PASSKEY_RP_ID": "localhost",
            "PASSKEY_RP_NAME": "Passkey Test", "PASSKEY_ORIGINS": "http://localhost:8080",
            "CHALLENGE_SERVICE_LISTEN": "127.0.0.1:\(freePort())",
        ]) { _, new in new }
        environment.merge(extra) { _, new in new }
        return environment
    }

    private func healthz(_ port: Int) async -> Int? {
        await Flows(baseURL: URL(string: "http://127.0.0.1:\(port)")!).outcome(TextRequest("/healthz")).status
    }

    private func health(_ port: Int, service: String) async throws -> ServingStatus {
        let client = try GRPCClient(
            addresses: [SocketAddress(host: "127.0.0.1", port: UInt16(port))], configuration: GRPCClientConfiguration())
        defer { client.close() }
        return try await client.unary(
            HealthService.check, request: HealthCheckRequest(service: service)
        ).status
    }

    func testAServiceStartedBeforeItsDatabaseWaitsNotReadyButAliveAndServesOnceTheDatabaseAnswers() async throws {
        guard let serverURL = TestDatabase.serverURL else { throw XCTSkip("DATABASE_URL is not set") }
        let database = try await TestDatabase(serverURL: serverURL)
        let admin = PostgresStorage(url: serverURL, poolSize: 1, applicationName: "test")
        defer { admin.shutdown() }
        // The database refuses every connection, as one that is still starting or unreachable does.
        try await admin.pool.query(.init(unsafeSQL: "ALTER DATABASE \(database.name) ALLOW_CONNECTIONS false"))
        let metricsPort = freePort()
        let healthPort = freePort()
        let service = ManagedProcess(
            executable: "challenge-service",
            environment: serviceEnvironment(
                databaseURL: database.url,
                extra: ["METRICS_LISTEN": "127.0.0.1:\(metricsPort)", "GRPC_HEALTH_LISTEN": "127.0.0.1:\(healthPort)"]),
            logDirectory: logDirectory)
        try service.start()
        defer { service.terminate() }
        XCTAssertTrue(waitUntil { isListening(healthPort) && isListening(metricsPort) }, service.log)
        // Seconds go by: still running, not ready, alive.
        try await Task.sleep(for: .seconds(2))
        XCTAssertTrue(service.isRunning, "the service exited without its database:\n\(service.log)")
        await assertEqual(await healthz(metricsPort), 503)
        await assertEqual(try await health(healthPort, service: ""), .notServing)
        await assertEqual(try await health(healthPort, service: HealthService.livenessService), .serving)
        XCTAssertTrue(service.log.contains("database.unreachable"), service.log)

        try await admin.pool.query(.init(unsafeSQL: "ALTER DATABASE \(database.name) ALLOW_CONNECTIONS true"))
        let migrations = database.makePool(size: 1)
        try await PostgresStorage(pool: migrations).migrate()
        migrations.shutdown()
        // Retried within the backoff's 2 s cap: ready in a few seconds, without a restart.
        var ready = false
        for _ in 0..<100 where !ready {
            ready = await healthz(metricsPort) == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertTrue(ready, service.log)
        await assertEqual(try await health(healthPort, service: ""), .serving)
        XCTAssertTrue(service.isRunning)
        XCTAssertTrue(service.log.contains("database.available"), service.log)
        XCTAssertEqual(service.terminate(), 0, service.log)
        try await database.drop()
    }

    func testTheWaitLimitEndsTheStartNamingDatabaseURLWithoutItsPassword() throws {
        let service = ManagedProcess(
            executable: "challenge-service",
            environment: serviceEnvironment(
                databaseURL: "postgresql://passkey:secret-password@127.0.0.1:1,127.0.0.1:2/passkey?connect_timeout=1",
                extra: ["DATABASE_WAIT_TIMEOUT": "1s"]),
            logDirectory: logDirectory)
        let started = Date()
        try service.start()
        XCTAssertTrue(waitUntil(timeout: 15) { !service.isRunning }, "still waiting past DATABASE_WAIT_TIMEOUT")
        XCTAssertEqual(service.terminate(), 1)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 1)
        let log = service.log
        XCTAssertTrue(log.contains("DATABASE_URL"), log)
        XCTAssertTrue(log.contains("DATABASE_WAIT_TIMEOUT"), log)
        XCTAssertTrue(log.contains("passkey:***@"), log)
        XCTAssertFalse(log.contains("secret-password"), log)
    }

    func testAURLThatCannotBeReadOrCouldReachAStandbyStopsTheStartNamingTheVariable() throws {
        for url in [
            "postgresql://passkey:secret-password@h1,h2,h3/passkey?target_session_attrs=standby",
            "postgresql://passkey:secret-password@db/passkey?no_such_option=1",
            "host=h1,h2,h3 port=5432,5433 dbname=passkey password=secret-password",
        ] {
            let service = ManagedProcess(
                executable: "challenge-service", environment: serviceEnvironment(databaseURL: url),
                logDirectory: logDirectory)
            try service.start()
            XCTAssertTrue(waitUntil(timeout: 10) { !service.isRunning }, url)
            XCTAssertEqual(service.terminate(), 2, "\(url)\n\(service.log)")
            XCTAssertTrue(service.log.contains("DATABASE_URL"), service.log)
            XCTAssertFalse(service.log.contains("secret-password"), service.log)
        }
    }
}
