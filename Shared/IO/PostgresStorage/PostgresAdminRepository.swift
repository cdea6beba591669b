import AdminAccess
import Domain
import Foundation
import Observability
import Postgres

/// The admin API's storage (`AdminRepository`): lookups across the account's tables, and the operators' changes,
/// each with its audit event in the same transaction. Reads that show an account are audit events too.
public struct PostgresAdminRepository: AdminRepository {
    let pool: PostgresPool
    let tokens: PostgresAdminTokenRepository
    let auditTrail: PostgresAuditEventRepository

    public init(pool: PostgresPool) {
        self.pool = pool
        tokens = PostgresAdminTokenRepository(pool: pool)
        auditTrail = PostgresAuditEventRepository(pool: pool)
    }

    public func token(digest: [UInt8]) async throws -> AdminToken? {
        try await tokens.find(digest: digest)
    }

    public func recordUse(of tokenID: String, at now: Date) async throws {
        try await translatingErrors {
            try await pool.query(
                """
                UPDATE admin_tokens SET last_used_at = \(now)
                WHERE id = \(tokenID) AND (last_used_at IS NULL OR last_used_at < \(now.addingTimeInterval(-60)))
                """)
        }
    }

    public func findAccounts(_ lookup: AccountLookup, limit: Int) async throws -> [AdminAccountSummaryRecord] {
        let matching: PostgresQuery
        let by: String
        switch lookup {
        case .email(let normalized):
            matching = "SELECT account_id FROM account_emails WHERE normalized_email = \(normalized)"
            by = "email"
        case .accountID(let id):
            matching = "SELECT \(id.rawValue)::uuid"
            by = "account_id"
        case .credentialID(let id):
            matching = "SELECT account_id FROM passkey_credentials WHERE credential_id = \(PostgresBytes(id.bytes))"
            by = "credential_id"
        case .externalID(let id):
            matching = "SELECT id FROM accounts WHERE external_id = \(id)"
            by = "external_id"
        }
        let audit = AuditTrail.row(.adminAccountsSearched, account: nil, detail: ["by": by])
        return try await translatingErrors {
            try await pool.transaction { connection in
                let rows = try connection.execute(
                    """
                    SELECT \(unsafeSQL: Self.summaryColumns)
                    FROM accounts a WHERE a.id IN (\(fragment: matching))
                    ORDER BY a.created_at, a.id LIMIT \(limit)
                    """)
                try connection.execute(audit)
                return try rows.map(Self.decodeSummary)
            }
        }
    }

    static let summaryColumns = """
        a.id, a.display_name, a.user_handle, a.created_at, a.disabled_at, a.external_id,
        (EXTRACT(EPOCH FROM a.created_at) * 1000000)::bigint AS created_micros,
        ARRAY(SELECT e.email FROM account_emails e WHERE e.account_id = a.id ORDER BY e.created_at, e.email)::text[]
            AS emails,
        EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id) AS has_password,
        (SELECT count(*) FROM passkey_credentials c WHERE c.account_id = a.id)::bigint AS passkey_count
        """

    static func decodeSummary(_ row: PostgresRow) throws -> AdminAccountSummaryRecord {
        let account = try PostgresAccountRepository.decodeAccount(row)
        return AdminAccountSummaryRecord(
            account: account, emails: try row.decode(PostgresTextArray.self, "emails").elements,
            hasPassword: try row.decode(Bool.self, "has_password"),
            passkeyCount: try row.decode(Int.self, "passkey_count"),
            disabledAt: try row.decode(Date?.self, "disabled_at"),
            externalID: try row.decode(String?.self, "external_id"),
            cursor: AccountCursor(
                createdMicroseconds: try row.decode(Int64.self, "created_micros"), accountID: account.id))
    }

    public func listAccounts(_ listing: AccountListing) async throws -> [AdminAccountSummaryRecord] {
        var conditions: [PostgresQuery] = ["TRUE"]
        func flag(_ value: Bool?, _ condition: PostgresQuery) {
            guard let value else { return }
            conditions.append(value ? condition : "NOT (\(fragment: condition))")
        }
        flag(listing.hasPassword, "EXISTS (SELECT 1 FROM password_credentials p WHERE p.account_id = a.id)")
        flag(listing.hasPasskey, "EXISTS (SELECT 1 FROM passkey_credentials c WHERE c.account_id = a.id)")
        flag(listing.disabled, "a.disabled_at IS NOT NULL")
        if let since = listing.createdSince { conditions.append("a.created_at >= \(since)") }
        if let until = listing.createdUntil { conditions.append("a.created_at < \(until)") }
        if let after = listing.after {
            conditions.append(
                """
                (a.created_at, a.id) > ('epoch'::timestamptz + \(after.createdMicroseconds) * interval '1 microsecond',
                                        \(after.accountID.rawValue)::uuid)
                """)
        }
        var filter: PostgresQuery = ""
        for (index, condition) in conditions.enumerated() {
            filter = index == 0 ? condition : "\(fragment: filter) AND \(fragment: condition)"
        }
        let audit = AuditTrail.row(.adminAccountsSearched, account: nil, detail: ["by": "listing"])
        let query: PostgresQuery = """
            SELECT \(unsafeSQL: Self.summaryColumns) FROM accounts a WHERE \(fragment: filter)
            ORDER BY a.created_at, a.id LIMIT \(listing.limit)
            """
        return try await translatingErrors {
            try await pool.transaction { connection in
                let rows = try connection.execute(query)
                try connection.execute(audit)
                return try rows.map(Self.decodeSummary)
            }
        }
    }

    public func accountDetail(_ accountID: AccountID, at now: Date) async throws -> AdminAccountRecord? {
        let audit = AuditTrail.row(.adminAccountViewed, account: accountID)
        return try await translatingErrors {
            try await pool.transaction { connection -> AdminAccountRecord? in
                // One snapshot for every table read below.
                try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ WRITE")
                guard
                    let accountRow = try connection.execute(
                        """
                        SELECT id, display_name, user_handle, created_at, disabled_at, external_id,
                               import_digest IS NOT NULL AS imported
                        FROM accounts WHERE id = \(accountID.rawValue)
                        """
                    ).first
                else { return nil }
                let emails = try connection.execute(
                    """
                    SELECT email, verified_at IS NOT NULL AS verified FROM account_emails
                    WHERE account_id = \(accountID.rawValue) ORDER BY created_at, email
                    """
                ).map { (address: try $0.decode(String.self, "email"), verified: try $0.decode(Bool.self, "verified")) }
                let counts = try connection.execute(
                    """
                    SELECT EXISTS (SELECT 1 FROM password_credentials WHERE account_id = \(accountID.rawValue)) AS has_password,
                           (SELECT count(*) FROM recovery_codes
                            WHERE account_id = \(accountID.rawValue) AND used_at IS NULL) AS recovery_codes
                    """
                ).first
                let passkeys = try connection.execute(
                    """
                    SELECT \(unsafeSQL: PostgresPasskeyCredentialRepository.columns) FROM passkey_credentials c
                    WHERE c.account_id = \(accountID.rawValue) ORDER BY c.created_at, c.id
                    """
                ).map(PostgresPasskeyCredentialRepository.decode)
                let sessions = try connection.execute(
                    """
                    SELECT \(unsafeSQL: PostgresAuthenticationSessionRepository.columns) FROM authentication_sessions
                    WHERE account_id = \(accountID.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                    ORDER BY created_at DESC, id LIMIT 1000
                    """
                ).map(PostgresAuthenticationSessionRepository.decode)
                try connection.execute(audit)
                return AdminAccountRecord(
                    account: try PostgresAccountRepository.decodeAccount(accountRow), emails: emails,
                    hasPassword: try counts?.decode(Bool.self, "has_password") ?? false, passkeys: passkeys,
                    sessions: sessions, recoveryCodesRemaining: try counts?.decode(Int.self, "recovery_codes") ?? 0,
                    disabledAt: try accountRow.decode(Date?.self, "disabled_at"),
                    imported: try accountRow.decode(Bool.self, "imported"),
                    externalID: try accountRow.decode(String?.self, "external_id"))
            }
        }
    }

    public func revokeSessions(of accountID: AccountID, sessionID: SessionID?, at now: Date) async throws -> Int {
        let audit = AuditTrail.rows(
            .sessionRevoked, from: "revoked", rowDetail: "jsonb_build_object('session.id', revoked.id::text)")
        return try await translatingErrors {
            try await pool.query(
                """
                WITH revoked AS (
                         UPDATE authentication_sessions SET revoked_at = \(now)
                         WHERE account_id = \(accountID.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                           AND (\(sessionID?.rawValue)::uuid IS NULL OR id = \(sessionID?.rawValue))
                         RETURNING id, account_id),
                     audited AS (\(fragment: audit))
                SELECT count(*) AS revoked FROM revoked
                """
            ).first?.decode(Int.self, "revoked") ?? 0
        }
    }

    public func removePasskey(_ credentialID: CredentialID, of accountID: AccountID, overridingLastMethod: Bool)
        async throws
    {
        let audit = AuditTrail.row(
            .passkeyRemoved, account: accountID,
            detail: overridingLastMethod
                ? [
                    "credential.id": PostgresPasskeyCredentialRepository.auditID(credentialID),
                    "override": "last_sign_in_method",
                ]
                : ["credential.id": PostgresPasskeyCredentialRepository.auditID(credentialID)])
        let notices = SecurityNotices()
        try await translatingErrors {
            try await pool.transaction { connection in
                let name = try PostgresPasskeyCredentialRepository.delete(
                    credentialID, of: accountID, keepingLastMethod: !overridingLastMethod, on: connection)
                try connection.execute(audit)
                try connection.execute(notices.rows(.passkeyRemoved, account: accountID, device: name))
            }
        }
    }

    public func eraseAccount(_ accountID: AccountID) async throws -> Bool {
        let tombstone = AuditTrail.row(.accountErased, account: accountID)
        return try await translatingErrors {
            try await pool.transaction { connection -> Bool in
                let emails = try connection.execute(
                    "SELECT normalized_email FROM account_emails WHERE account_id = \(accountID.rawValue) FOR UPDATE"
                ).map { try $0.decode(String.self, "normalized_email") }
                // The account row's own delete cascades to its emails, password, passkeys, sessions, ceremonies and
                // codes (migrations 0001, 0002, 0007).
                let deleted = try connection.execute("DELETE FROM accounts WHERE id = \(accountID.rawValue)")
                guard deleted.affectedRowCount == 1 else { return false }
                try connection.execute(
                    "DELETE FROM passkey_account_registrations WHERE prospective_account_id = \(accountID.rawValue)")
                if !emails.isEmpty {
                    try connection.execute(
                        "DELETE FROM email_outbox WHERE lower(recipient) = ANY (\(PostgresTextArray(emails))::text[])")
                }
                try connection.execute("DELETE FROM audit_events WHERE account_id = \(accountID.rawValue)")
                try connection.execute(tombstone)
                return true
            }
        }
    }

    public func setDisabled(_ accountID: AccountID, disabled: Bool, at now: Date) async throws
        -> (changed: Bool, revoked: Int)?
    {
        let changeAudit = AuditTrail.rows(disabled ? .accountDisabled : .accountEnabled, from: "changed")
        let notice = SecurityNotices().rows(disabled ? .accountDisabled : .accountEnabled, from: "changed")
        let revokeAudit = AuditTrail.rows(
            .sessionRevoked, from: "revoked", rowDetail: "jsonb_build_object('session.id', revoked.id::text)")
        // The state changes only from the other state; a disable revokes every live session with it. The account
        // row is locked first, in a statement of its own: every path that issues a session share-locks it until
        // its commit, so the lock is granted only once those sessions committed, and the change's statement,
        // whose snapshot starts after that, sees them and revokes them. A sign-in that starts later finds the
        // account disabled.
        let revoking: PostgresQuery =
            disabled
            ? """
            revoked AS (
                UPDATE authentication_sessions SET revoked_at = \(now)
                WHERE account_id = \(accountID.rawValue) AND revoked_at IS NULL AND expires_at > \(now)
                  AND EXISTS (SELECT 1 FROM changed)
                RETURNING id, account_id),
            revoke_audited AS (\(fragment: revokeAudit)),
            """
            : "revoked AS (SELECT NULL::uuid AS id WHERE false),"
        return try await translatingErrors {
            try await pool.transaction { connection -> (changed: Bool, revoked: Int)? in
                let locked = try connection.execute(
                    "SELECT 1 FROM accounts WHERE id = \(accountID.rawValue) FOR UPDATE")
                guard !locked.isEmpty else { return nil }
                let rows = try connection.execute(
                    """
                    WITH changed AS (
                             UPDATE accounts SET disabled_at = \(disabled ? now : nil)
                             WHERE id = \(accountID.rawValue) AND (disabled_at IS NULL) = \(disabled)
                             RETURNING id AS account_id),
                         \(fragment: revoking)
                         audited AS (\(fragment: changeAudit)),
                         noticed AS (\(fragment: notice))
                    SELECT EXISTS (SELECT 1 FROM changed) AS changed, (SELECT count(*) FROM revoked) AS revoked
                    """)
                guard let row = rows.first else { return nil }
                return (try row.decode(Bool.self, "changed"), try row.decode(Int.self, "revoked"))
            }
        }
    }

    public func auditEvents(_ query: AuditEventQuery) async throws -> [StoredAuditEvent] {
        let events = try await auditTrail.events(query)
        let audit = AuditTrail.row(
            .adminAuditRead, account: query.accountID, detail: ["count": String(events.count)])
        try await translatingErrors { try await pool.query(audit) }
        return events
    }

    public func mailTargets(of accountID: AccountID) async throws -> (disabled: Bool, targets: [RecoveryTarget])? {
        try await translatingErrors {
            let rows = try await pool.query(
                """
                SELECT a.disabled_at IS NOT NULL AS disabled, a.display_name, e.id, a.id AS account_id, e.email,
                       e.verified_at IS NOT NULL AS verified
                FROM accounts a LEFT JOIN account_emails e ON e.account_id = a.id
                WHERE a.id = \(accountID.rawValue) ORDER BY e.created_at, e.email
                """)
            guard let first = rows.first else { return nil }
            let targets = try rows.filter { try $0.decode(UUID?.self, "id") != nil }
                .map(PostgresAccountRecoveryRepository.decodeTarget)
            return (try first.decode(Bool.self, "disabled"), targets)
        }
    }
}
