import Crypto
import Foundation
import Observability
import Postgres
import Webhooks

/// `webhook_endpoints` and `webhook_deliveries` (migration 0014). Deliveries are made by the database's trigger on
/// `audit_events`; this repository registers endpoints and serves the delivery worker: leases, outcomes, backoff
/// and disabling an endpoint that keeps failing, each change with its audit event in the same statement.
public struct PostgresWebhookRepository: WebhookRepository {
    public static let deliveriesTable = "webhook_deliveries"
    static let endpointColumns = """
        e.id, e.url, e.event_types, e.description, e.created_at, e.created_by, e.disabled_at, e.disabled_reason,
        e.failing_since
        """
    /// Taken first by every change to the set of enabled endpoints: their commit rewrites the trigger on
    /// `audit_events` that fills the outbox (migration 0020), which takes this lock. Taking it before any other
    /// lock of the change keeps two changes from deadlocking on it.
    static let lockSubscriptions: PostgresQuery = "LOCK TABLE audit_events IN SHARE ROW EXCLUSIVE MODE"
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func createEndpoint(id: UUID, url: String, eventTypes: [String], description: String, secret: SealedSecret)
        async throws -> WebhookEndpoint?
    {
        let creator = AuditContext.current.actor.identifier.map { "admin:" + $0 } ?? AuditContext.current.actor.kind
        let audit = AuditTrail.rows(
            .webhookCreated, from: "created",
            detail: ["webhook.id": id.uuidString.lowercased(), "event_types": eventTypes.joined(separator: ",")])
        return try await translatingErrors {
            try await pool.transaction { connection in
                try connection.execute(Self.lockSubscriptions)
                // One registration at a time, so the count below holds until commit.
                try connection.execute("LOCK TABLE webhook_endpoints IN SHARE ROW EXCLUSIVE MODE")
                let count =
                    try connection.execute("SELECT count(*)::bigint AS n FROM webhook_endpoints")
                    .first?.decode(Int.self, "n") ?? 0
                guard count < WebhookEndpoint.countLimit else { return nil }
                // The endpoint's own `audit.webhook.created`, stored by the statement below, goes to it too when it
                // takes that type.
                try connection.execute(
                    "SELECT refresh_webhook_subscriptions(\(PostgresTextArray(eventTypes))::text[])")
                let rows = try connection.execute(
                    """
                    WITH created AS (
                             INSERT INTO webhook_endpoints
                                 (id, url, event_types, description, secret, secret_key_id, created_by)
                             VALUES (\(id), \(url), \(PostgresTextArray(eventTypes))::text[], \(description),
                                     \(PostgresBytes(secret.box)), \(secret.keyID), \(creator))
                             RETURNING *, NULL::uuid AS account_id),
                         audited AS (\(fragment: audit))
                    SELECT \(unsafeSQL: Self.endpointColumns), 0::bigint AS pending FROM created e
                    """)
                return try rows.first.map(Self.decode)
            }
        }
    }

    public func endpoints() async throws -> [WebhookEndpoint] {
        try await translatingErrors {
            try await pool.query(Self.selectEndpoints(where: "TRUE")).map(Self.decode)
        }
    }

    public func endpoint(_ id: UUID) async throws -> WebhookEndpoint? {
        try await translatingErrors {
            try await pool.query(Self.selectEndpoints(where: "e.id = \(id)")).first.map(Self.decode)
        }
    }

    /// The endpoints `condition` selects (over `e`), oldest first, each with its count of waiting deliveries.
    static func selectEndpoints(where condition: PostgresQuery) -> PostgresQuery {
        """
        SELECT \(unsafeSQL: endpointColumns),
               (SELECT count(*) FROM webhook_deliveries d
                WHERE d.endpoint_id = e.id AND d.delivered_at IS NULL)::bigint AS pending
        FROM webhook_endpoints e WHERE \(fragment: condition) ORDER BY e.created_at, e.id
        """
    }

    public func deleteEndpoint(_ id: UUID) async throws -> Bool {
        let audit = AuditTrail.rows(
            .webhookDeleted, from: "deleted", detail: ["webhook.id": id.uuidString.lowercased()])
        return try await translatingErrors {
            try await pool.transaction { connection in
                try connection.execute(Self.lockSubscriptions)
                return try connection.execute(
                    """
                    WITH deleted AS (
                             DELETE FROM webhook_endpoints WHERE id = \(id) RETURNING NULL::uuid AS account_id),
                         audited AS (\(fragment: audit))
                    SELECT count(*)::bigint AS deleted FROM deleted
                    """
                ).first?.decode(Int.self, "deleted") == 1
            }
        }
    }

    public func enableEndpoint(_ id: UUID) async throws -> Bool? {
        let audit = AuditTrail.rows(
            .webhookEnabled, from: "enabled", detail: ["webhook.id": id.uuidString.lowercased()])
        return try await translatingErrors {
            try await pool.transaction { connection -> Bool? in
                try connection.execute(Self.lockSubscriptions)
                // The endpoint's own `audit.webhook.enabled` goes to it too when it takes that type.
                try connection.execute(
                    """
                    SELECT refresh_webhook_subscriptions(event_types) FROM webhook_endpoints
                    WHERE id = \(id) AND disabled_at IS NOT NULL
                    """)
                let row = try connection.execute(
                    """
                    WITH enabled AS (
                             UPDATE webhook_endpoints
                             SET disabled_at = NULL, disabled_reason = NULL, failures = 0, failing_since = NULL,
                                 retry_at = NULL
                             WHERE id = \(id) AND disabled_at IS NOT NULL
                             RETURNING NULL::uuid AS account_id),
                         audited AS (\(fragment: audit))
                    SELECT (SELECT count(*) FROM enabled)::bigint AS enabled,
                           EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = \(id)) AS found
                    """
                ).first
                guard let row, try row.decode(Bool.self, "found") else { return nil }
                return try row.decode(Int.self, "enabled") == 1
            }
        }
    }

    public func lease(endpoints: Int, batch: Int, lease seconds: TimeInterval) async throws -> [WebhookBatch] {
        let lease = UUID()
        return try await translatingErrors {
            let rows = try await pool.query(
                """
                WITH due AS (
                         SELECT e.id FROM webhook_endpoints e
                         WHERE e.disabled_at IS NULL
                           AND (e.retry_at IS NULL OR e.retry_at <= now())
                           AND (e.leased_until IS NULL OR e.leased_until <= now())
                           AND EXISTS (SELECT 1 FROM webhook_deliveries d
                                       WHERE d.endpoint_id = e.id AND d.delivered_at IS NULL)
                         ORDER BY e.retry_at NULLS FIRST, e.id
                         LIMIT \(endpoints)
                         FOR UPDATE SKIP LOCKED),
                     leased AS (
                         UPDATE webhook_endpoints e
                         SET lease = \(lease), leased_until = now() + \(Int(seconds * 1000)) * interval '1 millisecond'
                         FROM due WHERE e.id = due.id
                         RETURNING e.id, e.url, e.secret, e.secret_key_id, e.failures)
                SELECT l.id AS endpoint_id, l.url, l.secret, l.secret_key_id, l.failures, d.id, d.event_type, d.payload,
                       d.attempts
                FROM leased l
                CROSS JOIN LATERAL (
                    SELECT id, event_type, payload, attempts FROM webhook_deliveries
                    WHERE endpoint_id = l.id AND delivered_at IS NULL
                    ORDER BY event_id LIMIT \(batch)) d
                ORDER BY l.id
                """)
            var batches: [WebhookBatch] = []
            for row in rows {
                let endpointID = try row.decode(UUID.self, "endpoint_id")
                let delivery = WebhookDelivery(
                    id: try row.decode(UUID.self, "id"), endpointID: endpointID,
                    eventType: try row.decode(String.self, "event_type"),
                    payload: Array(try row.decode(String.self, "payload").utf8),
                    attempts: try row.decode(Int.self, "attempts"))
                if batches.last?.endpointID == endpointID {
                    batches[batches.count - 1].deliveries.append(delivery)
                } else {
                    batches.append(
                        WebhookBatch(
                            endpointID: endpointID, url: try row.decode(String.self, "url"),
                            secret: try Self.decodeSecret(row),
                            lease: lease, failures: try row.decode(Int.self, "failures"), deliveries: [delivery]))
                }
            }
            return batches
        }
    }

    public func recordDelivered(_ delivery: WebhookDelivery, lease: UUID, extendingBy seconds: TimeInterval)
        async throws
    {
        try await translatingErrors {
            try await pool.query(
                """
                WITH delivered AS (
                         UPDATE webhook_deliveries
                         SET delivered_at = now(), attempts = attempts + 1, last_error = NULL
                         WHERE id = \(delivery.id) AND delivered_at IS NULL)
                UPDATE webhook_endpoints
                SET failures = 0, failing_since = NULL, retry_at = NULL,
                    leased_until = now() + \(Int(seconds * 1000)) * interval '1 millisecond'
                WHERE id = \(delivery.endpointID) AND lease = \(lease)
                """)
        }
    }

    public func recordFailure(
        _ delivery: WebhookDelivery, lease: UUID, error: String, retryAfter: TimeInterval, disableAfter: TimeInterval
    ) async throws -> Bool {
        let message = String(error.prefix(512))
        var context = AuditContext.current
        context.actor = .system
        let audit = AuditContext.$current.withValue(context) {
            AuditTrail.rows(
                .webhookDisabled, from: "disabled",
                detail: ["webhook.id": delivery.endpointID.uuidString.lowercased(), "error": message])
        }
        return try await translatingErrors {
            try await pool.query(
                """
                WITH attempted AS (
                         UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = \(message)
                         WHERE id = \(delivery.id) AND delivered_at IS NULL),
                     failing AS (
                         SELECT id, COALESCE(failing_since, now()) AS since,
                                COALESCE(failing_since, now())
                                    <= now() - \(Int(disableAfter * 1000)) * interval '1 millisecond' AS expired
                         FROM webhook_endpoints
                         WHERE id = \(delivery.endpointID) AND lease = \(lease) AND disabled_at IS NULL),
                     failed AS (
                         UPDATE webhook_endpoints e
                         SET failures = failures + 1, failing_since = f.since,
                             retry_at = now() + \(Int(retryAfter * 1000)) * interval '1 millisecond',
                             lease = NULL, leased_until = NULL,
                             disabled_at = CASE WHEN f.expired THEN now() END,
                             disabled_reason = CASE
                                 WHEN f.expired THEN 'failing since ' || f.since::text || ': ' || \(message) END
                         FROM failing f WHERE e.id = f.id
                         RETURNING e.disabled_at IS NOT NULL AS disabled),
                     disabled AS (SELECT NULL::uuid AS account_id FROM failed WHERE disabled),
                     audited AS (\(fragment: audit))
                SELECT COALESCE((SELECT disabled FROM failed), false) AS disabled
                """
            ).first?.decode(Bool.self, "disabled") ?? false
        }
    }

    public func release(endpoint: UUID, lease: UUID) async throws {
        try await translatingErrors {
            try await pool.query(
                """
                UPDATE webhook_endpoints SET lease = NULL, leased_until = NULL
                WHERE id = \(endpoint) AND lease = \(lease)
                """)
        }
    }

    public func secrets(notSealedUnder keyID: String, limit: Int) async throws
        -> [(endpointID: UUID, secret: StoredWebhookSecret)]
    {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT id, secret, secret_key_id FROM webhook_endpoints
                WHERE secret_key_id IS DISTINCT FROM \(keyID) ORDER BY id LIMIT \(limit)
                """
            ).map { (try $0.decode(UUID.self, "id"), try Self.decodeSecret($0)) }
        }
    }

    public func replaceSecret(of endpointID: UUID, stored current: StoredWebhookSecret, with sealed: SealedSecret)
        async throws -> Bool
    {
        let currentBytes: [UInt8]
        switch current {
        case .sealed(let box): currentBytes = box.box
        case .clear(let secret): currentBytes = secret.bytes
        }
        return try await translatingErrors {
            try await pool.query(
                """
                UPDATE webhook_endpoints SET secret = \(PostgresBytes(sealed.box)), secret_key_id = \(sealed.keyID)
                WHERE id = \(endpointID) AND secret = \(PostgresBytes(currentBytes))
                  AND secret_key_id IS NOT DISTINCT FROM \(current.keyID)
                """
            ).affectedRowCount == 1
        }
    }

    /// An endpoint's secret as stored: sealed when the row names its key, else in clear (an endpoint registered
    /// before secrets were sealed).
    static func decodeSecret(_ row: PostgresRow) throws -> StoredWebhookSecret {
        let bytes = try row.decode(PostgresBytes.self, "secret").bytes
        guard let keyID = try row.decode(String?.self, "secret_key_id") else {
            return .clear(WebhookSecret(bytes: bytes))
        }
        return .sealed(SealedSecret(keyID: keyID, box: bytes))
    }

    public func deleteDelivered(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.deliveriesTable, endColumns: ["delivered_at"])
            .delete(before: cutoff, limit: limit)
    }

    static func decode(_ row: PostgresRow) throws -> WebhookEndpoint {
        WebhookEndpoint(
            id: try row.decode(UUID.self, "id"), url: try row.decode(String.self, "url"),
            eventTypes: try row.decode(PostgresTextArray.self, "event_types").elements,
            description: try row.decode(String.self, "description"), createdAt: try row.decode(Date.self, "created_at"),
            createdBy: try row.decode(String.self, "created_by"), disabledAt: try row.decode(Date?.self, "disabled_at"),
            disabledReason: try row.decode(String?.self, "disabled_reason"),
            failingSince: try row.decode(Date?.self, "failing_since"), pending: try row.decode(Int.self, "pending"))
    }
}
