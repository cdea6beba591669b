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

/// `WebhookWorker` on a leased batch: in-order delivery signed with the endpoint's secret, the first failure ending
/// the batch and backing the endpoint off, disabling after `disableAfter`, refused destinations, secrets this replica
/// cannot open, and a store that fails.
final class WebhookWorkerTests: WebhookTestCase {
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
            webhooks: webhooks, transport: transport, keys: otherKeys,
            retry: WebhookRetry(maximumDelay: 60, disableAfter: 60),
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
