import Domain
import Foundation
import Postgres

/// `passkey_account_registrations`.
public struct PostgresAccountRegistrationRepository: AccountRegistrationRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The table's name, for the sweeper's logs and metrics.
    public static let table = "passkey_account_registrations"

    private static let columns = """
        id, prospective_account_id, user_handle, email, display_name, challenge, created_at, expires_at, consumed_at,
        completed_at
        """

    public func add(_ registration: AccountRegistration) async throws {
        try await translatingErrors {
            try await pool.query(
                """
                INSERT INTO passkey_account_registrations (\(unsafeSQL: Self.columns))
                VALUES (\(registration.id.rawValue), \(registration.prospectiveAccountID.rawValue),
                        \(PostgresBytes(registration.userHandle.bytes)), \(registration.email), \(registration.displayName),
                        \(PostgresBytes(registration.challenge)), \(registration.createdAt), \(registration.expiresAt),
                        \(registration.consumedAt), \(registration.completedAt))
                """)
        }
    }

    public func consume(id: AccountRegistrationID) async throws -> Consumption<AccountRegistration> {
        try await translatingErrors {
            let rows = try await pool.query(
                """
                UPDATE passkey_account_registrations SET consumed_at = now()
                WHERE id = \(id.rawValue) AND consumed_at IS NULL AND completed_at IS NULL AND expires_at > now()
                RETURNING \(unsafeSQL: Self.columns)
                """)
            return try rows.first.map { .consumed(try Self.decode($0)) } ?? .unavailable
        }
    }

    public func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.table, endColumns: ["expires_at", "consumed_at"])
            .delete(before: cutoff, limit: limit)
    }

    static func decode(_ row: PostgresRow) throws -> AccountRegistration {
        guard let handle = UserHandle(try row.decode(PostgresBytes.self, "user_handle").bytes) else {
            throw PostgresError(.decoding, "passkey_account_registrations.user_handle has an invalid length")
        }
        return AccountRegistration(
            id: AccountRegistrationID(try row.decode(UUID.self, "id")),
            prospectiveAccountID: AccountID(try row.decode(UUID.self, "prospective_account_id")), userHandle: handle,
            email: try row.decode(String?.self, "email"), displayName: try row.decode(String?.self, "display_name"),
            challenge: try row.decode(PostgresBytes.self, "challenge").bytes,
            createdAt: try row.decode(Date.self, "created_at"), expiresAt: try row.decode(Date.self, "expires_at"),
            consumedAt: try row.decode(Date?.self, "consumed_at"),
            completedAt: try row.decode(Date?.self, "completed_at"))
    }
}
