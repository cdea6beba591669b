import Foundation
import Postgres

/// A scratch database for one test case, created on the server named by `DATABASE_URL` and dropped afterwards.
///
/// `./deploy/local/test` starts a throwaway cluster and sets `DATABASE_URL` when none is given.
public final class TestDatabase: Sendable {
    public let name: String
    public let url: String
    private let adminPool: PostgresPool

    /// The server URL the tests were given.
    public static var serverURL: String? {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// Creates a uniquely named empty database.
    public init(serverURL: String) async throws {
        name = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        url = Self.url(serverURL, database: name)
        adminPool = PostgresPool(configuration: PostgresConfiguration(url: serverURL, poolSize: 1))
        try await adminPool.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
    }

    /// Drops the database, ending any connections still open to it.
    public func drop() async throws {
        try await adminPool.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        adminPool.shutdown()
    }

    /// A pool on the scratch database.
    public func makePool(
        size: Int = 4, statementTimeoutMilliseconds: Int = 5_000, replyTimeoutMilliseconds: Int? = nil
    ) -> PostgresPool {
        PostgresPool(
            configuration: PostgresConfiguration(
                url: url, poolSize: size, statementTimeoutMilliseconds: statementTimeoutMilliseconds,
                replyTimeoutMilliseconds: replyTimeoutMilliseconds))
    }

    /// `serverURL` with its database name replaced; works for URLs and keyword/value strings.
    static func url(_ serverURL: String, database: String) -> String {
        guard var components = URLComponents(string: serverURL), components.scheme?.hasPrefix("postgres") == true
        else { return serverURL + " dbname=\(database)" }
        components.path = "/" + database
        return components.string ?? serverURL
    }
}

/// The directory of the built executables: `PASSKEY_BIN_DIR`, or `.build/debug` under the package root.
public func builtExecutable(_ name: String, file: String = #filePath) -> URL {
    if let directory = ProcessInfo.processInfo.environment["PASSKEY_BIN_DIR"], !directory.isEmpty {
        return URL(fileURLWithPath: directory).appendingPathComponent(name)
    }
    var root = URL(fileURLWithPath: file)
    while root.path != "/" && !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path)
    {
        root.deleteLastPathComponent()
    }
    return root.appendingPathComponent(".build/debug").appendingPathComponent(name)
}
