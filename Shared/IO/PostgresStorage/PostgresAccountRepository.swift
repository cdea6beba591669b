import Domain
import Foundation
import Observability
import Postgres

/// `accounts`, and the account creations that span tables.
public struct PostgresAccountRepository: AccountRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func createPasswordAccount(_ account: Account, email: AccountEmail, password: PasswordCredential)
        async throws
    {
        try await createPasswordAccount(account, email: email, password: password, verification: nil)
    }

    public func createPasswordAccount(
        _ account: Account, email: AccountEmail, password: PasswordCredential, verification: EmailCodeDelivery?
    ) async throws {
        // The audit rows are built here, in the call's task, where `AuditContext.current` is set.
        let created = AuditTrail.row(.accountCreated, account: account.id, detail: ["method": "password"])
        let sent = verification.map { _ in AuditTrail.row(.emailVerificationSent, account: account.id) }
        try await translatingErrors {
            try await pool.transaction { connection in
                try insert(account, on: connection)
                try insert(email, on: connection)
                if let verification { try PostgresAccountRecoveryRepository.insert(verification, on: connection) }
                try connection.execute(
                    """
                    INSERT INTO password_credentials (account_id, password_hash, created_at, updated_at)
                    VALUES (\(password.accountID.rawValue), \(password.passwordHash), \(password.createdAt),
                            \(password.updatedAt))
                    """)
                try connection.execute(created)
                if let sent { try connection.execute(sent) }
            }
        }
    }

    /// The account, its first passkey and session are inserted by one transaction: until it commits, the new
    /// row is locked by its insert and no operator can disable it, so the session needs no other lock.
    public func createPasskeyAccount(
        _ account: Account, email: AccountEmail?, credential: PasskeyCredential,
        completing registrationID: AccountRegistrationID, verification: EmailCodeDelivery?,
        session: AuthenticationSession?
    ) async throws {
        let audit =
            [
                AuditTrail.row(.accountCreated, account: account.id, detail: ["method": "passkey"]),
                AuditTrail.row(
                    .passkeyRegistered, account: account.id,
                    detail: ["credential.id": PostgresPasskeyCredentialRepository.auditID(credential.credentialID)]),
            ] + (verification.map { _ in [AuditTrail.row(.emailVerificationSent, account: account.id)] } ?? [])
        try await translatingErrors {
            try await pool.transaction { connection in
                let completed = try connection.execute(
                    """
                    UPDATE passkey_account_registrations SET completed_at = now()
                    WHERE id = \(registrationID.rawValue) AND consumed_at IS NOT NULL AND completed_at IS NULL
                      AND prospective_account_id = \(account.id.rawValue)
                    """)
                guard completed.affectedRowCount == 1 else {
                    throw DomainError(.challengeUnavailable, "the registration is unknown or already completed")
                }
                try insert(account, on: connection)
                if let email { try insert(email, on: connection) }
                try PostgresPasskeyCredentialRepository.insert(credential, on: connection)
                if let verification { try PostgresAccountRecoveryRepository.insert(verification, on: connection) }
                if let session { try connection.execute(PostgresAuthenticationSessionRepository.insertion(session)) }
                for event in audit { try connection.execute(event) }
            }
        }
    }

    public func account(id: AccountID) async throws -> Account? {
        try await translatingErrors {
            try await pool.query(
                "SELECT id, display_name, user_handle, created_at FROM accounts WHERE id = \(id.rawValue)"
            ).first.map(Self.decodeAccount)
        }
    }

    public func enabledAccount(id: AccountID) async throws -> Account? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT id, display_name, user_handle, created_at FROM accounts
                WHERE id = \(id.rawValue) AND disabled_at IS NULL
                """
            ).first.map(Self.decodeAccount)
        }
    }

    public func rename(id: AccountID, to displayName: String) async throws -> Account? {
        try await translatingErrors {
            try await pool.query(
                """
                WITH renamed AS (
                         UPDATE accounts SET display_name = \(displayName) WHERE id = \(id.rawValue)
                         RETURNING id, id AS account_id, display_name, user_handle, created_at),
                     audited AS (\(fragment: AuditTrail.rows(.accountRenamed, from: "renamed")))
                SELECT id, display_name, user_handle, created_at FROM renamed
                """
            ).first.map(Self.decodeAccount)
        }
    }

    public func summary(id: AccountID) async throws -> AccountSummary? {
        try await translatingErrors {
            try await pool.withConnection { connection -> AccountSummary? in
                let rows = try connection.execute(
                    """
                    SELECT a.id, a.display_name, a.user_handle, a.created_at,
                           EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id) AS has_password,
                           (SELECT count(*) FROM passkey_credentials c WHERE c.account_id = a.id) AS passkey_count,
                           (SELECT COALESCE(array_agg(e.email ORDER BY e.created_at, e.email), '{}')
                              FROM account_emails e WHERE e.account_id = a.id) AS emails,
                           (SELECT COALESCE(array_agg(e.email ORDER BY e.created_at, e.email), '{}')
                              FROM account_emails e WHERE e.account_id = a.id AND e.verified_at IS NOT NULL)
                             AS verified_emails,
                           (SELECT count(*) FROM recovery_codes r WHERE r.account_id = a.id AND r.used_at IS NULL)
                             AS recovery_codes_remaining
                    FROM accounts a WHERE a.id = \(id.rawValue)
                    """)
                guard let row = rows.first else { return nil }
                return AccountSummary(
                    account: try Self.decodeAccount(row),
                    emails: try row.decode(PostgresTextArray.self, "emails").elements,
                    hasPassword: try row.decode(Bool.self, "has_password"),
                    passkeyCount: try row.decode(Int.self, "passkey_count"),
                    verifiedEmails: try row.decode(PostgresTextArray.self, "verified_emails").elements,
                    recoveryCodesRemaining: try row.decode(Int.self, "recovery_codes_remaining"))
            }
        }
    }

    static func decodeAccount(_ row: PostgresRow) throws -> Account {
        guard let handle = UserHandle(try row.decode(PostgresBytes.self, "user_handle").bytes) else {
            throw PostgresError(.decoding, "accounts.user_handle has an invalid length")
        }
        return Account(
            id: AccountID(try row.decode(UUID.self, "id")), displayName: try row.decode(String.self, "display_name"),
            userHandle: handle, createdAt: try row.decode(Date.self, "created_at"))
    }

    private func insert(_ account: Account, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO accounts (id, display_name, user_handle, created_at)
            VALUES (\(account.id.rawValue), \(account.displayName), \(PostgresBytes(account.userHandle.bytes)),
                    \(account.createdAt))
            """)
    }

    private func insert(_ email: AccountEmail, on connection: PostgresConnection) throws {
        try PostgresAccountEmailRepository.insert(email, on: connection)
    }
}
