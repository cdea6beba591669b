import Domain
import Foundation
import Postgres

// Each consume is one atomic UPDATE … WHERE consumed_at IS NULL AND expires_at > now() RETURNING …: of any number
// of racing requests exactly one gets the row, and unknown, expired, consumed and foreign rows all look the same.

/// `passkey_registration_challenges`.
public struct PostgresRegistrationChallengeRepository: RegistrationChallengeRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The table's name, for the sweeper's logs and metrics.
    public static let table = "passkey_registration_challenges"

    private static let columns = "id, account_id, challenge, mode, created_at, expires_at, consumed_at"

    public func add(_ challenge: RegistrationChallenge) async throws {
        try await translatingErrors {
            try await pool.query(
                """
                INSERT INTO passkey_registration_challenges (\(unsafeSQL: Self.columns))
                VALUES (\(challenge.id.rawValue), \(challenge.accountID.rawValue), \(PostgresBytes(challenge.challenge)),
                        \(challenge.mode.rawValue), \(challenge.createdAt), \(challenge.expiresAt), \(challenge.consumedAt))
                """)
        }
    }

    public func consume(id: ChallengeID, accountID: AccountID) async throws -> Consumption<RegistrationChallenge> {
        try await translatingErrors {
            let rows = try await pool.query(
                """
                UPDATE passkey_registration_challenges SET consumed_at = now()
                WHERE id = \(id.rawValue) AND account_id = \(accountID.rawValue)
                  AND consumed_at IS NULL AND expires_at > now()
                RETURNING \(unsafeSQL: Self.columns)
                """)
            return try rows.first.map { .consumed(try Self.decode($0)) } ?? .unavailable
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.table, endColumns: ["expires_at", "consumed_at"])
            .delete(before: cutoff, limit: limit)
    }

    static func decode(_ row: PostgresRow) throws -> RegistrationChallenge {
        guard let mode = RegistrationMode(rawValue: try row.decode(String.self, "mode")) else {
            throw PostgresError(.decoding, "unknown registration mode")
        }
        return RegistrationChallenge(
            id: ChallengeID(try row.decode(UUID.self, "id")),
            accountID: AccountID(try row.decode(UUID.self, "account_id")),
            challenge: try row.decode(PostgresBytes.self, "challenge").bytes, mode: mode,
            createdAt: try row.decode(Date.self, "created_at"), expiresAt: try row.decode(Date.self, "expires_at"),
            consumedAt: try row.decode(Date?.self, "consumed_at"))
    }
}
