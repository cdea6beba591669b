import AdminAccess
import Foundation
import Observability
import Postgres

/// `admin_tokens` (migration 0012): the admin API's credentials, kept as digests. Making and revoking a token are
/// audit events of their own, written in the same statement.
public struct PostgresAdminTokenRepository: Sendable {
    static let columns = "id, name, scopes, created_by, created_at, expires_at, revoked_at, last_used_at"
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// Stores `token` with the digest of its secret.
    public func create(_ token: AdminToken, digest: [UInt8]) async throws {
        let scopes = PostgresTextArray(token.scopes.map(\.rawValue))
        let audit = AuditTrail.rows(
            .adminTokenCreated, from: "created",
            detail: [
                "token.id": token.id, "token.name": token.name,
                "scopes": token.scopes.map(\.rawValue).joined(separator: ","),
            ])
        try await translatingErrors {
            try await pool.query(
                """
                WITH created AS (
                         INSERT INTO admin_tokens (id, digest, name, scopes, created_by, created_at, expires_at)
                         VALUES (\(token.id), \(PostgresBytes(digest)), \(token.name), \(scopes)::text[],
                                 \(token.createdBy), \(token.createdAt), \(token.expiresAt))
                         RETURNING NULL::uuid AS account_id),
                     audited AS (\(fragment: audit))
                SELECT count(*) FROM created
                """)
        }
    }

    /// Every token, newest first.
    public func list() async throws -> [AdminToken] {
        try await translatingErrors {
            try await pool.query(
                "SELECT \(unsafeSQL: Self.columns) FROM admin_tokens ORDER BY created_at DESC, id"
            ).map(Self.decode)
        }
    }

    /// Revokes the token `id`; false when there is none, or it was revoked already.
    public func revoke(id: String, at now: Date) async throws -> Bool {
        let audit = AuditTrail.rows(.adminTokenRevoked, from: "revoked", detail: ["token.id": id])
        return try await translatingErrors {
            try await pool.query(
                """
                WITH revoked AS (
                         UPDATE admin_tokens SET revoked_at = \(now)
                         WHERE id = \(id) AND revoked_at IS NULL
                         RETURNING NULL::uuid AS account_id),
                     audited AS (\(fragment: audit))
                SELECT count(*) AS revoked FROM revoked
                """
            ).first?.decode(Int.self, "revoked") == 1
        }
    }

    /// The token whose secret has this digest, if any (revoked and expired ones too: the caller decides).
    public func find(digest: [UInt8]) async throws -> AdminToken? {
        try await translatingErrors {
            try await pool.query(
                "SELECT \(unsafeSQL: Self.columns) FROM admin_tokens WHERE digest = \(PostgresBytes(digest))"
            ).first.map(Self.decode)
        }
    }

    static func decode(_ row: PostgresRow) throws -> AdminToken {
        AdminToken(
            id: try row.decode(String.self, "id"), name: try row.decode(String.self, "name"),
            scopes: try row.decode(PostgresTextArray.self, "scopes").elements.compactMap(AdminScope.init(rawValue:)),
            createdBy: try row.decode(String.self, "created_by"), createdAt: try row.decode(Date.self, "created_at"),
            expiresAt: try row.decode(Date?.self, "expires_at"), revokedAt: try row.decode(Date?.self, "revoked_at"),
            lastUsedAt: try row.decode(Date?.self, "last_used_at"))
    }
}
