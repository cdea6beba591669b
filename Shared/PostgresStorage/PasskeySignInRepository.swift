import Domain
import Encoding
import Foundation
import Postgres

/// `passkey_credentials` with `authentication_sessions`: a verified sign-in's session and, when it changes the
/// passkey's security state, its use, in one statement. A single statement is its own transaction, so the session
/// and the recorded use commit together or not at all, in one round trip and one WAL flush.
public struct PostgresPasskeySignInRepository: PasskeySignInRepository {
    let pool: PostgresPool

    /// The most passkeys one `recordLastUse` statement updates.
    public static let lastUseBatchLimit = 1_000

    public func completeSignIn(_ record: PasskeySignInRecord) async throws -> String? {
        let session = record.session
        let credentialID = PostgresBytes(record.credentialID.bytes)
        let durable = record.usage != nil
        let usage = record.usage ?? PasskeyUsage(
            signCount: record.expectedSignCount, backedUp: record.expectedBackedUp, cloneWarning: false,
            usedAt: session.createdAt)
        // The passkey's row, only in the state the assertion was checked against: updated with the use when the use
        // must be durable, else read and left alone (no new row version, no WAL for it). The one-time filters on
        // `durable` let only one of the two run. The session is inserted from that row, so without it nothing is
        // written.
        return try await translatingErrors {
            try await pool.query(
                """
                WITH used AS (
                         UPDATE passkey_credentials
                         SET sign_count = \(Int64(usage.signCount)), backed_up = \(usage.backedUp),
                             clone_warning = clone_warning OR \(usage.cloneWarning), last_used_at = \(usage.usedAt)
                         WHERE \(durable) AND credential_id = \(credentialID)
                           AND account_id = \(session.accountID.rawValue)
                           AND sign_count = \(Int64(record.expectedSignCount)) AND backed_up = \(record.expectedBackedUp)
                         RETURNING account_id),
                     unchanged AS (
                         SELECT account_id FROM passkey_credentials
                         WHERE NOT \(durable) AND credential_id = \(credentialID)
                           AND account_id = \(session.accountID.rawValue)
                           AND sign_count = \(Int64(record.expectedSignCount)) AND backed_up = \(record.expectedBackedUp)),
                     added AS (
                         INSERT INTO authentication_sessions (\(unsafeSQL: PostgresAuthenticationSessionRepository.columns))
                         SELECT \(session.id.rawValue), passkey.account_id, \(PostgresBytes(session.tokenDigest)),
                                \(session.authenticationMethod.rawValue), \(session.createdAt), \(session.expiresAt),
                                \(session.revokedAt)
                         FROM (SELECT account_id FROM used UNION ALL SELECT account_id FROM unchanged) passkey
                         RETURNING account_id)
                SELECT a.display_name FROM added JOIN accounts a ON a.id = added.account_id
                """
            ).first.map { try $0.decode(String.self, "display_name") }
        }
    }

    public func recordLastUse(_ uses: [CredentialID: Date]) async throws -> Int {
        guard !uses.isEmpty else { return 0 }
        precondition(uses.count <= Self.lastUseBatchLimit, "recordLastUse takes at most \(Self.lastUseBatchLimit) passkeys")
        let ordered = uses.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        let identifiers = PostgresTextArray(ordered.map { Hex.encode($0.key.bytes) })
        let milliseconds = PostgresTextArray(ordered.map { String(Int64(($0.value.timeIntervalSince1970 * 1000).rounded(.down))) })
        return try await translatingErrors {
            // Rows are updated in credential-ID order, so two replicas flushing overlapping batches cannot deadlock.
            try await pool.query(
                """
                UPDATE passkey_credentials c SET last_used_at = u.used_at
                FROM (SELECT decode(id, 'hex') AS credential_id, to_timestamp(ms::bigint / 1000.0) AS used_at
                      FROM unnest(\(identifiers)::text[], \(milliseconds)::text[]) AS input(id, ms)) u
                WHERE c.credential_id = u.credential_id AND (c.last_used_at IS NULL OR c.last_used_at < u.used_at)
                """
            ).affectedRowCount
        }
    }
}
