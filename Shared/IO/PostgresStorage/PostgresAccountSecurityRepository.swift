import Domain
import Foundation
import Observability
import Postgres

/// `password_credentials` and `authentication_sessions` changed together: the account security changes of
/// session-service (``AccountSecurityRepository``). Each transaction locks the account row first, as every path
/// that issues a session or removes a way to sign in does, so that a disable, a passkey removal or another change
/// of the same account waits for it.
public struct PostgresAccountSecurityRepository: AccountSecurityRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// A transaction whose statements are built with the call's `AuditContext` (the closure runs on a database
    /// thread, where the call's task-local context is not otherwise readable): its audit rows and notices name the
    /// request and client address.
    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws
        -> T
    {
        let context = AuditContext.current
        return try await translatingErrors {
            try await pool.transaction { connection in
                try AuditContext.$current.withValue(context) { try body(connection) }
            }
        }
    }

    public func setPassword(_ passwordHash: String, of accountID: AccountID, keeping sessionID: SessionID, at now: Date)
        async throws -> PasswordChange?
    {
        try await transaction { connection -> PasswordChange? in
            guard try Self.lockEnabledAccount(accountID, on: connection) != nil else { return nil }
            let hadPassword = try Self.storePassword(passwordHash, of: accountID, at: now, on: connection)
            let revoked = try Self.revokeSessions(of: accountID, except: sessionID, at: now, on: connection)
            try connection.execute(AuditTrail.row(hadPassword ? .passwordChanged : .passwordSet, account: accountID))
            try connection.execute(
                SecurityNotices().rows(hadPassword ? .passwordChanged : .passwordSet, account: accountID))
            return PasswordChange(hadPassword: hadPassword, sessionsRevoked: revoked)
        }
    }

    public func finishRecovery(
        withPassword passwordHash: String, endingRecoverySession recoverySessionID: SessionID,
        session: AuthenticationSession
    ) async throws -> String? {
        let accountID = session.accountID
        return try await transaction { connection -> String? in
            guard let displayName = try Self.lockEnabledAccount(accountID, on: connection, share: true) else {
                return nil
            }
            let ended = try connection.execute(
                """
                UPDATE authentication_sessions SET revoked_at = now()
                WHERE id = \(recoverySessionID.rawValue) AND account_id = \(accountID.rawValue)
                  AND authentication_method = 'recovery' AND revoked_at IS NULL AND expires_at > now()
                """)
            guard ended.affectedRowCount == 1 else { return nil }
            let hadPassword = try Self.storePassword(passwordHash, of: accountID, at: session.createdAt, on: connection)
            try connection.execute(PostgresAuthenticationSessionRepository.insertion(session))
            // The password's own event is stored; the recovery's notice tells the owner.
            try connection.execute(AuditTrail.row(hadPassword ? .passwordChanged : .passwordSet, account: accountID))
            try connection.execute(
                AuditTrail.row(
                    .recoveryCompleted, account: accountID,
                    detail: ["session.id": session.id.description, "method": "password"]))
            try connection.execute(SecurityNotices().rows(.recoveryCompleted, account: accountID))
            return displayName
        }
    }

    public func passwordRecord(of accountID: AccountID) async throws -> PasswordSignInRecord? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT a.id, a.display_name, p.password_hash, a.disabled_at IS NOT NULL AS disabled,
                       \(unsafeSQL: FailedGuessStatements.columns)
                FROM accounts a
                JOIN password_credentials p ON p.account_id = a.id
                \(unsafeSQL: FailedGuessStatements.join(accountColumn: "a.id", kind: .password))
                WHERE a.id = \(accountID.rawValue)
                """
            ).first.map(PostgresPasswordCredentialRepository.decodeSignInRecord)
        }
    }

    public func reauthenticate(_ sessionID: SessionID, of accountID: AccountID, verifiedHash: String, at now: Date)
        async throws -> Bool
    {
        try await translatingErrors {
            try await pool.query(
                """
                WITH verified AS (
                         SELECT p.account_id FROM password_credentials p
                         JOIN accounts a ON a.id = p.account_id AND a.disabled_at IS NULL
                         WHERE p.account_id = \(accountID.rawValue) AND p.password_hash = \(verifiedHash)
                         FOR SHARE OF p, a),
                     \(fragment: Self.reauthentication(sessionID, from: "verified", method: "password", at: now))
                SELECT EXISTS (SELECT 1 FROM reauthenticated) AS reauthenticated
                """
            ).first?.decode(Bool.self, "reauthenticated") ?? false
        }
    }

    /// `reauthenticated AS (UPDATE …), reauthentication_audited AS (…)`: the CTEs that move the live session
    /// `sessionID` of the account `source` names (a CTE with an `account_id` column) to a sign-in at `now`, and
    /// store the event. The passkey reauthentication embeds it in its sign-in statement.
    static func reauthentication(_ sessionID: SessionID, from source: String, method: String, at now: Date)
        -> PostgresQuery
    {
        """
        reauthenticated AS (
            UPDATE authentication_sessions s SET authenticated_at = \(now)
            FROM \(unsafeSQL: source)
            WHERE s.id = \(sessionID.rawValue) AND s.account_id = \(unsafeSQL: source).account_id
              AND s.revoked_at IS NULL AND s.expires_at > \(now) AND s.authentication_method <> 'recovery'
            RETURNING s.account_id),
        reauthentication_audited AS (\(fragment: AuditTrail.rows(
            .sessionReauthenticated, from: "reauthenticated",
            detail: ["session.id": sessionID.description, "method": method])))
        """
    }

    public func resetPassword(of accountID: AccountID, at now: Date) async throws -> PasswordChange? {
        try await transaction { connection -> PasswordChange? in
            let locked = try connection.execute("SELECT 1 FROM accounts WHERE id = \(accountID.rawValue) FOR UPDATE")
            guard !locked.isEmpty else { return nil }
            let voided = try PostgresPasswordCredentialRepository.voidPassword(
                of: accountID,
                audit: AuditTrail.row(.passwordRemoved, account: accountID, detail: ["reason": "operator_reset"]),
                on: connection)
            let revoked = try Self.revokeSessions(of: accountID, except: nil, at: now, on: connection)
            try connection.execute(
                AuditTrail.row(
                    .passwordReset, account: accountID,
                    detail: ["password_voided": String(voided), "sessions_revoked": String(revoked)]))
            try connection.execute(SecurityNotices().rows(.passwordReset, account: accountID))
            return PasswordChange(hadPassword: voided, sessionsRevoked: revoked)
        }
    }

    /// Locks the account row (`FOR UPDATE`, or `FOR SHARE` for a change that issues a session) and returns its
    /// display name; nil when there is no such account. `accountDisabled` when an operator disabled it.
    static func lockEnabledAccount(_ accountID: AccountID, on connection: PostgresConnection, share: Bool = false)
        throws -> String?
    {
        let rows = try connection.execute(
            """
            SELECT display_name, disabled_at IS NOT NULL AS disabled FROM accounts
            WHERE id = \(accountID.rawValue) \(unsafeSQL: share ? "FOR SHARE" : "FOR UPDATE")
            """)
        guard let row = rows.first else { return nil }
        guard try !row.decode(Bool.self, "disabled") else {
            throw DomainError(.accountDisabled, "this account is disabled")
        }
        return try row.decode(String.self, "display_name")
    }

    /// Stores the account's password hash; whether it had one before.
    static func storePassword(
        _ passwordHash: String, of accountID: AccountID, at now: Date, on connection: PostgresConnection
    )
        throws -> Bool
    {
        let rows = try connection.execute(
            """
            INSERT INTO password_credentials AS p (account_id, password_hash, created_at, updated_at)
            VALUES (\(accountID.rawValue), \(passwordHash), \(now), \(now))
            ON CONFLICT (account_id) DO UPDATE SET password_hash = EXCLUDED.password_hash, updated_at = EXCLUDED.updated_at
            RETURNING (xmax <> 0) AS replaced
            """)
        return try rows.first?.decode(Bool.self, "replaced") ?? false
    }

    /// Revokes the account's live sessions but `kept`, each with its audit row; how many.
    static func revokeSessions(
        of accountID: AccountID, except kept: SessionID?, at now: Date, on connection: PostgresConnection
    ) throws -> Int {
        let audit = AuditTrail.rows(
            .sessionRevoked, from: "revoked", rowDetail: "jsonb_build_object('session.id', revoked.id::text)")
        return try connection.execute(
            """
            WITH revoked AS (
                     UPDATE authentication_sessions SET revoked_at = \(now)
                     WHERE account_id = \(accountID.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                       AND (\(kept?.rawValue)::uuid IS NULL OR id <> \(kept?.rawValue))
                     RETURNING id, account_id),
                 audited AS (\(fragment: audit))
            SELECT count(*) AS revoked FROM revoked
            """
        ).first?.decode(Int.self, "revoked") ?? 0
    }
}
