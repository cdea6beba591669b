import Crypto
import Foundation
import Postgres
import PostgresStorage
import PostgresTestSupport
import Synchronization
import Webhooks
import XCTest

/// The webhook outbox's trigger on `audit_events` (migration 0020): an event that no enabled endpoint takes costs no
/// webhook work at all, and an event stored once an endpoint that takes it exists is never missed.
final class WebhookSubscriptionTests: StorageTestCase {
    let keys = SecretKeyRing(keys: [Array(repeating: 9, count: 32)])!
    var webhooks: PostgresWebhookRepository!

    override func setUp() async throws {
        try await super.setUp()
        webhooks = PostgresWebhookRepository(pool: pool)
    }

    func register(_ types: [String]) async throws -> UUID {
        let id = UUID()
        let secret = WebhookSecret(random: SecureRandom())
        let created = try await webhooks.createEndpoint(
            id: id, url: "https://hooks.example.com/\(id)", eventTypes: types, description: "",
            secret: try secret.sealed(for: id, with: keys))
        XCTAssertEqual(created?.id, id)
        return id
    }

    /// Stores one event of `type` in a transaction of its own; answers how often the outbox's trigger function ran
    /// and how many deliveries the event got.
    func store(_ type: String) async throws -> (triggerCalls: Int, deliveries: Int) {
        try await pool.transaction { connection in
            try connection.execute("SET LOCAL track_functions = 'all'")
            // Postgres 15 answers this view from the connection's unflushed counters, which can still hold an
            // earlier transaction's calls (they are flushed at most once a second): only the difference across the
            // insert is this event's.
            func triggerCalls() throws -> Int {
                try connection.execute(
                    """
                    SELECT coalesce(sum(calls), 0)::bigint AS n FROM pg_stat_xact_user_functions
                    WHERE funcname = 'audit_event_to_webhooks'
                    """
                ).first?.decode(Int.self, "n") ?? -1
            }
            let before = try triggerCalls()
            let id = try connection.execute(
                "INSERT INTO audit_events (type, actor) VALUES (\(type), 'user') RETURNING id"
            ).first?.decode(Int.self, "id")
            let calls = try triggerCalls() - before
            let deliveries =
                try connection.execute(
                    "SELECT count(*)::bigint AS n FROM webhook_deliveries WHERE event_id = \(id)"
                ).first?.decode(Int.self, "n") ?? -1
            return (calls, deliveries)
        }
    }

    func testAnEventNoEnabledEndpointTakesRunsNoWebhookWork() async throws {
        var stored = try await store("audit.sign_in.succeeded")
        XCTAssertEqual(stored.triggerCalls, 0, "no endpoint at all")
        XCTAssertEqual(stored.deliveries, 0)

        let endpoint = try await register(["audit.account.disabled"])
        stored = try await store("audit.sign_in.succeeded")
        XCTAssertEqual(stored.triggerCalls, 0, "an endpoint of another type only")
        XCTAssertEqual(stored.deliveries, 0)
        stored = try await store("audit.account.disabled")
        XCTAssertEqual(stored.triggerCalls, 1)
        XCTAssertEqual(stored.deliveries, 1)

        // Disabled by a statement of any release (the worker's, or an older binary's): its types drop out at commit.
        _ = try await pool.query("UPDATE webhook_endpoints SET disabled_at = now() WHERE id = \(endpoint)")
        stored = try await store("audit.account.disabled")
        XCTAssertEqual(stored.triggerCalls, 0, "its only endpoint is disabled")
        XCTAssertEqual(stored.deliveries, 0)
        let enabled = try await webhooks.enableEndpoint(endpoint)
        XCTAssertEqual(enabled, true)
        stored = try await store("audit.account.disabled")
        XCTAssertEqual(stored.deliveries, 1, "enabled again")

        let everything = try await register(["*"])
        stored = try await store("audit.sign_in.succeeded")
        XCTAssertEqual(stored.deliveries, 1, "'*' takes every type")
        stored = try await store("audit.account.disabled")
        XCTAssertEqual(stored.deliveries, 2)

        let deleted = try await webhooks.deleteEndpoint(everything)
        XCTAssertTrue(deleted)
        stored = try await store("audit.sign_in.succeeded")
        XCTAssertEqual(stored.triggerCalls, 0, "the '*' endpoint is gone")
        XCTAssertEqual(stored.deliveries, 0)
    }

    func testAnEndpointsOwnCreationAndEnablingAreDeliveredToItWhenItTakesThem() async throws {
        let endpoint = try await register(["audit.webhook.created", "audit.webhook.enabled"])
        let created = try await pool.query(
            """
            SELECT count(*)::bigint AS n FROM webhook_deliveries d JOIN audit_events e ON e.id = d.event_id
            WHERE d.endpoint_id = \(endpoint) AND e.type = 'audit.webhook.created'
            """
        ).first?.decode(Int.self, "n")
        XCTAssertEqual(created, 1)
        _ = try await pool.query("UPDATE webhook_endpoints SET disabled_at = now() WHERE id = \(endpoint)")
        let enabled = try await webhooks.enableEndpoint(endpoint)
        XCTAssertEqual(enabled, true)
        let enabledEvents = try await pool.query(
            """
            SELECT count(*)::bigint AS n FROM webhook_deliveries d JOIN audit_events e ON e.id = d.event_id
            WHERE d.endpoint_id = \(endpoint) AND e.type = 'audit.webhook.enabled'
            """
        ).first?.decode(Int.self, "n")
        XCTAssertEqual(enabledEvents, 1)
    }

    func testEveryEventStoredOnceAnEndpointIsRegisteredIsDeliveredWhileEventsKeepComing() async throws {
        // Writers store events without pause, each in its own statement, while the endpoint is registered.
        let registration = Registration()
        // They keep going until half a second after the registration returned, however long it took.
        let writers = (0..<4).map { _ in
            Task { [pool, registration] () -> [(started: ContinuousClock.Instant, id: Int)] in
                var stored: [(started: ContinuousClock.Instant, id: Int)] = []
                while registration.instant.withLock({ $0.map { ContinuousClock.now < $0 + .milliseconds(500) } ?? true }
                ) {
                    let started = ContinuousClock.now
                    let id = try await pool!.query(
                        "INSERT INTO audit_events (type, actor) VALUES ('audit.sign_in.succeeded', 'user') RETURNING id"
                    ).first?.decode(Int.self, "id")
                    stored.append((started, try XCTUnwrap(id)))
                }
                return stored
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let endpoint = try await register(["audit.sign_in.succeeded"])
        registration.instant.withLock { $0 = ContinuousClock.now }
        var after: [Int] = []
        for writer in writers {
            let stored = try await writer.value
            let registered = try XCTUnwrap(registration.instant.withLock { $0 })
            after += stored.filter { $0.started > registered }.map(\.id)
        }
        XCTAssertGreaterThan(after.count, 10, "events kept coming after the registration")
        let delivered = Set(
            try await pool.query("SELECT event_id FROM webhook_deliveries WHERE endpoint_id = \(endpoint)")
                .map { try $0.decode(Int.self, "event_id") })
        XCTAssertEqual(after.filter { !delivered.contains($0) }, [], "events stored after it was registered, missed")
    }
}

/// When the endpoint was registered, shared with the tasks that store events meanwhile.
private final class Registration: Sendable {
    let instant = Mutex<ContinuousClock.Instant?>(nil)
}
