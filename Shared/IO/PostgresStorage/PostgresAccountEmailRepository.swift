import Domain
import Foundation
import Observability
import Postgres

/// `account_emails`.
public struct PostgresAccountEmailRepository: AccountEmailRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func add(_ email: AccountEmail) async throws {
        try await translatingErrors {
            try await pool.withConnection { try Self.insert(email, on: $0) }
        }
    }

    public func emails(of accountID: AccountID) async throws -> [AccountEmail] {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT id, account_id, email, normalized_email, created_at FROM account_emails
                WHERE account_id = \(accountID.rawValue) ORDER BY created_at, email
                """
            ).map(Self.decode)
        }
    }

    public func find(normalizedEmail: String) async throws -> AccountEmail? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT id, account_id, email, normalized_email, created_at FROM account_emails
                WHERE normalized_email = \(normalizedEmail)
                """
            ).first.map(Self.decode)
        }
    }

    static func insert(_ email: AccountEmail, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO account_emails (id, account_id, email, normalized_email, created_at)
            VALUES (\(email.id), \(email.accountID.rawValue), \(email.email), \(email.normalizedEmail),
                    \(email.createdAt))
            """)
    }

    static func decode(_ row: PostgresRow) throws -> AccountEmail {
        AccountEmail(
            id: try row.decode(UUID.self, "id"), accountID: AccountID(try row.decode(UUID.self, "account_id")),
            email: try row.decode(String.self, "email"),
            normalizedEmail: try row.decode(String.self, "normalized_email"),
            createdAt: try row.decode(Date.self, "created_at"))
    }
}
