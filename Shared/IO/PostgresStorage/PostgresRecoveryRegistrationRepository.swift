import Domain
import Observability
import Postgres

/// A passkey registered by a recovery session: the session ended, the passkey stored and a passkey session issued
/// in one transaction (verification-service).
public struct PostgresRecoveryRegistrationRepository: RecoveryRegistrationRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func completeRecovery(
        _ credential: PasskeyCredential, endingRecoverySession recoverySessionID: SessionID,
        session: AuthenticationSession
    ) async throws -> String? {
        let audit = [
            AuditTrail.row(
                .passkeyRegistered, account: credential.accountID,
                detail: ["credential.id": PostgresPasskeyCredentialRepository.auditID(credential.credentialID)]),
            AuditTrail.row(
                .recoveryCompleted, account: credential.accountID, detail: ["session.id": session.id.description]),
        ]
        let insertion = PostgresAuthenticationSessionRepository.insertion(session)
        let notices = SecurityNotices()
        let passwordVoided = AuditTrail.row(
            .passwordRemoved, account: credential.accountID, detail: ["reason": "recovery"])
        return try await translatingErrors {
            try await pool.transaction { connection -> String? in
                // The account row stays share-locked until the commit, as in every path that issues a session: a
                // disable (which revokes the recovery session too) waits for this one and then revokes its session,
                // or commits first and is seen here.
                let account = try connection.execute(
                    """
                    SELECT display_name, disabled_at IS NOT NULL AS disabled FROM accounts
                    WHERE id = \(credential.accountID.rawValue) FOR SHARE
                    """)
                guard let row = account.first else { return nil }
                guard try !row.decode(Bool.self, "disabled") else {
                    throw DomainError(.accountDisabled, "this account is disabled")
                }
                let ended = try connection.execute(
                    """
                    UPDATE authentication_sessions SET revoked_at = now()
                    WHERE id = \(recoverySessionID.rawValue) AND account_id = \(credential.accountID.rawValue)
                      AND authentication_method = 'recovery' AND revoked_at IS NULL AND expires_at > now()
                    """)
                guard ended.affectedRowCount == 1 else { return nil }
                try PostgresPasskeyCredentialRepository.insert(credential, on: connection)
                try connection.execute(insertion)
                for event in audit { try connection.execute(event) }
                // A completed recovery voids the password: whoever lost the account may have lost it with it.
                try PostgresPasswordCredentialRepository.voidPassword(
                    of: credential.accountID, audit: passwordVoided, on: connection)
                try connection.execute(
                    notices.rows(.passkeyAdded, account: credential.accountID, device: credential.name))
                try connection.execute(notices.rows(.recoveryCompleted, account: credential.accountID))
                return try row.decode(String.self, "display_name")
            }
        }
    }
}
