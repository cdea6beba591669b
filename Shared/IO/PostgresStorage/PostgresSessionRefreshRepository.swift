import Domain
import Foundation
import Observability
import Postgres
import SessionIssuance

/// The refresh columns of `authentication_sessions` and `session_refresh_tokens` (migration 0015).
public struct PostgresSessionRefreshRepository: SessionRefreshRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func refreshState(sessionID: SessionID, generation: UInt32) async throws -> RefreshState? {
        let generation = Int32(clamping: generation)
        return try await translatingErrors {
            guard
                let row = try await pool.query(
                    """
                    SELECT \(unsafeSQL: PostgresAuthenticationSessionRepository.qualifiedColumns),
                           s.refresh_generation, s.refreshed_at, a.disabled_at IS NOT NULL AS disabled, a.display_name,
                           h.generation AS replaced_generation, h.digest AS replaced_digest, h.rotated_at AS replaced_at,
                           h.successor_sealed
                    FROM authentication_sessions s
                    JOIN accounts a ON a.id = s.account_id
                    LEFT JOIN session_refresh_tokens h ON h.session_id = s.id AND h.generation = \(generation)
                    WHERE s.id = \(sessionID.rawValue) AND s.refresh_digest IS NOT NULL
                    """
                ).first
            else { return nil }
            var replaced: ReplacedRefreshToken?
            if let replacedGeneration = try row.decode(Int32?.self, "replaced_generation") {
                replaced = ReplacedRefreshToken(
                    generation: UInt32(replacedGeneration),
                    digest: try row.decode(PostgresBytes.self, "replaced_digest").bytes,
                    rotatedAt: try row.decode(Date.self, "replaced_at"),
                    successorSealed: try row.decode(PostgresBytes.self, "successor_sealed").bytes)
            }
            return RefreshState(
                session: try PostgresAuthenticationSessionRepository.decode(row),
                generation: UInt32(try row.decode(Int32.self, "refresh_generation")),
                refreshedAt: try row.decode(Date.self, "refreshed_at"),
                accountDisabled: try row.decode(Bool.self, "disabled"),
                displayName: try row.decode(String.self, "display_name"), replaced: replaced)
        }
    }

    public func rotate(
        sessionID: SessionID, from generation: UInt32, replacedDigest: [UInt8], nextDigest: [UInt8],
        successorSealed: [UInt8], at now: Date
    ) async throws -> Bool {
        let generation = Int32(clamping: generation)
        // The generation is the compare-and-set: of concurrent refreshes with one token, one moves the session on
        // and the others find it moved, and read the successor this one stored.
        return try await translatingErrors {
            try await pool.query(
                """
                WITH rotated AS (
                         UPDATE authentication_sessions
                         SET refresh_generation = refresh_generation + 1, refresh_digest = \(PostgresBytes(nextDigest)),
                             refreshed_at = \(now)
                         WHERE id = \(sessionID.rawValue) AND refresh_generation = \(generation)
                           AND revoked_at IS NULL AND expires_at > \(now)
                         RETURNING id),
                     kept AS (
                         INSERT INTO session_refresh_tokens (session_id, generation, digest, rotated_at, successor_sealed)
                         SELECT id, \(generation), \(PostgresBytes(replacedDigest)), \(now), \(PostgresBytes(successorSealed))
                         FROM rotated)
                SELECT EXISTS (SELECT 1 FROM rotated) AS rotated
                """
            ).first?.decode(Bool.self, "rotated") ?? false
        }
    }

    public func endForReuse(sessionID: SessionID, generation: UInt32, at now: Date) async throws -> Bool {
        try await translatingErrors {
            try await pool.query(
                """
                WITH ended AS (
                         UPDATE authentication_sessions SET revoked_at = \(now)
                         WHERE id = \(sessionID.rawValue) AND revoked_at IS NULL
                         RETURNING account_id),
                     audited AS (\(fragment: AuditTrail.rows(.sessionRefreshReused, from: "ended", detail: ["session.id": sessionID.description, "generation": String(generation)])))
                SELECT EXISTS (SELECT 1 FROM ended) AS ended
                """
            ).first?.decode(Bool.self, "ended") ?? false
        }
    }
}
