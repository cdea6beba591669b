import Domain
import Encoding
import Foundation
import Postgres

// Statement fragments that more than one repository splices into its own statements, and the statements that embed
// each. A fragment's text holds `$` only in its own placeholders (`PostgresQuery`'s splicing renumbers them;
// `StatementFragmentTests` checks every fragment named here).
//
// - `PostgresAuthenticationSessionRepository.insertion`, the one INSERT of a session:
//   `PostgresAuthenticationSessionRepository.add` (alone); `PostgresAccountRepository.createPasskeyAccount`,
//   `PostgresAccountSecurityRepository.finishRecovery`, `PostgresAccountRecoveryRepository.startRecoverySession` and
//   `PostgresRecoveryRegistrationRepository.completeRecovery` (in their transactions);
//   `PostgresPasswordCredentialRepository.completeSignIn` and `PostgresPasskeySignInRepository.completeSignIn` (the
//   `added` CTE, from the row the statement verified).
// - `FailedGuessStatements.charge`, the one upsert of a failed or claimed guess: `PostgresFailedGuessRepository
//   .countFailedGuess` and `.claimGuess` (alone); `PostgresAccountRecoveryRepository.attempt` (the `claimed` CTE).
//   `FailedGuessStatements.columns`, `.join` and `.decode`: the lookups `PostgresPasswordCredentialRepository
//   .signInRecord`, `PostgresAccountSecurityRepository.passwordRecord` and `PostgresAccountRecoveryRepository.target`
//   and `.firstEmail`.
// - `PostgresPasskeyCredentialRepository.auditID`, a credential ID in an audit event's detail (a bound value):
//   `PostgresPasskeyCredentialRepository.add` and `.remove`, `PostgresAccountRepository.createPasskeyAccount`,
//   `PostgresPasskeySignInRepository.completeSignIn` (clone warning, backup state), `PostgresRecoveryRegistration
//   Repository.completeRecovery` and `PostgresAdminRepository.removePasskey`.
//
// Three more live beside what they belong to, while the changes that own them are under way:
// - AuditTrail.swift: the audit rows, `AuditTrail.rows` (a CTE over the change's rows) and `AuditTrail.row` (a
//   statement of the change's transaction), embedded by every repository that changes an account.
// - SecurityNotices.swift: `SecurityNotices.rows`, the security notifications queued beside a change's audit row
//   (password, passkey, recovery, recovery-code and account changes).
// - AccountSecurityRepository.swift: `PostgresAccountSecurityRepository.reauthentication`, the `reauthenticated`
//   CTE, embedded by `PostgresAccountSecurityRepository.reauthenticate` and `PostgresPasskeySignInRepository
//   .completeSignIn`.

extension PostgresAuthenticationSessionRepository {
    /// The one statement that stores a session, returning its `account_id`. Its account is the session's own, or
    /// with `source` (a CTE or table of the statement it is part of) the `account_id` of each row of `source` that
    /// meets `condition`: a sign-in stores its session only if what it verified in the same statement holds.
    static func insertion(
        _ session: AuthenticationSession, accountFrom source: String? = nil, where condition: PostgresQuery? = nil
    ) -> PostgresQuery {
        let account: PostgresQuery =
            source.map { "\(unsafeSQL: $0).account_id" } ?? "\(session.accountID.rawValue)::uuid"
        // A session with refresh tokens starts at generation 0, refreshed when it was created.
        let refreshed = session.refreshDigest == nil ? nil : session.createdAt
        var query: PostgresQuery = """
            INSERT INTO authentication_sessions (\(unsafeSQL: insertedColumns), refresh_generation, refreshed_at)
            SELECT \(session.id.rawValue), \(fragment: account), \(PostgresBytes(session.tokenDigest)),
                   \(session.authenticationMethod.rawValue), \(session.createdAt), \(session.expiresAt), \(session.revokedAt),
                   \(session.refreshDigest.map(PostgresBytes.init)), \(session.methodReferences.map(PostgresTextArray.init)),
                   \(session.passkeyID), \(refreshed.map { _ in Int32(0) }), \(refreshed)
            """
        if let source { query = "\(fragment: query) FROM \(unsafeSQL: source)" }
        if let condition { query = "\(fragment: query) WHERE \(fragment: condition)" }
        return "\(fragment: query) RETURNING account_id"
    }
}

/// The statements of `failed_guesses` (migration 0017): the one statement of a failed or claimed guess, and the
/// columns the sign-in and recovery lookups read it with.
enum FailedGuessStatements {
    /// The columns a lookup adds when it joins `failed_guesses` as `g` (a `LEFT JOIN`: NULL when none are stored).
    static let columns = "g.level AS guess_level, g.updated_at AS guesses_updated_at"

    /// The join of a lookup, for the account in `accountColumn` and `kind` (a program constant).
    static func join(accountColumn: String, kind: GuessKind) -> String {
        "LEFT JOIN failed_guesses g ON g.account_id = \(accountColumn) AND g.kind = '\(kind.rawValue)'"
    }

    /// The failed guesses a lookup read with ``columns``; nil when the account has none stored.
    static func decode(_ row: PostgresRow) throws -> FailedGuesses? {
        guard let level = try row.decode(Double?.self, "guess_level"),
            let updatedAt = try row.decode(Date?.self, "guesses_updated_at")
        else { return nil }
        return FailedGuesses(level: level, updatedAt: updatedAt)
    }

    /// Adds one guess to the account's level, drained from its stored time to the charge's (never back: a replica
    /// whose clock is behind drains nothing and keeps the later time). With `onlyWithRoom`, nothing is written unless
    /// the level then holds at most the capacity, and a row comes back only when the guess was counted.
    static func charge(_ charge: GuessCharge, onlyWithRoom: Bool) -> PostgresQuery {
        // The stored level less what drained in the seconds from its time to the charge's (EXCLUDED is the row
        // this statement would have inserted: the charge's time).
        let drained: PostgresQuery = """
            greatest(0::float8,
                     g.level - greatest(0::float8, extract(epoch FROM EXCLUDED.updated_at - g.updated_at)::float8)
                               * \(charge.limit.drainPerSecond))
            """
        let room: PostgresQuery =
            onlyWithRoom ? "WHERE \(fragment: drained) + 1 <= \(charge.limit.fullLevel)" : ""
        return """
            INSERT INTO failed_guesses AS g (account_id, kind, level, updated_at)
            VALUES (\(charge.accountID.rawValue), \(charge.kind.rawValue), 1, \(charge.now))
            ON CONFLICT (account_id, kind) DO UPDATE
            SET level = \(fragment: drained) + 1, updated_at = greatest(g.updated_at, EXCLUDED.updated_at)
            \(fragment: room)
            RETURNING g.account_id
            """
    }
}

extension PostgresPasskeyCredentialRepository {
    /// A credential ID as the audit trail names it: base64url, cut to what the detail holds.
    static func auditID(_ credentialID: CredentialID) -> String {
        String(Base64URL.encode(credentialID.bytes).prefix(200))
    }
}
