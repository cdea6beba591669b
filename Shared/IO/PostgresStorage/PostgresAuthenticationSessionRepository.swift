import Domain
import Foundation
import Observability
import Postgres

/// `authentication_sessions`.
public struct PostgresAuthenticationSessionRepository: AuthenticationSessionRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The table's name, for the sweeper's logs and metrics.
    public static let table = "authentication_sessions"

    /// The columns a new session is inserted with.
    static let insertedColumns =
        "id, account_id, token_digest, authentication_method, created_at, expires_at, revoked_at, refresh_digest, method_references, passkey_id"
    /// The columns ``decode(_:)`` reads: the inserted ones and the time of its last reauthentication.
    static let columns = insertedColumns + ", authenticated_at"
    /// ``columns`` of the table aliased `s`, for statements that join it.
    static let qualifiedColumns = columns.split(separator: ",").map { "s." + $0.trimmingCharacters(in: .whitespaces) }
        .joined(separator: ", ")

    public func add(_ session: AuthenticationSession) async throws {
        let insertion = Self.insertion(session)
        try await translatingErrors { try await pool.query(insertion) }
    }

    public func find(id: SessionID) async throws -> AuthenticationSession? {
        try await translatingErrors {
            try await pool.query(
                "SELECT \(unsafeSQL: Self.columns) FROM authentication_sessions WHERE id = \(id.rawValue)"
            ).first.map(Self.decode)
        }
    }

    public func liveSessions(of accountID: AccountID, at now: Date) async throws -> [AuthenticationSession] {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT \(unsafeSQL: Self.columns) FROM authentication_sessions
                WHERE account_id = \(accountID.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                ORDER BY created_at DESC, id
                """
            ).map(Self.decode)
        }
    }

    public func revoke(id: SessionID, of accountID: AccountID, at now: Date) async throws -> Bool {
        try await translatingErrors {
            try await pool.query(
                """
                WITH revoked AS (
                         UPDATE authentication_sessions SET revoked_at = \(now)
                         WHERE id = \(id.rawValue) AND account_id = \(accountID.rawValue) AND revoked_at IS NULL
                           AND expires_at > \(now)
                         RETURNING account_id),
                     audited AS (\(fragment: AuditTrail.rows(.sessionRevoked, from: "revoked", detail: ["session.id": id.description])))
                SELECT EXISTS (SELECT 1 FROM revoked) AS revoked
                """
            ).first?.decode(Bool.self, "revoked") ?? false
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.table, endColumns: ["expires_at", "revoked_at"])
            .delete(before: cutoff, limit: limit)
    }

    static func decode(_ row: PostgresRow) throws -> AuthenticationSession {
        guard let method = AuthenticationMethod(rawValue: try row.decode(String.self, "authentication_method")) else {
            throw PostgresError(.decoding, "unknown authentication_method")
        }
        return AuthenticationSession(
            id: SessionID(try row.decode(UUID.self, "id")),
            accountID: AccountID(try row.decode(UUID.self, "account_id")),
            tokenDigest: try row.decode(PostgresBytes.self, "token_digest").bytes, authenticationMethod: method,
            createdAt: try row.decode(Date.self, "created_at"), expiresAt: try row.decode(Date.self, "expires_at"),
            revokedAt: try row.decode(Date?.self, "revoked_at"),
            refreshDigest: try row.decode(PostgresBytes?.self, "refresh_digest")?.bytes,
            methodReferences: try row.decode(PostgresTextArray?.self, "method_references")?.elements,
            passkeyID: try row.decode(UUID?.self, "passkey_id"),
            reauthenticatedAt: try row.decode(Date?.self, "authenticated_at"))
    }
}
