import Crypto
import Domain
import Foundation
import Observability
import Postgres
import PostgresStorage
import PostgresTestSupport
import Webhooks
import XCTest

/// `PostgresWebhookRepository` on a real database: endpoints (registered, listed, deleted, enabled), the deliveries
/// an audit event makes for the endpoints that take its type, and the lease a worker holds while it delivers, backs
/// off or disables an endpoint.
final class WebhookRepositoryTests: StorageTestCase {
    let keys = SecretKeyRing(keys: [Array(repeating: 4, count: 32)])!
    var webhooks: PostgresWebhookRepository!

    override func setUp() async throws {
        try await super.setUp()
        webhooks = PostgresWebhookRepository(pool: pool)
    }

    func endpoint(_ types: [String] = ["*"], url: String = "https://hooks.example.com/in") async throws -> UUID {
        let id = UUID()
        let created = try await webhooks.createEndpoint(
            id: id, url: url, eventTypes: types, description: "test",
            secret: try WebhookSecret(random: SecureRandom()).sealed(for: id, with: keys))
        XCTAssertEqual(created?.id, id)
        return id
    }

    /// Clears the deliveries made so far (an endpoint's own creation is an event too).
    func clearDeliveries() async throws { _ = try await pool.query("DELETE FROM webhook_deliveries") }

    func waiting(for id: UUID) async throws -> Int {
        try await pool.query(
            "SELECT count(*)::bigint AS n FROM webhook_deliveries WHERE endpoint_id = \(id) AND delivered_at IS NULL"
        ).first?.decode(Int.self, "n") ?? 0
    }

    func testEndpointsAreListedReadDeletedAndEnabled() async throws {
        let first = try await endpoint(["audit.account.created"])
        let second = try await endpoint()
        let listed = try await webhooks.endpoints()
        XCTAssertEqual(Set(listed.map(\.id)), [first, second])
        let read = try await webhooks.endpoint(first)
        XCTAssertEqual(read?.eventTypes, ["audit.account.created"])
        XCTAssertEqual(read?.description, "test")
        XCTAssertNil(read?.disabledAt)
        let unknown = try await webhooks.endpoint(UUID())
        XCTAssertNil(unknown)
        let enabledAlready = try await webhooks.enableEndpoint(first)
        XCTAssertEqual(enabledAlready, false)
        _ = try await pool.query("UPDATE webhook_endpoints SET disabled_at = now(), failures = 9 WHERE id = \(first)")
        let enabled = try await webhooks.enableEndpoint(first)
        XCTAssertEqual(enabled, true)
        let noSuch = try await webhooks.enableEndpoint(UUID())
        XCTAssertNil(noSuch)
        let deleted = try await webhooks.deleteEndpoint(first)
        let deletedAgain = try await webhooks.deleteEndpoint(first)
        XCTAssertTrue(deleted)
        XCTAssertFalse(deletedAgain)
        let left = try await webhooks.endpoints()
        XCTAssertEqual(left.map(\.id), [second])
    }

    func testAtMostTheLimitOfEndpointsIsRegistered() async throws {
        for index in 0..<WebhookEndpoint.countLimit {
            _ = try await endpoint(url: "https://hooks.example.com/\(index)")
        }
        let id = UUID()
        let refused = try await webhooks.createEndpoint(
            id: id, url: "https://hooks.example.com/over", eventTypes: ["*"], description: "",
            secret: try WebhookSecret(random: SecureRandom()).sealed(for: id, with: keys))
        XCTAssertNil(refused)
        let count = try await webhooks.endpoints().count
        XCTAssertEqual(count, WebhookEndpoint.countLimit)
    }

    func testAnEventMakesDeliveriesOnlyForTheEnabledEndpointsThatTakeItsType() async throws {
        let everything = try await endpoint()
        let signUps = try await endpoint(["audit.account.created"])
        let renames = try await endpoint(["audit.account.renamed"])
        let disabled = try await endpoint()
        _ = try await pool.query("UPDATE webhook_endpoints SET disabled_at = now() WHERE id = \(disabled)")
        try await clearDeliveries()
        _ = try await storedPasswordAccount()
        let counts = [
            try await waiting(for: everything), try await waiting(for: signUps), try await waiting(for: renames),
            try await waiting(for: disabled),
        ]
        XCTAssertEqual(counts, [1, 1, 0, 0])
        let shown = try await webhooks.endpoint(everything)
        XCTAssertEqual(shown?.pending, 1)
    }

    func testALeaseIsHeldByOneWorkerAndOnlyItsHolderRecordsOutcomes() async throws {
        let id = try await endpoint(["audit.account.created"])
        try await clearDeliveries()
        _ = try await storedPasswordAccount(email: "a@example.com")
        _ = try await storedPasswordAccount(email: "b@example.com")
        let batches = try await webhooks.lease(endpoints: 5, batch: 32, lease: 30)
        let batch = try XCTUnwrap(batches.first)
        XCTAssertEqual(batches.count, 1)
        XCTAssertEqual(batch.endpointID, id)
        XCTAssertEqual(batch.deliveries.count, 2)
        XCTAssertEqual(batch.secret.open(for: id, with: keys) != nil, true, "the secret opens for its endpoint")
        let second = try await webhooks.lease(endpoints: 5, batch: 32, lease: 30)
        XCTAssertEqual(second, [], "held: no other worker gets it")
        // Another lease's outcome is not recorded.
        try await webhooks.recordDelivered(batch.deliveries[0], lease: UUID(), extendingBy: 30)
        let disabledByStranger = try await webhooks.recordFailure(
            batch.deliveries[0], lease: UUID(), error: "x", retryAfter: 1, disableAfter: 0)
        XCTAssertFalse(disabledByStranger)
        let stillFailures = try await webhooks.endpoint(id)
        XCTAssertNil(stillFailures?.failingSince)
        try await webhooks.recordDelivered(batch.deliveries[0], lease: batch.lease, extendingBy: 30)
        let waitingNow = try await waiting(for: id)
        XCTAssertEqual(waitingNow, 1)
        try await webhooks.release(endpoint: id, lease: batch.lease)
        let next = try await webhooks.lease(endpoints: 5, batch: 32, lease: 30)
        XCTAssertEqual(next.first?.deliveries.map(\.id), [batch.deliveries[1].id], "released: the rest is leased")
    }

    func testAFailureBacksTheEndpointOffAndOneFailingTooLongDisablesIt() async throws {
        let id = try await endpoint(["audit.account.created"])
        try await clearDeliveries()
        _ = try await storedPasswordAccount()
        let leased = try await webhooks.lease(endpoints: 1, batch: 32, lease: 30)
        let batch = try XCTUnwrap(leased.first)
        let disabled = try await webhooks.recordFailure(
            batch.deliveries[0], lease: batch.lease, error: "HTTP 500", retryAfter: 60, disableAfter: 3600)
        XCTAssertFalse(disabled)
        let backedOff = try await webhooks.lease(endpoints: 1, batch: 32, lease: 30)
        XCTAssertEqual(backedOff, [], "not before its retry time")
        let failing = try await webhooks.endpoint(id)
        XCTAssertNotNil(failing?.failingSince)
        _ = try await pool.query(
            "UPDATE webhook_endpoints SET retry_at = now(), failing_since = now() - interval '2 hours' WHERE id = \(id)"
        )
        let leasedAgain = try await webhooks.lease(endpoints: 1, batch: 32, lease: 30)
        let again = try XCTUnwrap(leasedAgain.first)
        XCTAssertEqual(again.failures, 1)
        XCTAssertEqual(again.deliveries.first?.attempts, 1)
        let nowDisabled = try await webhooks.recordFailure(
            again.deliveries[0], lease: again.lease, error: "HTTP 500", retryAfter: 60, disableAfter: 3600)
        XCTAssertTrue(nowDisabled)
        let shown = try await webhooks.endpoint(id)
        XCTAssertNotNil(shown?.disabledAt)
        XCTAssertTrue(shown?.disabledReason?.hasSuffix(": HTTP 500") ?? false, shown?.disabledReason ?? "none")
        let disabledEvents = try await pool.query(
            "SELECT count(*)::bigint AS n FROM audit_events WHERE type = 'audit.webhook.disabled' AND actor = 'system'"
        ).first?.decode(Int.self, "n")
        XCTAssertEqual(disabledEvents, 1)
        _ = try await pool.query("UPDATE webhook_endpoints SET retry_at = NULL WHERE id = \(id)")
        let none = try await webhooks.lease(endpoints: 1, batch: 32, lease: 30)
        XCTAssertEqual(none, [], "a disabled endpoint is not leased")
    }
}
