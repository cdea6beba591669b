import BuildInfo
import Foundation
import Postgres
import PostgresStorage

// Applies the schema's migrations to DATABASE_URL and exits: 0 when the schema is current, 1 with a message naming
// the problem otherwise. Safe to run from several replicas at once. `--version` prints the build and exits.

BuildInfo.answerVersionRequest(program: "passkey-migrate")

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("passkey-migrate: \(message)\n".utf8))
    exit(1)
}

guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
    fail("DATABASE_URL is not set")
}
let configuration = PostgresConfiguration(url: url, poolSize: 1, applicationName: "passkey-migrate")
let pool = PostgresPool(configuration: configuration)
do {
    let applied = try await PostgresStorage(pool: pool).migrate()
    print(
        applied.isEmpty ? "schema is current" : "applied migrations \(applied.map(String.init).joined(separator: ", "))"
    )
} catch let error as PostgresError where error.code == .connectionFailed {
    fail("DATABASE_URL: \(error.message)")
} catch {
    fail("migration failed: \(error)")
}
pool.shutdown()
