import Foundation
import PasskeyClient
import Postgres
import PostgresStorage
import PostgresTestSupport
import TestCertificates
import XCTest

/// The whole product as apps meet it: a fresh database, the three services and the gateway, as real processes.
final class Stack: @unchecked Sendable {
    // @unchecked: the process lists are only changed by the test that owns the stack, one call at a time.
    static let origin = "http://localhost:8080"
    static let relyingPartyID = "localhost"

    let database: TestDatabase
    let logDirectory: URL
    let gatewayPort: Int
    let challengePort: Int
    let sessionPort: Int
    let verificationPorts: [Int]
    /// Where each service serves `/metrics`: challenge, session, then the verification replicas.
    let metricsPorts: [String: Int]
    private(set) var challenge: ManagedProcess!
    private(set) var session: ManagedProcess!
    private(set) var verification: [ManagedProcess] = []
    private(set) var gateway: ManagedProcess!
    let environment: [String: String]

    /// Starts everything and waits until the gateway answers.
    init(verificationReplicas: Int = 1, environment extra: [String: String] = [:]) async throws {
        guard let serverURL = TestDatabase.serverURL else {
            throw XCTSkip("DATABASE_URL is not set: run ./deploy/local/test")
        }
        database = try await TestDatabase(serverURL: serverURL)
        let pool = database.makePool(size: 1)
        try await PostgresStorage(pool: pool).migrate()
        pool.shutdown()

        logDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("passkey-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        gatewayPort = freePort()
        challengePort = freePort()
        sessionPort = freePort()
        verificationPorts = (0..<verificationReplicas).map { _ in freePort() }
        metricsPorts = [
            "challenge-service": freePort(), "session-service": freePort(), "verification-service": freePort(),
        ]

        let certificates = try TestCertificates.shared()
        // The key-encryption key that seals the access-token signing keys: 32 random bytes, hex.
        let keyEncryptionKey = logDirectory.appendingPathComponent("token-kek")
        try (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            .write(to: keyEncryptionKey, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment.merge([
            "DATABASE_URL": database.url, "DATABASE_POOL_SIZE": "4",
            "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": keyEncryptionKey.path,
            "PASSKEY_RP_ID": Self.relyingPartyID, "PASSKEY_RP_NAME": "Passkey Test", "PASSKEY_ORIGINS": Self.origin,
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0",
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
            "PASSKEY_ANDROID_APPS": "com.example.app:" + Array(repeating: "AB", count: 32).joined(separator: ":"),
            "GATEWAY_LISTEN": "127.0.0.1:\(gatewayPort)",
            "CHALLENGE_SERVICE_LISTEN": "127.0.0.1:\(challengePort)",
            "SESSION_SERVICE_LISTEN": "127.0.0.1:\(sessionPort)",
            "CHALLENGE_SERVICE_ADDRESSES": "127.0.0.1:\(challengePort)",
            "SESSION_SERVICE_ADDRESSES": "127.0.0.1:\(sessionPort)",
            "VERIFICATION_SERVICE_ADDRESSES": verificationPorts.map { "127.0.0.1:\($0)" }.joined(separator: ","),
        ]) { _, new in new }
        environment.merge(extra) { _, new in new }
        self.environment = environment

        /// The environment of one process: its own certificate, unless the test configures gRPC itself.
        func identity(_ name: String) -> [String: String] {
            var own = environment
            if extra.keys.allSatisfy({ !$0.hasPrefix("GRPC_TLS_") && $0 != "GRPC_PLAINTEXT" }) {
                own.merge(certificates.environment(for: name)) { _, new in new }
            }
            return own
        }
        func metrics(_ service: String) -> [String: String] {
            var withMetrics = identity(service)
            withMetrics["METRICS_LISTEN"] = "127.0.0.1:\(metricsPorts[service]!)"
            return withMetrics
        }
        challenge = ManagedProcess(
            executable: "challenge-service", environment: metrics("challenge-service"), logDirectory: logDirectory)
        session = ManagedProcess(
            executable: "session-service", environment: metrics("session-service"), logDirectory: logDirectory)
        verification = verificationPorts.enumerated().map { index, port in
            // The first replica serves metrics; the others would need ports of their own.
            var replica = index == 0 ? metrics("verification-service") : identity("verification-service")
            replica["VERIFICATION_SERVICE_LISTEN"] = "127.0.0.1:\(port)"
            return ManagedProcess(executable: "verification-service", environment: replica, logDirectory: logDirectory)
        }
        gateway = ManagedProcess(executable: "gateway", environment: identity("gateway"), logDirectory: logDirectory)
        do {
            for process in [challenge!, session!] + verification + [gateway!] { try process.start() }
        } catch {
            stop()
            throw error
        }
        for port in [challengePort, sessionPort] + verificationPorts + [gatewayPort] {
            guard waitUntil({ isListening(port) }) else {
                stop()
                throw StackError(message: "port \(port) never opened:\n\(logs)")
            }
        }
        // Ready means every backend answers the gateway's health checks, as a load balancer would wait for.
        let client = Flows(baseURL: gatewayURL).client(retryPolicy: .none)
        for _ in 0..<200 {
            if (try? await client.send(ReadinessOperation()))?.status == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        stop()
        throw StackError(message: "the gateway never became ready:\n\(logs)")
    }

    var gatewayURL: URL { URL(string: "http://127.0.0.1:\(gatewayPort)")! }

    /// Every process's log, for failure messages.
    var logs: String {
        ([challenge, session, gateway] + verification).compactMap { $0 }.map { "--- \($0.executable)\n\($0.log)" }
            .joined(separator: "\n")
    }

    /// Stops every process and drops the database.
    func stop() {
        for process in ([gateway, challenge, session] + verification).compactMap({ $0 }) { process.terminate() }
    }

    func tearDown() async {
        stop()
        try? await database.drop()
        try? FileManager.default.removeItem(at: logDirectory)
    }

    /// Runs SQL on the stack's database (to age a session, say).
    func sql(_ query: PostgresQuery) async throws -> PostgresRows {
        let pool = database.makePool(size: 1)
        defer { pool.shutdown() }
        return try await pool.query(query)
    }
}

struct StackError: Error, CustomStringConvertible, Sendable {
    let message: String
    var description: String { message }
}
