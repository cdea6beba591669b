import Domain
import Foundation
import Observability
import Postgres

/// `password_credentials`.
public struct PostgresPasswordCredentialRepository: PasswordCredentialRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func upsert(_ credential: PasswordCredential) async throws {
        try await translatingErrors {
            try await pool.query(
                """
                INSERT INTO password_credentials (account_id, password_hash, created_at, updated_at)
                VALUES (\(credential.accountID.rawValue), \(credential.passwordHash), \(credential.createdAt),
                        \(credential.updatedAt))
                ON CONFLICT (account_id) DO UPDATE
                SET password_hash = EXCLUDED.password_hash, updated_at = EXCLUDED.updated_at
                """)
        }
    }

    public func credential(of accountID: AccountID) async throws -> PasswordCredential? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT account_id, password_hash, created_at, updated_at FROM password_credentials
                WHERE account_id = \(accountID.rawValue)
                """
            ).first.map { row in
                PasswordCredential(
                    accountID: AccountID(try row.decode(UUID.self, "account_id")),
                    passwordHash: try row.decode(String.self, "password_hash"),
                    createdAt: try row.decode(Date.self, "created_at"),
                    updatedAt: try row.decode(Date.self, "updated_at"))
            }
        }
    }

    public func signInRecord(normalizedEmail: String) async throws -> PasswordSignInRecord? {
        // The account's failed password guesses come with it, so that a sign-in that succeeds reads them for free.
        try await translatingErrors {
            try await pool.query(
                """
                SELECT a.id, a.display_name, p.password_hash, a.disabled_at IS NOT NULL AS disabled,
                       \(unsafeSQL: FailedGuessStatements.columns)
                FROM account_emails e
                JOIN accounts a ON a.id = e.account_id
                JOIN password_credentials p ON p.account_id = a.id
                \(unsafeSQL: FailedGuessStatements.join(accountColumn: "a.id", kind: .password))
                WHERE e.normalized_email = \(normalizedEmail)
                """
            ).first.map(Self.decodeSignInRecord)
        }
    }

    /// A row of `accounts` joined with its password and failed password guesses.
    static func decodeSignInRecord(_ row: PostgresRow) throws -> PasswordSignInRecord {
        PasswordSignInRecord(
            accountID: AccountID(try row.decode(UUID.self, "id")),
            displayName: try row.decode(String.self, "display_name"),
            passwordHash: try row.decode(String.self, "password_hash"),
            disabled: try row.decode(Bool.self, "disabled"),
            failedGuesses: try FailedGuessStatements.decode(row))
    }

    public func completeSignIn(
        _ session: AuthenticationSession, verifiedHash: String, replacement: String?, at now: Date
    ) async throws -> Bool {
        // One statement, so one transaction: the row lock re-reads the latest hash (a password changed or removed
        // since it was verified stops the sign-in), the replacement hash and the session commit together or not at all.
        // The account row is share-locked until the commit: a disable waits for the session to commit and then
        // revokes it, or commits first and this join finds the account disabled.
        let rows = try await translatingErrors {
            try await pool.query(
                """
                WITH verified AS (
                         SELECT p.account_id FROM password_credentials p
                         JOIN accounts a ON a.id = p.account_id AND a.disabled_at IS NULL
                         WHERE p.account_id = \(session.accountID.rawValue) AND p.password_hash = \(verifiedHash)
                         FOR UPDATE OF p FOR SHARE OF a),
                     rehashed AS (
                         UPDATE password_credentials p SET password_hash = \(replacement ?? verifiedHash), updated_at = \(now)
                         FROM verified v
                         WHERE \(replacement != nil) AND p.account_id = v.account_id
                         RETURNING p.account_id),
                     added AS (\(fragment: PostgresAuthenticationSessionRepository.insertion(session, accountFrom: "verified"))),
                     signed_in AS (\(fragment: AuditTrail.rows(
                         .signInSucceeded, from: "added", detail: ["method": "password", "session.id": session.id.description]))),
                     rehash_audited AS (\(fragment: AuditTrail.rows(.passwordRehashed, from: "rehashed")))
                SELECT EXISTS (SELECT 1 FROM added) AS signed_in
                """)
        }
        return try rows.first?.decode(Bool.self, "signed_in") ?? false
    }

    /// Deletes the account's password inside a transaction (a completed recovery, an operator's reset), with its
    /// audit event when there was one (the caller's change sends the notification); whether there was.
    /// `audit` is the `.passwordRemoved` row, made before the transaction.
    @discardableResult
    static func voidPassword(of accountID: AccountID, audit: PostgresQuery, on connection: PostgresConnection) throws
        -> Bool
    {
        let deleted = try connection.execute(
            "DELETE FROM password_credentials WHERE account_id = \(accountID.rawValue)"
        ).affectedRowCount
        guard deleted > 0 else { return false }
        try connection.execute(audit)
        return true
    }

    public func removePassword(of accountID: AccountID) async throws {
        let audit = AuditTrail.row(.passwordRemoved, account: accountID)
        let notice = SecurityNotices().rows(.passwordRemoved, account: accountID)
        try await translatingErrors {
            try await pool.transaction { connection in
                // The same account lock as passkey removal: a password and the last passkey removed concurrently
                // cannot each see the other as the remaining way to sign in.
                let locked = try connection.execute(
                    "SELECT id FROM accounts WHERE id = \(accountID.rawValue) FOR UPDATE")
                guard !locked.isEmpty else { throw DomainError(.notFound, "this account has no password") }
                // A passkey the account still has has signed in when it recorded a use, or when a live session it
                // signed in exists (its use may not be flushed yet). A revoked or expired session, or one of a
                // passkey since removed, says nothing about the passkeys there are now.
                let state = try connection.execute(
                    """
                    SELECT EXISTS (SELECT 1 FROM password_credentials
                                   WHERE account_id = \(accountID.rawValue)) AS has_password,
                           (SELECT count(*) FROM passkey_credentials
                            WHERE account_id = \(accountID.rawValue)) AS passkey_count,
                           EXISTS (SELECT 1 FROM passkey_credentials
                                   WHERE account_id = \(accountID.rawValue) AND last_used_at IS NOT NULL)
                             OR EXISTS (SELECT 1 FROM authentication_sessions s
                                        JOIN passkey_credentials c
                                          ON c.id = s.passkey_id AND c.account_id = s.account_id
                                        WHERE s.account_id = \(accountID.rawValue)
                                          AND s.authentication_method = 'passkey'
                                          AND s.revoked_at IS NULL AND s.expires_at > now()) AS passkey_signed_in
                    """)
                guard let row = state.first else { throw DomainError(.notFound, "this account has no password") }
                try SignInMethods(
                    hasPassword: try row.decode(Bool.self, "has_password"),
                    passkeyCount: try row.decode(Int.self, "passkey_count"),
                    passkeySignedIn: try row.decode(Bool.self, "passkey_signed_in")
                ).checkPasswordRemoval()
                try connection.execute("DELETE FROM password_credentials WHERE account_id = \(accountID.rawValue)")
                try connection.execute(audit)
                try connection.execute(notice)
            }
        }
    }
}
