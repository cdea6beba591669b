import Domain
import Foundation
import Observability
import Postgres

/// The schema's database: one pool, the migrations, and the checks a service runs on it. Each process builds the
/// repositories it uses on ``pool`` (`PostgresAccountRepository(pool:)`, ...), and no others.
public struct PostgresStorage: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Storage over a new pool of `poolSize` connections to `url`, opened as they are needed.
    public init(url: String, poolSize: Int, applicationName: String) {
        self.init(
            pool: PostgresPool(
                configuration: PostgresConfiguration(url: url, poolSize: poolSize, applicationName: applicationName)))
    }

    /// Storage whose statement times are recorded in `metrics` (`db_statement_duration_seconds{service}`).
    public init(url: String, poolSize: Int, applicationName: String, metrics: MetricsRegistry) {
        var configuration = PostgresConfiguration(url: url, poolSize: poolSize, applicationName: applicationName)
        configuration.statementMetrics = .init(registry: metrics, service: applicationName)
        self.init(pool: PostgresPool(configuration: configuration))
    }

    /// Why the database cannot be used, in words fit for an operator (the password is never in them).
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    /// Checks the form of a database URL without connecting (``PostgresConfiguration/validate(url:)``); the
    /// description says what is wrong, never the password.
    public static func checkURL(_ url: String) throws(Unavailable) {
        do {
            try PostgresConfiguration.validate(url: url)
        } catch {
            throw Unavailable(description: error.message)
        }
    }

    /// The URL with its password masked, for messages.
    public var redactedURL: String { pool.configuration.redactedURL }

    /// Checks that the database answers and takes writes; throws ``Unavailable`` when it does not.
    public func checkConnectivity() async throws(Unavailable) {
        do {
            try await pool.checkConnectivity()
        } catch let error as PostgresError {
            throw Unavailable(description: error.message)
        } catch {
            throw Unavailable(description: String(describing: error))
        }
    }

    /// Statements running and waiting for a connection now, and the connections opened since start.
    public var load: (busy: Int, waiting: Int, opened: Int) {
        let statistics = pool.currentStatistics
        return (statistics.busy, statistics.waiting, statistics.opened)
    }

    /// Closes every connection.
    public func shutdown() { pool.shutdown() }

    /// The schema's migrations, shipped as numbered SQL files beside the module.
    public static func migrations() throws -> [PostgresMigration] {
        guard let directory = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
            throw PostgresError(.server, "the Migrations resource directory is missing from the PostgresStorage bundle")
        }
        return try PostgresMigration.load(from: directory)
    }

    /// Applies the schema's migrations; returns the versions this call applied.
    @discardableResult
    public func migrate() async throws -> [Int] {
        try await PostgresMigrator(pool: pool).apply(try Self.migrations())
    }
}
