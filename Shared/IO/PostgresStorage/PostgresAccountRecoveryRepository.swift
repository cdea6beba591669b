import Domain
import Encoding
import Foundation
import Observability
import Postgres

/// `email_codes`, `recovery_codes`, `account_emails.verified_at` and recovery sessions: what email verification and
/// account recovery write (session-service).
public struct PostgresAccountRecoveryRepository: AccountRecoveryRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The email codes' table name, for the sweeper's logs and metrics.
    public static let codesTable = "email_codes"

    static let codeColumns =
        "id, account_id, email_id, purpose, salt, code_digest, digest_key_id, attempts, created_at, expires_at"

    /// A disabled account is no target: recovery answers for its address as for an unknown one, and sends nothing.
    public func target(normalizedEmail: String) async throws -> RecoveryTarget? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT e.id, e.account_id, e.email, e.verified_at IS NOT NULL AS verified, a.display_name,
                       \(unsafeSQL: FailedGuessStatements.columns)
                FROM account_emails e JOIN accounts a ON a.id = e.account_id
                \(unsafeSQL: FailedGuessStatements.join(accountColumn: "a.id", kind: .code))
                WHERE e.normalized_email = \(normalizedEmail) AND a.disabled_at IS NULL
                """
            ).first.map(Self.decodeTargetWithGuesses)
        }
    }

    public func firstEmail(of accountID: AccountID) async throws -> RecoveryTarget? {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT e.id, e.account_id, e.email, e.verified_at IS NOT NULL AS verified, a.display_name,
                       \(unsafeSQL: FailedGuessStatements.columns)
                FROM account_emails e JOIN accounts a ON a.id = e.account_id
                \(unsafeSQL: FailedGuessStatements.join(accountColumn: "a.id", kind: .code))
                WHERE e.account_id = \(accountID.rawValue) ORDER BY e.created_at, e.email LIMIT 1
                """
            ).first.map(Self.decodeTargetWithGuesses)
        }
    }

    public func issue(_ delivery: EmailCodeDelivery) async throws {
        let audit = AuditTrail.row(
            delivery.code.purpose == .recovery ? .recoveryStarted : .emailVerificationSent,
            account: delivery.code.accountID)
        try await translatingErrors {
            try await pool.transaction { connection in
                try Self.insert(delivery, on: connection)
                try connection.execute(audit)
            }
        }
    }

    public func attempt(
        emailID: UUID, purpose: EmailCodePurpose, maximumAttempts: Int, claiming charge: GuessCharge
    ) async throws -> EmailCode? {
        try await translatingErrors {
            // The row is chosen without a lock and re-checked under the UPDATE's: of racing attempts, each counts
            // once, and none is allowed past the limit. The claim on the account's failed code guesses runs in the
            // same statement (a data-modifying CTE runs whatever the UPDATE finds), and without it the code is not
            // tried.
            try await pool.query(
                """
                WITH claimed AS (\(fragment: FailedGuessStatements.charge(charge, onlyWithRoom: true)))
                UPDATE email_codes SET attempts = attempts + 1
                WHERE id = (SELECT id FROM email_codes
                            WHERE email_id = \(emailID) AND purpose = \(purpose.rawValue)
                              AND consumed_at IS NULL AND expires_at > now()
                            ORDER BY created_at DESC LIMIT 1)
                  AND attempts < \(maximumAttempts) AND consumed_at IS NULL AND expires_at > now()
                  AND EXISTS (SELECT 1 FROM claimed)
                RETURNING \(unsafeSQL: Self.codeColumns)
                """
            ).first.map(Self.decodeCode)
        }
    }

    public func countDecoyAttempt(slot: Int) async throws {
        _ = try await translatingErrors {
            try await pool.query(
                "UPDATE recovery_attempt_decoys SET attempts = attempts + 1 WHERE slot = \(Int32(clamping: slot & 63))")
        }
    }

    public func completeVerification(codeID: UUID) async throws -> Bool {
        try await translatingErrors {
            try await pool.query(
                """
                WITH consumed AS (
                         UPDATE email_codes SET consumed_at = now()
                         WHERE id = \(codeID) AND purpose = 'verification' AND consumed_at IS NULL AND expires_at > now()
                         RETURNING email_id),
                     verified AS (
                         UPDATE account_emails SET verified_at = COALESCE(verified_at, now())
                         WHERE id IN (SELECT email_id FROM consumed)
                         RETURNING account_id),
                     audited AS (\(fragment: AuditTrail.rows(.emailVerified, from: "verified")))
                SELECT count(*) AS verified FROM verified
                """
            ).first?.decode(Int.self, "verified") == 1
        }
    }

    public func unusedRecoveryCodes(of accountID: AccountID) async throws -> [RecoveryCodeRecord] {
        try await translatingErrors {
            try await pool.query(
                """
                SELECT id, code_digest FROM recovery_codes
                WHERE account_id = \(accountID.rawValue) AND used_at IS NULL
                """
            ).map { row in
                RecoveryCodeRecord(
                    id: try row.decode(UUID.self, "id"),
                    codeDigest: try row.decode(PostgresBytes.self, "code_digest").bytes)
            }
        }
    }

    public func replaceRecoveryCodes(of accountID: AccountID, digests: [[UInt8]], at now: Date) async throws {
        let audit = AuditTrail.row(
            .recoveryCodesGenerated, account: accountID, detail: ["count": String(digests.count)])
        let notice = SecurityNotices().rows(.recoveryCodesGenerated, account: accountID)
        try await translatingErrors {
            try await pool.transaction { connection in
                try connection.execute("DELETE FROM recovery_codes WHERE account_id = \(accountID.rawValue)")
                for digest in digests {
                    try connection.execute(
                        """
                        INSERT INTO recovery_codes (id, account_id, code_digest, created_at)
                        VALUES (\(UUID.randomV4()), \(accountID.rawValue), \(PostgresBytes(digest)), \(now))
                        """)
                }
                try connection.execute(audit)
                try connection.execute(notice)
            }
        }
    }

    public func startRecoverySession(
        _ session: AuthenticationSession, consuming proof: RecoveryProof, revokingOtherSessions: Bool
    ) async throws -> Int? {
        let proofKind: String
        switch proof {
        case .emailCode: proofKind = "email_code"
        case .recoveryCode: proofKind = "recovery_code"
        }
        let audit = AuditTrail.row(
            .recoverySessionIssued, account: session.accountID,
            detail: ["proof": proofKind, "session.id": session.id.description])
        let insertion = PostgresAuthenticationSessionRepository.insertion(session)
        return try await translatingErrors {
            try await pool.transaction { connection -> Int? in
                let accountID = session.accountID.rawValue
                // The account row stays share-locked until the commit: a disable waits for this session and then
                // revokes it, or commits first and is seen here.
                let account = try connection.execute(
                    "SELECT disabled_at IS NOT NULL AS disabled FROM accounts WHERE id = \(accountID) FOR SHARE")
                guard let state = account.first else { return nil }
                guard try !state.decode(Bool.self, "disabled") else {
                    throw DomainError(.accountDisabled, "this account is disabled")
                }
                let consumed: Int
                switch proof {
                case .emailCode(let id):
                    consumed = try connection.execute(
                        """
                        UPDATE email_codes SET consumed_at = now()
                        WHERE id = \(id) AND account_id = \(accountID) AND purpose = 'recovery'
                          AND consumed_at IS NULL AND expires_at > now()
                        """
                    ).affectedRowCount
                case .recoveryCode(let id):
                    consumed = try connection.execute(
                        """
                        UPDATE recovery_codes SET used_at = now()
                        WHERE id = \(id) AND account_id = \(accountID) AND used_at IS NULL
                        """
                    ).affectedRowCount
                }
                guard consumed == 1 else { return nil }
                // An earlier recovery session always ends: only the newest recovery may register a passkey.
                let revoked = try connection.execute(
                    """
                    UPDATE authentication_sessions SET revoked_at = now()
                    WHERE account_id = \(accountID) AND revoked_at IS NULL AND expires_at > now()
                      AND (\(revokingOtherSessions) OR authentication_method = 'recovery')
                    """
                ).affectedRowCount
                try connection.execute(insertion)
                try connection.execute(audit)
                return revoked
            }
        }
    }

    public func deleteEndedCodes(before cutoff: Date, limit: Int) async throws -> Int {
        try await EndedRowDeletion(pool: pool, table: Self.codesTable, endColumns: ["expires_at", "consumed_at"])
            .delete(before: cutoff, limit: limit)
    }

    /// Stores a code and queues its message on `connection`, ending the address's earlier live codes of the
    /// purpose: part of whichever transaction decided to send it (an account's creation, a recovery's start).
    static func insert(_ delivery: EmailCodeDelivery, on connection: PostgresConnection) throws {
        let code = delivery.code
        try connection.execute(
            """
            UPDATE email_codes SET consumed_at = now()
            WHERE email_id = \(code.emailID) AND purpose = \(code.purpose.rawValue) AND consumed_at IS NULL
            """)
        try connection.execute(
            """
            INSERT INTO email_codes (\(unsafeSQL: codeColumns))
            VALUES (\(code.id), \(code.accountID.rawValue), \(code.emailID), \(code.purpose.rawValue),
                    \(PostgresBytes(code.salt)), \(PostgresBytes(code.codeDigest)), \(code.digestKeyID),
                    \(code.attempts), \(code.createdAt), \(code.expiresAt))
            """)
        try PostgresEmailOutboxRepository.enqueue(delivery.message, on: connection)
    }

    static func decodeTarget(_ row: PostgresRow) throws -> RecoveryTarget {
        RecoveryTarget(
            accountID: AccountID(try row.decode(UUID.self, "account_id")), emailID: try row.decode(UUID.self, "id"),
            address: try row.decode(String.self, "email"), verified: try row.decode(Bool.self, "verified"),
            displayName: try row.decode(String.self, "display_name"))
    }

    /// ``decodeTarget(_:)`` with the failed code guesses a lookup joined (``FailedGuessStatements/columns``).
    static func decodeTargetWithGuesses(_ row: PostgresRow) throws -> RecoveryTarget {
        var target = try decodeTarget(row)
        target.failedCodeGuesses = try FailedGuessStatements.decode(row)
        return target
    }

    static func decodeCode(_ row: PostgresRow) throws -> EmailCode {
        guard let purpose = EmailCodePurpose(rawValue: try row.decode(String.self, "purpose")) else {
            throw PostgresError(.decoding, "unknown email_codes.purpose")
        }
        return EmailCode(
            id: try row.decode(UUID.self, "id"), accountID: AccountID(try row.decode(UUID.self, "account_id")),
            emailID: try row.decode(UUID.self, "email_id"), purpose: purpose,
            salt: try row.decode(PostgresBytes.self, "salt").bytes,
            codeDigest: try row.decode(PostgresBytes.self, "code_digest").bytes,
            digestKeyID: try row.decode(String?.self, "digest_key_id"), attempts: try row.decode(Int.self, "attempts"),
            createdAt: try row.decode(Date.self, "created_at"),
            expiresAt: try row.decode(Date.self, "expires_at"))
    }
}
