import AdminAccess
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
@testable import SessionServiceCore
import Synchronization
import UseCaseTestSupport
import Webhooks
import XCTest

/// The webhook use cases without processes or network: `WebhookAdministration` (registering, reading, deleting and
/// enabling endpoints, as an admin token) and `WebhookWorker` (delivering a leased batch in order, backing off or
/// disabling on failure), against the in-memory webhook store and a scripted transport.
final class WebhookTests: XCTestCase {
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
                id: secret.id, name: "test", scopes: scopes, createdBy: "cli:test", createdAt: clock.now, expiresAt: nil),
            digest: secret.digest)
        return secret.text
    }

    func audited(_ event: AuditEvent) -> [String] { log.lines.filter { $0.contains("event=\(event.rawValue) ") } }

    func create(_ url: String = "https://hooks.example.com/in", types: [String] = ["*"]) async throws
        -> (endpoint: WebhookEndpoint, secret: WebhookSecret)
    {
        try await administration.create(token: writeToken, url: url, eventTypes: types, description: "CRM")
    }

    // MARK: WebhookAdministration

    func testARegisteredEndpointKeepsItsSecretSealedAndShowsItOnce() async throws {
        let (endpoint, secret) = try await create(types: ["audit.account.created", "audit.session.revoked"])
        XCTAssertEqual(endpoint.url, "https://hooks.example.com/in")
        XCTAssertEqual(endpoint.eventTypes, ["audit.account.created", "audit.session.revoked"])
        XCTAssertEqual(endpoint.createdBy, "admin:\(AdminTokenSecret(presented: writeToken)!.id)", "made as the token")
        let stored = try XCTUnwrap(webhooks.row(endpoint.id)?.secret)
        guard case .sealed = stored else { return XCTFail("the secret is stored sealed") }
        XCTAssertEqual(stored.open(for: endpoint.id, with: Self.keys), secret, "and opens to the secret shown")
        XCTAssertNil(stored.open(for: UUID(), with: Self.keys), "sealed for this endpoint only")
        XCTAssertTrue(audited(.webhookCreated).first?.contains(endpoint.id.uuidString.lowercased()) ?? false)
        let listed = try await administration.list(token: readToken)
        XCTAssertEqual(listed.map(\.id), [endpoint.id])
    }

    func testEventTypesAndDescriptionsAreChecked() async throws {
        for (types, why) in [
            ([], "none"), (["*", "*"], "a repeat"), (["audit.nothing"], "not an audit event"),
            (Array(repeating: "*", count: WebhookEndpoint.eventTypeLimit + 1), "too many"),
        ] as [([String], String)] {
            await assertThrowsDomainError(.invalidRequest, why) { _ = try await self.create(types: types) }
        }
        for description in [String(repeating: "a", count: WebhookEndpoint.descriptionLimit + 1), "line\nbreak"] {
            await assertThrowsDomainError(.invalidRequest) {
                _ = try await self.administration.create(
                    token: self.writeToken, url: "https://hooks.example.com/in", eventTypes: ["*"],
                    description: description)
            }
        }
        XCTAssertEqual(webhooks.state.withLock { $0.rows.count }, 0)
    }

    func testARefusedDestinationIsAnInvalidRequestNamingWhy() async throws {
        transport.refusals.withLock { $0["https://internal.example/in"] = "10.0.0.1 is an internal address" }
        let error = await assertThrowsDomainError(.invalidRequest) { _ = try await self.create("https://internal.example/in") }
        XCTAssertEqual(error?.message, "url: 10.0.0.1 is an internal address")
        XCTAssertEqual(webhooks.state.withLock { $0.calls }, [], "nothing was stored")
    }

    func testTheEndpointLimitIsAnInvalidRequest() async throws {
        for index in 0..<WebhookEndpoint.countLimit { _ = try await create("https://hooks.example.com/\(index)") }
        let error = await assertThrowsDomainError(.invalidRequest) { _ = try await self.create() }
        XCTAssertEqual(error?.message, "at most \(WebhookEndpoint.countLimit) webhook endpoints may be registered")
    }

    func testReadingNeedsReadAndChangingNeedsWrite() async throws {
        let (endpoint, _) = try await create()
        await assertThrowsDomainError(.forbidden) { _ = try await self.administration.list(token: self.writeToken) }
        await assertThrowsDomainError(.forbidden) {
            try await self.administration.delete(token: self.readToken, id: endpoint.id)
        }
        await assertThrowsDomainError(.forbidden) {
            _ = try await self.administration.create(
                token: self.readToken, url: "https://hooks.example.com/x", eventTypes: ["*"], description: "")
        }
        await assertThrowsDomainError(.unauthenticated) {
            _ = try await self.administration.endpoint(token: "", id: endpoint.id)
        }
        XCTAssertNotNil(webhooks.row(endpoint.id))
    }

    func testDeletingAndEnablingAnEndpoint() async throws {
        let (endpoint, _) = try await create()
        let enabledAlready = try await administration.enable(token: writeToken, id: endpoint.id)
        XCTAssertFalse(enabledAlready)
        XCTAssertEqual(audited(.webhookEnabled), [], "nothing changed, nothing audited")
        webhooks.state.withLock { $0.rows[endpoint.id]?.endpoint.disabledAt = clock.now }
        let enabled = try await administration.enable(token: writeToken, id: endpoint.id)
        XCTAssertTrue(enabled)
        XCTAssertEqual(audited(.webhookEnabled).count, 1)
        XCTAssertNil(webhooks.row(endpoint.id)?.endpoint.disabledAt)
        webhooks.enqueue(to: endpoint.id)
        try await administration.delete(token: writeToken, id: endpoint.id)
        XCTAssertEqual(webhooks.state.withLock { $0.deliveries }, [], "its waiting deliveries go with it")
        XCTAssertEqual(audited(.webhookDeleted).count, 1)
        for operation in ["read", "delete", "enable"] {
            await assertThrowsDomainError(.notFound, operation) {
                switch operation {
                case "read": _ = try await self.administration.endpoint(token: self.readToken, id: endpoint.id)
                case "delete": try await self.administration.delete(token: self.writeToken, id: endpoint.id)
                default: _ = try await self.administration.enable(token: self.writeToken, id: endpoint.id)
                }
            }
        }
    }

    // MARK: WebhookWorker

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

    func testABatchIsDeliveredInOrderSignedWithTheEndpointsSecretAndReleased() async throws {
        let (endpoint, secret) = try await create()
        let first = webhooks.enqueue(to: endpoint.id, payload: #"{"n":1}"#)
        let second = webhooks.enqueue(to: endpoint.id, payload: #"{"n":2}"#)
        try await worker().deliver(try await leased())
        let sent = transport.sent.withLock { $0 }
        XCTAssertEqual(sent.map(\.delivery.id), [first.id, second.id])
        XCTAssertEqual(sent.map(\.secret), [secret, secret])
        XCTAssertEqual(sent.first?.destination.url.host, "hooks.example.com")
        XCTAssertEqual(webhooks.state.withLock { $0.delivered.map(\.id) }, [first.id, second.id])
        XCTAssertNil(webhooks.row(endpoint.id)?.lease, "the lease is released")
        XCTAssertTrue(attempts("delivered"))
        let next = try await webhooks.lease(endpoints: 1, batch: 32, lease: 15)
        XCTAssertEqual(next, [], "nothing is left to deliver")
    }

    func testTheFirstFailureEndsTheBatchAndBacksTheEndpointOff() async throws {
        let (endpoint, _) = try await create()
        let first = webhooks.enqueue(to: endpoint.id)
        let second = webhooks.enqueue(to: endpoint.id)
        webhooks.enqueue(to: endpoint.id)
        transport.outcomes.withLock { $0 = [.success(200), .success(500)] }
        try await worker().deliver(try await leased())
        XCTAssertEqual(transport.sent.withLock { $0.map(\.delivery.id) }, [first.id, second.id], "the third waits")
        let row = try XCTUnwrap(webhooks.row(endpoint.id))
        XCTAssertEqual(row.failures, 1)
        XCTAssertEqual(row.lastError, "HTTP 500")
        XCTAssertEqual(row.retryAt, clock.now.addingTimeInterval(1), "one second after the first failure")
        XCTAssertNil(row.endpoint.disabledAt)
        XCTAssertEqual(webhooks.state.withLock { $0.deliveries.map(\.id) }.first, second.id, "it is tried again first")
        XCTAssertTrue(log.lines.contains { $0.contains("webhook.deferred") && $0.contains("failures=1") })
        let backedOff = try await webhooks.lease(endpoints: 1, batch: 32, lease: 15)
        XCTAssertEqual(backedOff, [], "not before the backoff")
        clock.advance(by: 1)
        let again = try await leased()
        XCTAssertEqual(again.failures, 1)
        transport.outcomes.withLock { $0 = [.failure(WebhookSendError("connection refused"))] }
        try await worker().deliver(again)
        XCTAssertEqual(webhooks.row(endpoint.id)?.retryAt, clock.now.addingTimeInterval(2), "the backoff doubles")
        XCTAssertEqual(webhooks.row(endpoint.id)?.lastError, "connection refused")
    }

    func testAnEndpointFailingForTooLongIsDisabledAndAudited() async throws {
        let (endpoint, _) = try await create()
        webhooks.enqueue(to: endpoint.id)
        transport.outcomes.withLock { $0 = [.success(503), .success(503)] }
        let worker = worker(retry: WebhookRetry(maximumDelay: 60, disableAfter: 30))
        try await worker.deliver(try await leased())
        XCTAssertNil(webhooks.row(endpoint.id)?.endpoint.disabledAt)
        clock.advance(by: 31)
        try await worker.deliver(try await leased())
        XCTAssertEqual(webhooks.row(endpoint.id)?.endpoint.disabledAt, clock.now)
        XCTAssertEqual(audited(.webhookDisabled).count, 1)
        let none = try await webhooks.lease(endpoints: 1, batch: 32, lease: 15)
        XCTAssertEqual(none, [], "a disabled endpoint is not leased")
    }

    func testARefusedDestinationFailsTheFirstDeliveryWithoutSending() async throws {
        let (endpoint, _) = try await create("https://moved.example.com/in")
        webhooks.enqueue(to: endpoint.id)
        transport.refusals.withLock { $0["https://moved.example.com/in"] = "moved.example.com now resolves inside" }
        try await worker().deliver(try await leased())
        XCTAssertEqual(transport.sent.withLock { $0 }, [])
        XCTAssertEqual(webhooks.row(endpoint.id)?.lastError, "moved.example.com now resolves inside")
        XCTAssertEqual(webhooks.row(endpoint.id)?.failures, 1)
    }

    func testASecretThisReplicaCannotOpenIsNeitherSentNorCountedAsAFailure() async throws {
        let (endpoint, _) = try await create()
        webhooks.enqueue(to: endpoint.id)
        let batch = try await leased()
        let otherKeys = SecretKeyRing(keys: [Array(repeating: 7, count: 32)])!
        try await WebhookWorker(
            webhooks: webhooks, transport: transport, keys: otherKeys, retry: WebhookRetry(maximumDelay: 60, disableAfter: 60),
            lanes: 1, attemptTimeout: 10, metrics: metrics, logger: Logger(service: "session-service", sink: log)
        ).deliver(batch)
        XCTAssertEqual(transport.sent.withLock { $0 }, [])
        XCTAssertEqual(webhooks.row(endpoint.id)?.failures, 0)
        XCTAssertNotNil(webhooks.row(endpoint.id)?.lease, "the lease lapses by itself")
        XCTAssertTrue(attempts("secret_unreadable"))
    }

    func testAStoreThatFailsToRecordADeliveryStopsTheBatch() async throws {
        let (endpoint, _) = try await create()
        webhooks.enqueue(to: endpoint.id)
        webhooks.enqueue(to: endpoint.id)
        let batch = try await leased()
        webhooks.state.withLock { $0.failing = [.recordDelivered] }
        do {
            try await worker().deliver(batch)
            XCTFail("a failed record was ignored")
        } catch {}
        XCTAssertEqual(transport.sent.withLock { $0.count }, 1, "nothing more is sent")
        XCTAssertEqual(webhooks.state.withLock { $0.deliveries.count }, 2, "both wait for the lease to lapse")
    }
}
