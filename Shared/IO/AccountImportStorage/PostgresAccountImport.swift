import AccountImport
import Crypto
import Domain
import Encoding
import Foundation
import Postgres

/// An import's writes, on one connection of its own: each batch is looked up, decided and written in one
/// transaction, with `COPY` into `accounts` (with the record's digest), `account_emails` and
/// `password_credentials`. Account and email IDs are time-ordered (UUIDv7), so a large import appends to the
/// primary-key indexes instead of writing all over them.
///
/// The run remembers the emails and externalIDs it met in two temporary tables of the connection (written in the
/// same transactions), so a duplicate far down the input is found without the importer holding the input in
/// memory. The connection is never replaced behind the run's back: when it breaks, the run stops.
public final class PostgresAccountImport {
    private let connection: PostgresConnection
    private let random: any RandomSource
    /// How many times a batch is tried again when another writer took one of its emails or externalIDs between
    /// the lookup and the write.
    static let conflictRetries = 3

    /// The outcome of one batch.
    public struct BatchResult: Sendable {
        public let decisions: [BatchDecision]
    }

    /// The database has not had the migrations that make imports possible.
    public struct SchemaError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Opens the connection, checks the schema and creates the run's temporary tables. Throws `PostgresError`, or
    /// `SchemaError` when the migrations were not applied.
    public init(configuration: PostgresConfiguration, random: any RandomSource = SecureRandom()) throws {
        connection = try PostgresConnection(configuration: configuration)
        self.random = random
        let ready = try connection.execute(
            """
            SELECT EXISTS (SELECT 1 FROM information_schema.columns
                           WHERE table_schema = 'public' AND table_name = 'accounts' AND column_name = 'import_digest')
                   AS ready
            """
        ).first
        guard try ready?.decode(Bool.self, "ready") == true else {
            throw SchemaError(
                description: "the database has no accounts.import_digest column: run passkey-migrate first")
        }
        // The run's tables hold a row per line met; room for them in the session's own buffers (the default is
        // 8 MB) keeps a large import from writing them out and reading them back. Set before their first use.
        try connection.execute(
            """
            SET temp_buffers = '256MB';
            CREATE TEMPORARY TABLE import_seen_emails (normalized_email text PRIMARY KEY, line_number bigint NOT NULL);
            CREATE TEMPORARY TABLE import_seen_external_ids (external_id text PRIMARY KEY, line_number bigint NOT NULL)
            """)
    }

    /// Whether the next batch looks its emails and externalIDs up before writing: after a batch that found some
    /// in the database (a rerun, an input with duplicates or taken addresses).
    private var lookUpFirst = false

    /// Decides and writes one batch, whole or not at all. Throws `PostgresError`; nothing of the batch is written
    /// then.
    ///
    /// A batch is first written optimistically, without looking anything up, unless the batch before met rows that
    /// exist: every line a lookup would keep from being inserted (an email or externalID the database holds,
    /// which includes everything this run met) makes the `COPY` fail on a unique constraint, and the batch is then
    /// rolled back and decided again with the lookups. A fresh import so probes no index beyond what its writes do.
    public func importBatch(_ candidates: [ImportCandidate], now: Date) throws -> BatchResult {
        var attempt = 0
        var withLookups = lookUpFirst
        while true {
            attempt += 1
            try connection.execute("BEGIN")
            do {
                let lookup = withLookups ? try lookUp(candidates) : BatchLookup()
                let classification = BatchClassification(candidates, lookup: lookup)
                try write(candidates, classification, now: now)
                try connection.execute("COMMIT")
                lookUpFirst = withLookups && !(lookup.existingEmails.isEmpty && lookup.existingExternalIDs.isEmpty)
                return BatchResult(decisions: classification.decisions)
            } catch let error as PostgresError {
                _ = try? connection.execute("ROLLBACK")
                guard error.isUniqueViolation else { throw error }
                if !withLookups {
                    // The optimistic write met a row that exists: decide the batch with the lookups.
                    withLookups = true
                    attempt -= 1
                    continue
                }
                // Another writer took a value after the lookup: look again.
                guard attempt <= Self.conflictRetries else { throw error }
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    private func lookUp(_ candidates: [ImportCandidate]) throws -> BatchLookup {
        var lookup = BatchLookup()
        let emails = PostgresTextArray(candidates.map(\.record.email.normalized))
        let externalIDs = PostgresTextArray(candidates.compactMap(\.record.externalID))
        for row in try connection.execute(
            """
            SELECT e.normalized_email, a.import_digest
            FROM account_emails e JOIN accounts a ON a.id = e.account_id
            WHERE e.normalized_email = ANY(\(emails))
            """)
        {
            // updateValue, not a subscript assignment: a nil digest (an account not imported) must stay a key.
            lookup.existingEmails.updateValue(
                try row.decode(PostgresBytes?.self, "import_digest")?.bytes,
                forKey: try row.decode(String.self, "normalized_email"))
        }
        // What the run met is in the database already (imported or unchanged), so only addresses and IDs found
        // there can have been met: a fresh import looks nothing up in the run's tables.
        let existing = PostgresTextArray(Array(lookup.existingEmails.keys))
        if !existing.elements.isEmpty {
            for row in try connection.execute(
                "SELECT normalized_email, line_number FROM import_seen_emails WHERE normalized_email = ANY(\(existing))"
            ) {
                lookup.seenEmails[try row.decode(String.self, "normalized_email")] =
                    try row.decode(Int.self, "line_number")
            }
        }
        guard !externalIDs.elements.isEmpty else { return lookup }
        for row in try connection.execute("SELECT external_id FROM accounts WHERE external_id = ANY(\(externalIDs))") {
            lookup.existingExternalIDs.insert(try row.decode(String.self, "external_id"))
        }
        let existingIDs = PostgresTextArray(Array(lookup.existingExternalIDs))
        if !existingIDs.elements.isEmpty {
            for row in try connection.execute(
                """
                SELECT external_id, line_number FROM import_seen_external_ids WHERE external_id = ANY(\(existingIDs))
                """)
            {
                lookup.seenExternalIDs[try row.decode(String.self, "external_id")] =
                    try row.decode(Int.self, "line_number")
            }
        }
        return lookup
    }

    private func write(_ candidates: [ImportCandidate], _ classification: BatchClassification, now: Date) throws {
        var accounts = PostgresCopyRows(reservingCapacity: candidates.count * 160)
        var emails = PostgresCopyRows(reservingCapacity: candidates.count * 160)
        var passwords = PostgresCopyRows(reservingCapacity: candidates.count * 120)
        for (candidate, decision) in zip(candidates, classification.decisions) where decision == .insert {
            let record = candidate.record
            let accountID = UUID.timeOrderedV7(at: now)
            let createdAt = record.createdAt(orNow: now)
            accounts.append(accountID)
            accounts.append(record.displayName)
            accounts.append(PostgresBytes(random.bytes(count: 32)))
            accounts.append(createdAt)
            accounts.append(record.externalID)
            accounts.append(PostgresBytes(record.digest))
            accounts.endRow()
            emails.append(UUID.timeOrderedV7(at: now))
            emails.append(accountID)
            emails.append(record.email.address)
            emails.append(record.email.normalized)
            emails.append(createdAt)
            emails.append(record.emailVerified ? createdAt : nil)
            emails.endRow()
            if let hash = record.passwordHash {
                passwords.append(accountID)
                passwords.append(hash)
                passwords.append(createdAt)
                passwords.append(now)
                passwords.endRow()
            }
        }
        if accounts.rowCount > 0 {
            try connection.copy(
                "COPY accounts (id, display_name, user_handle, created_at, external_id, import_digest) FROM STDIN",
                rows: accounts)
            try connection.copy(
                """
                COPY account_emails (id, account_id, email, normalized_email, created_at, verified_at) FROM STDIN
                """, rows: emails)
            if passwords.rowCount > 0 {
                try connection.copy(
                    "COPY password_credentials (account_id, password_hash, created_at, updated_at) FROM STDIN",
                    rows: passwords)
            }
        }
        try copy(classification.newlySeenEmails, "COPY import_seen_emails (normalized_email, line_number) FROM STDIN")
        try copy(
            classification.newlySeenExternalIDs, "COPY import_seen_external_ids (external_id, line_number) FROM STDIN")
    }

    /// COPYs (value, line) pairs into a run's table of values met; nothing when there are none.
    private func copy(_ pairs: [(String, Int)], _ statement: PostgresQuery) throws {
        guard !pairs.isEmpty else { return }
        var rows = PostgresCopyRows()
        for (value, line) in pairs {
            rows.append(value)
            rows.append(line)
            rows.endRow()
        }
        try connection.copy(statement, rows: rows)
    }
}
