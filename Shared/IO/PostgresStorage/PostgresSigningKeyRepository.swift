import AccessTokens
import Domain
import Foundation
import JSON
import Observability
import Postgres
import SessionIssuance

/// `session_signing_keys` (migration 0015).
public struct PostgresSigningKeyRepository: SigningKeyRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func keys(publishedSince: Date) async throws -> [StoredSigningKey] {
        try await translatingErrors { try await pool.query(Self.published(since: publishedSince)).map(Self.decode) }
    }

    /// Every key not withdrawn before `since`, oldest first.
    static func published(since: Date) -> PostgresQuery {
        """
        SELECT key_id, public_jwk::text AS jwk, private_key_sealed, created_at, activates_at, retired_at
        FROM session_signing_keys
        WHERE retired_at IS NULL OR retired_at > \(since)
        ORDER BY created_at, key_id
        LIMIT 64
        """
    }

    static func decode(_ row: PostgresRow) throws -> StoredSigningKey {
        guard let document = try? JSONReader.parse(Array(try row.decode(String.self, "jwk").utf8)),
            let jwk = JSONWebKey(json: document), jwk.keyID == (try row.decode(String.self, "key_id"))
        else { throw PostgresError(.decoding, "a stored signing key's public_jwk is not a usable JWK") }
        return StoredSigningKey(
            publicKey: jwk, sealedPrivateKey: try row.decode(PostgresBytes.self, "private_key_sealed").bytes,
            createdAt: try row.decode(Date.self, "created_at"), activatesAt: try row.decode(Date.self, "activates_at"),
            retiredAt: try row.decode(Date?.self, "retired_at"))
    }

    public func add(_ key: StoredSigningKey, onlyIfNone: Bool) async throws -> Bool {
        let condition: PostgresQuery =
            onlyIfNone ? "WHERE NOT EXISTS (SELECT 1 FROM session_signing_keys WHERE retired_at IS NULL)" : ""
        return try await translatingErrors {
            try await pool.transaction { connection in
                // Replicas that start together each find no key: the lock makes one of them make it.
                _ = try connection.execute("SELECT pg_advisory_xact_lock(hashtext('session_signing_keys'))")
                let stored =
                    try connection.execute(
                        """
                        WITH stored AS (
                                 INSERT INTO session_signing_keys
                                     (key_id, algorithm, public_jwk, private_key_sealed, created_at, activates_at)
                                 SELECT \(key.keyID), \(key.publicKey.algorithm.rawValue), \(JSONWriter.string(key.publicKey.json))::jsonb,
                                        \(PostgresBytes(key.sealedPrivateKey)), \(key.createdAt), \(key.activatesAt)
                                 \(fragment: condition)
                                 RETURNING key_id, NULL::uuid AS account_id),
                             audited AS (\(fragment: AuditTrail.rows(.signingKeyCreated, from: "stored", detail: ["key.id": key.keyID, "algorithm": key.publicKey.algorithm.rawValue])))
                        SELECT count(*) AS stored FROM stored
                        """
                    ).first?.decode(Int.self, "stored") ?? 0
                return stored == 1
            }
        }
    }

    public func retire(
        keyID: String, at now: Date, publishedSince: Date, allowed: @escaping @Sendable ([StoredSigningKey]) -> Bool
    ) async throws -> SigningKeyRetirement {
        try await translatingErrors {
            try await pool.transaction { connection in
                // Under the lock that `add` takes: two retirements at once cannot each find the other's key still
                // signing and leave none.
                _ = try connection.execute("SELECT pg_advisory_xact_lock(hashtext('session_signing_keys'))")
                let keys = try connection.execute(Self.published(since: publishedSince)).map(Self.decode)
                guard let key = keys.first(where: { $0.keyID == keyID && $0.retiredAt == nil }) else {
                    return .notFound
                }
                guard allowed(keys) else { return .refused }
                _ = try connection.execute(
                    """
                    WITH retired AS (
                             UPDATE session_signing_keys SET retired_at = \(now)
                             WHERE key_id = \(keyID) AND retired_at IS NULL
                             RETURNING key_id, NULL::uuid AS account_id),
                         audited AS (\(fragment: AuditTrail.rows(.signingKeyRetired, from: "retired", detail: ["key.id": keyID])))
                    SELECT count(*) AS retired FROM retired
                    """)
                return .retired(
                    StoredSigningKey(
                        publicKey: key.publicKey, sealedPrivateKey: key.sealedPrivateKey, createdAt: key.createdAt,
                        activatesAt: key.activatesAt, retiredAt: now))
            }
        }
    }
}
