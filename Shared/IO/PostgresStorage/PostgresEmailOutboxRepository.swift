import Domain
import Foundation
import Postgres

/// `email_outbox`: messages queued by the transactions that decided them, delivered by session-service's worker.
public struct PostgresEmailOutboxRepository: EmailOutboxRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The table's name, for the sweeper's logs and metrics.
    public static let table = "email_outbox"

    public func deliverNext(_ deliver: @escaping @Sendable (OutboxMessage) -> DeliveryOutcome) async throws -> Bool {
        try await translatingErrors {
            // The row stays locked while the relay is talked to: another replica skips it, and a crash rolls the
            // transaction back, so the message is pending again rather than lost or marked sent unsent.
            try await pool.transaction { connection -> Bool in
                let rows = try connection.execute(
                    """
                    SELECT id, recipient, template, code, sealed_code, code_key_id, expires_at, created_at, attempts,
                           notice::text AS notice, expires_at <= now() AS expired
                    FROM email_outbox
                    WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
                    ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED
                    """)
                guard let row = rows.first else { return false }
                let id = try row.decode(UUID.self, "id")
                guard let template = MailTemplate(rawValue: try row.decode(String.self, "template")) else {
                    throw PostgresError(.decoding, "unknown email_outbox.template")
                }
                let message = OutboxMessage(
                    id: id, recipient: try row.decode(String.self, "recipient"), template: template,
                    code: try Self.decodeCode(row), expiresAt: try row.decode(Date.self, "expires_at"),
                    createdAt: try row.decode(Date.self, "created_at"), attempts: try row.decode(Int.self, "attempts"),
                    notice: SecurityNotices.decode(try row.decode(String?.self, "notice")))
                let outcome: DeliveryOutcome =
                    try row.decode(Bool.self, "expired")
                    ? .giveUp(
                        error: template.isNotice ? "not delivered within a day" : "the code expired before it was sent")
                    : deliver(message)
                switch outcome {
                case .delivered:
                    try connection.execute(
                        """
                        UPDATE email_outbox
                        SET sent_at = now(), code = NULL, sealed_code = NULL, code_key_id = NULL,
                            attempts = attempts + 1, last_error = NULL
                        WHERE id = \(id)
                        """)
                case .retry(let delay, let error):
                    try connection.execute(
                        """
                        UPDATE email_outbox SET attempts = attempts + 1, last_error = \(String(error.prefix(512))),
                               next_attempt_at = \(Date().addingTimeInterval(delay))
                        WHERE id = \(id)
                        """)
                case .giveUp(let error):
                    try connection.execute(
                        """
                        UPDATE email_outbox
                        SET failed_at = now(), code = NULL, sealed_code = NULL, code_key_id = NULL,
                            attempts = attempts + 1, last_error = \(String(error.prefix(512)))
                        WHERE id = \(id)
                        """)
                }
                return true
            }
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.table, endColumns: ["sent_at", "failed_at"])
            .delete(before: cutoff, limit: limit)
    }

    public func backlog() async throws -> OutboxBacklog {
        try await translatingErrors {
            // email_outbox_due_idx covers exactly these rows.
            let rows = try await pool.query(
                """
                SELECT count(*)::bigint AS pending,
                       COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)) * 1000, 0)::bigint AS oldest_ms
                FROM email_outbox WHERE sent_at IS NULL AND failed_at IS NULL
                """)
            guard let row = rows.first else { return OutboxBacklog(pending: 0, oldestPendingSeconds: 0) }
            return OutboxBacklog(
                pending: try row.decode(Int.self, "pending"),
                oldestPendingSeconds: Double(max(0, try row.decode(Int.self, "oldest_ms"))) / 1000)
        }
    }

    /// Queues `message`. Its code, if any, must be sealed: a code in clear is never written.
    static func enqueue(_ message: OutboxMessage, on connection: PostgresConnection) throws {
        var keyID: String?
        var sealed: PostgresBytes?
        switch message.code {
        case nil: break
        case .sealed(let key, let box):
            keyID = key
            sealed = PostgresBytes(box)
        case .clear:
            // Only rows written before codes were sealed hold one in clear; nothing writes one any more.
            throw DomainError(.unavailable, "a one-time code is stored sealed, never in clear")
        }
        try connection.execute(
            """
            INSERT INTO email_outbox (id, recipient, template, sealed_code, code_key_id, expires_at, created_at)
            VALUES (\(message.id), \(message.recipient), \(message.template.rawValue), \(sealed), \(keyID),
                    \(message.expiresAt), \(message.createdAt))
            """)
    }

    /// The code of an outbox row: sealed, or in clear in a row queued before codes were sealed.
    static func decodeCode(_ row: PostgresRow) throws -> OutboxCode? {
        if let box = try row.decode(PostgresBytes?.self, "sealed_code"),
            let keyID = try row.decode(String?.self, "code_key_id")
        {
            return .sealed(keyID: keyID, box: box.bytes)
        }
        return try row.decode(String?.self, "code").map(OutboxCode.clear)
    }
}
