import AdminAccess
import Domain
import Foundation
import Postgres

/// Reads and sweeps the stored audit trail (`audit_events`); the events themselves are written by the repositories
/// whose changes they record (`AuditTrail`).
public struct PostgresAuditEventRepository: Sendable {
    public static let table = AuditTrail.table
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// A page of events, newest first.
    public func events(_ query: AuditEventQuery) async throws -> [StoredAuditEvent] {
        let types = PostgresTextArray(query.types)
        return try await translatingErrors {
            try await pool.query(
                """
                SELECT id, occurred_at, type, account_id, actor, actor_id, request_id, client_address,
                       ARRAY(SELECT key FROM jsonb_each_text(detail) ORDER BY key)::text[] AS detail_keys,
                       ARRAY(SELECT value FROM jsonb_each_text(detail) ORDER BY key)::text[] AS detail_values
                FROM audit_events
                WHERE (\(query.accountID?.rawValue)::uuid IS NULL OR account_id = \(query.accountID?.rawValue))
                  AND (cardinality(\(types)::text[]) = 0 OR type = ANY (\(types)::text[]))
                  AND (\(query.since)::timestamptz IS NULL OR occurred_at >= \(query.since))
                  AND (\(query.until)::timestamptz IS NULL OR occurred_at < \(query.until))
                  AND (\(query.before)::bigint IS NULL OR id < \(query.before))
                ORDER BY id DESC
                LIMIT \(query.limit)
                """
            ).map(Self.decode)
        }
    }

    /// Deletes a batch of events that occurred before `cutoff` (the retention sweep).
    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.table, endColumns: ["occurred_at"]).delete(
            before: cutoff, limit: limit)
    }

    static func decode(_ row: PostgresRow) throws -> StoredAuditEvent {
        let keys = try row.decode(PostgresTextArray.self, "detail_keys").elements
        let values = try row.decode(PostgresTextArray.self, "detail_values").elements
        return StoredAuditEvent(
            id: try row.decode(Int64.self, "id"),
            occurredAt: try row.decode(Date.self, "occurred_at"),
            type: try row.decode(String.self, "type"),
            accountID: try row.decode(UUID?.self, "account_id").map(AccountID.init),
            actor: try row.decode(String.self, "actor"),
            actorID: try row.decode(String?.self, "actor_id"),
            requestID: try row.decode(String?.self, "request_id"),
            clientAddress: try row.decode(String?.self, "client_address"),
            detail: Dictionary(zip(keys, values), uniquingKeysWith: { first, _ in first }))
    }
}
