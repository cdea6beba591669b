import AdminAccess
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import Synchronization
import UseCaseTestSupport
import Webhooks
import XCTest

@testable import SessionServiceCore

/// The webhook use cases' fixture, without processes or network: `WebhookAdministration` over `AdminUseCases`, the
/// in-memory webhook and admin stores, a scripted transport, a fixed clock, and a read and a write admin token.
class WebhookTestCase: XCTestCase {
    static let keys = SecretKeyRing(keys: [Array(repeating: 9, count: 32)])!

    let clock = TestClock()
    let log = MemoryLogSink()
    let metrics = MetricsRegistry()
    let transport = ScriptedWebhookTransport()
    var webhooks: InMemoryWebhooks!
    var admin: InMemoryAdmin!
    var administration: WebhookAdministration!
    var writeToken = ""
    var readToken = ""

    override func setUp() {
        webhooks = InMemoryWebhooks(clock: clock.read)
        let accounts = InMemoryAccounts(clock: clock.read)
        admin = InMemoryAdmin(recovery: InMemoryRecovery(accounts: accounts, clock: clock.read))
        let useCases = AdminUseCases(
            admin: admin, recovery: admin.recovery, random: RecordingRandom(), keys: Self.keys,
            logger: Logger(service: "session-service", sink: log), clock: clock.read)
        administration = WebhookAdministration(
            admin: useCases, webhooks: webhooks, transport: transport, keys: Self.keys, random: RecordingRandom())
        writeToken = token([.write])
        readToken = token([.read])
    }

    func token(_ scopes: [AdminScope]) -> String {
        let secret = AdminTokenSecret(random: SecureRandom())
        admin.add(
            AdminToken(
                id: secret.id, name: "test", scopes: scopes, createdBy: "cli:test", createdAt: clock.now, expiresAt: nil
            ),
            digest: secret.digest)
        return secret.text
    }

    func audited(_ event: AuditEvent) -> [String] { log.lines.filter { $0.contains("event=\(event.rawValue) ") } }

    func create(_ url: String = "https://hooks.example.com/in", types: [String] = ["*"]) async throws
        -> (endpoint: WebhookEndpoint, secret: WebhookSecret)
    {
        try await administration.create(token: writeToken, url: url, eventTypes: types, description: "CRM")
    }
    func worker(retry: WebhookRetry = WebhookRetry(maximumDelay: 60, disableAfter: 3600)) -> WebhookWorker {
        WebhookWorker(
            webhooks: webhooks, transport: transport, keys: Self.keys, retry: retry, lanes: 1, attemptTimeout: 10,
            metrics: metrics, logger: Logger(service: "session-service", sink: log))
    }

    func leased() async throws -> WebhookBatch {
        let batches = try await webhooks.lease(endpoints: 1, batch: WebhookWorker.batchSize, lease: 15)
        return try XCTUnwrap(batches.first)
    }

    func attempts(_ outcome: String) -> Bool {
        metrics.exposition().contains(#"webhook_attempts_total{outcome="\#(outcome)"}"#)
    }
}
