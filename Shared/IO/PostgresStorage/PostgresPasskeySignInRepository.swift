import Domain
import Encoding
import Foundation
import Observability
import Postgres

/// `passkey_authentication_challenges`, `passkey_credentials` and `authentication_sessions`: a verified sign-in's
/// challenge consumed, its session inserted and, when it changes the passkey's security state, its use recorded, in
/// one statement. A single statement is its own transaction, so all of it commits or none: one round trip and one WAL
/// flush per sign-in.
public struct PostgresPasskeySignInRepository: PasskeySignInRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The most passkeys one `recordLastUse` statement updates.
    public static let lastUseBatchLimit = 1_000

    public func completeSignIn(_ record: PasskeySignInRecord) async throws -> PasskeySignInOutcome {
        let session = record.session
        let credentialID = PostgresBytes(record.credentialID.bytes)
        let durable = record.usage != nil
        let usage =
            record.usage
            ?? PasskeyUsage(
                signCount: record.expectedSignCount, backedUp: record.expectedBackedUp, cloneWarning: false,
                usedAt: session.createdAt)
        let backupEligible = record.backupEligibleAfter
        // Each step runs only if the one before it did:
        // - passkey: the row, only in the state the assertion was checked against (sign count, backup state and
        //   backup eligibility; read, not locked), with its account's name and whether an operator disabled it;
        // - consumed: the challenge's one atomic consumption, with the expiry rule and the signed challenge's bytes;
        //   racing finishes queue on its row lock and all but the first find it consumed;
        // - used: the use, only when it must be durable (the one-time filter on `durable` skips it otherwise, so an
        //   unchanged passkey's row gets no new version and no WAL), and only while the row still has the expected
        //   state: a concurrent sign-in that moved it first leaves this one with the challenge spent and nothing else;
        // - added: the session, unless the account is disabled (the challenge is spent all the same). `passkey`
        //   share-locks the account row until the commit: a disable waits for this session and then revokes it, or
        //   commits first and `passkey` reads the account disabled.
        // - audited: the events of what committed (the sign-in; a clone warning only when one was found; a changed
        //   backup eligibility, with the flags before and after, only when the use stores one).
        let cloneWarned: PostgresQuery =
            usage.cloneWarning && durable
            ? """
            clone_warned AS (\(fragment: AuditTrail.rows(
                .passkeyCloneWarning, from: "used",
                detail: ["credential.id": PostgresPasskeyCredentialRepository.auditID(record.credentialID)]))),
            """ : ""
        let backupStateChanged: PostgresQuery =
            record.changesBackupEligibility && durable
            ? """
            backup_state_changed AS (\(fragment: AuditTrail.rows(
                .passkeyBackupStateChanged, from: "used",
                detail: [
                    "credential.id": PostgresPasskeyCredentialRepository.auditID(record.credentialID),
                    "backup_eligible.old": String(record.expectedBackupEligible),
                    "backup_eligible.new": String(backupEligible),
                    "backed_up.old": String(record.expectedBackedUp), "backed_up.new": String(usage.backedUp),
                ]))),
            """ : ""
        // The outcome, when everything before it held: the session stored (`added`), or for a reauthentication
        // the live session moved to a sign-in at the session's creation time (`added` too, so the statement reads
        // alike either way), each with its event.
        let admitted: PostgresQuery =
            "EXISTS (SELECT 1 FROM consumed) AND NOT passkey.disabled AND (NOT \(durable) OR EXISTS (SELECT 1 FROM used))"
        let outcome: PostgresQuery
        // Only a reauthentication asks whether its session, rather than the passkey's use, is what failed.
        var reauthenticationColumn: PostgresQuery = ""
        if let reauthentication = record.reauthenticating {
            reauthenticationColumn = ", EXISTS (SELECT 1 FROM admitted) AS admitted"
            outcome = """
                admitted AS (SELECT passkey.account_id FROM passkey WHERE \(fragment: admitted)),
                \(fragment: PostgresAccountSecurityRepository.reauthentication(
                    reauthentication.sessionID, from: "admitted", method: "passkey", at: session.createdAt)),
                added AS (SELECT account_id FROM reauthenticated)
                """
        } else {
            outcome = """
                added AS (\(fragment: PostgresAuthenticationSessionRepository.insertion(
                    session, accountFrom: "passkey", where: admitted))),
                signed_in AS (\(fragment: AuditTrail.rows(
                    .signInSucceeded, from: "added", detail: ["method": "passkey", "session.id": session.id.description])))
                """
        }
        let rows = try await translatingErrors {
            try await pool.query(
                """
                WITH passkey AS (
                         SELECT c.account_id, a.display_name, a.disabled_at IS NOT NULL AS disabled
                         FROM passkey_credentials c JOIN accounts a ON a.id = c.account_id
                         WHERE c.credential_id = \(credentialID) AND c.account_id = \(session.accountID.rawValue)
                           AND c.sign_count = \(Int64(record.expectedSignCount))
                           AND c.backed_up = \(record.expectedBackedUp)
                           AND c.backup_eligible = \(record.expectedBackupEligible)
                         FOR SHARE OF a),
                     consumed AS (
                         UPDATE passkey_authentication_challenges SET consumed_at = now()
                         WHERE id = \(record.challengeID.rawValue) AND challenge = \(PostgresBytes(record.challenge))
                           AND consumed_at IS NULL AND expires_at > now() AND EXISTS (SELECT 1 FROM passkey)
                         RETURNING id),
                     used AS (
                         UPDATE passkey_credentials
                         SET sign_count = \(Int64(usage.signCount)), backed_up = \(usage.backedUp),
                             backup_eligible = \(backupEligible),
                             clone_warning = clone_warning OR \(usage.cloneWarning), last_used_at = \(usage.usedAt)
                         WHERE \(durable) AND credential_id = \(credentialID)
                           AND sign_count = \(Int64(record.expectedSignCount)) AND backed_up = \(record.expectedBackedUp)
                           AND backup_eligible = \(record.expectedBackupEligible)
                           AND EXISTS (SELECT 1 FROM consumed) AND NOT (SELECT disabled FROM passkey)
                         RETURNING account_id),
                     \(fragment: cloneWarned)
                     \(fragment: backupStateChanged)
                     \(fragment: outcome)
                SELECT EXISTS (SELECT 1 FROM passkey) AS passkey_found, EXISTS (SELECT 1 FROM consumed) AS consumed,
                       (SELECT disabled FROM passkey) AS disabled,
                       (SELECT passkey.display_name FROM added, passkey) AS display_name
                       \(fragment: reauthenticationColumn)
                """)
        }
        guard let row = rows.first else { throw PostgresError(.decoding, "the sign-in statement returned no row") }
        if let displayName = try row.decode(String?.self, "display_name") { return .signedIn(displayName: displayName) }
        guard try row.decode(Bool.self, "passkey_found") else { return .passkeyChanged }
        guard try row.decode(Bool.self, "consumed") else { return .challengeUnavailable }
        if try row.decode(Bool?.self, "disabled") == true { return .accountDisabled }
        if record.reauthenticating != nil, try row.decode(Bool.self, "admitted") { return .sessionEnded }
        return .concurrentUse
    }

    public func recordLastUse(_ uses: [CredentialID: Date]) async throws -> Int {
        guard !uses.isEmpty else { return 0 }
        precondition(
            uses.count <= Self.lastUseBatchLimit, "recordLastUse takes at most \(Self.lastUseBatchLimit) passkeys")
        let ordered = uses.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        let identifiers = PostgresTextArray(ordered.map { Hex.encode($0.key.bytes) })
        let milliseconds = PostgresTextArray(
            ordered.map { String(Int64(($0.value.timeIntervalSince1970 * 1000).rounded(.down))) })
        return try await translatingErrors {
            // Rows are updated in credential-ID order, so two replicas flushing overlapping batches cannot deadlock.
            try await pool.query(
                """
                UPDATE passkey_credentials c SET last_used_at = u.used_at
                FROM (SELECT decode(id, 'hex') AS credential_id, to_timestamp(ms::bigint / 1000.0) AS used_at
                      FROM unnest(\(identifiers)::text[], \(milliseconds)::text[]) AS input(id, ms)) u
                WHERE c.credential_id = u.credential_id AND (c.last_used_at IS NULL OR c.last_used_at < u.used_at)
                """
            ).affectedRowCount
        }
    }
}
