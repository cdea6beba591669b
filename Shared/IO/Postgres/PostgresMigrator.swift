import Foundation

/// One numbered schema change. A migration never changes after it has shipped: its checksum is recorded.
public struct PostgresMigration: Sendable, Hashable {
    public let version: Int
    public let name: String
    public let sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Reads `NNNN_name.sql` files from a directory, ordered by number. Throws on a misnamed file or a repeated
    /// number.
    public static func load(from directory: URL) throws -> [PostgresMigration] {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
        let migrations = try files.map { file -> PostgresMigration in
            let stem = file.deletingPathExtension().lastPathComponent
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]), version > 0
            else { throw PostgresError(.server, "migration file \(file.lastPathComponent) is not named NNNN_name.sql") }
            return PostgresMigration(
                version: version, name: String(stem[stem.index(after: underscore)...]),
                sql: try String(contentsOf: file, encoding: .utf8))
        }.sorted { $0.version < $1.version }
        for (previous, next) in zip(migrations, migrations.dropFirst()) where previous.version == next.version {
            throw PostgresError(.server, "two migrations are numbered \(next.version)")
        }
        return migrations
    }
}

/// Applies migrations in order, each in its own transaction, recording them in `schema_migrations`.
///
/// Safe when several replicas start at once: a session-level advisory lock lets one migrator work at a time, and
/// the others then find nothing left to do. Re-running is a no-op. A recorded migration whose text has changed
/// stops the run rather than leave the schema in an unknown state.
public struct PostgresMigrator: Sendable {
    /// The advisory lock key every migrator of this schema takes.
    public static let advisoryLockKey: Int64 = 0x7061_7373_6B65_7901

    private let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// Applies what is missing; returns the versions applied by this call.
    @discardableResult
    public func apply(_ migrations: [PostgresMigration]) async throws -> [Int] {
        try await pool.withConnection { connection in
            try connection.execute("SELECT pg_advisory_lock(\(Self.advisoryLockKey))")
            defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(Self.advisoryLockKey))") }
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version    integer     PRIMARY KEY,
                    name       text        NOT NULL,
                    checksum   text        NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
            var applied: [Int: String] = [:]
            for row in try connection.execute("SELECT version, checksum FROM schema_migrations") {
                applied[try row.decode(Int.self, "version")] = try row.decode(String.self, "checksum")
            }
            var newlyApplied: [Int] = []
            for migration in migrations {
                let checksum = try connection.execute("SELECT md5(\(migration.sql)) AS checksum").first?
                    .decode(String.self, "checksum")
                if let recorded = applied[migration.version] {
                    guard recorded == checksum else {
                        throw PostgresError(
                            .server,
                            "migration \(migration.version)_\(migration.name) changed after it was applied")
                    }
                    continue
                }
                try connection.execute("BEGIN")
                do {
                    try connection.execute(PostgresQuery(unsafeSQL: migration.sql))
                    try connection.execute(
                        """
                        INSERT INTO schema_migrations (version, name, checksum) \
                        VALUES (\(migration.version), \(migration.name), \(checksum))
                        """)
                    try connection.execute("COMMIT")
                } catch {
                    _ = try? connection.execute("ROLLBACK")
                    throw error
                }
                newlyApplied.append(migration.version)
            }
            return newlyApplied
        }
    }
}
