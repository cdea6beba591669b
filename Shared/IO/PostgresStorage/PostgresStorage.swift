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

    /// Checks that the database answers, takes writes and can run what a sign-in runs (``readinessStatement``);
    /// throws ``Unavailable`` when it cannot.
    public func checkConnectivity() async throws(Unavailable) {
        do {
            try await pool.checkConnectivity()
            _ = try await pool.query(Self.readinessStatement)
        } catch let error as PostgresError {
            throw Unavailable(description: error.message)
        } catch {
            throw Unavailable(description: String(describing: error))
        }
    }

    /// One statement that does what a sign-in needs of the database beyond a connection, and leaves nothing behind:
    /// PL/pgSQL runs (its library is loaded into the backend: after the server's packages are upgraded under it, a
    /// new connection fails here with SQLSTATE 58P01 while `SELECT 1` still answers), an audit event is inserted as
    /// every sign-in inserts one, and so the trigger that queues webhook deliveries (`audit_event_to_webhooks`,
    /// PL/pgSQL) runs when an endpoint takes every type. The insert is undone by the exception the block raises and
    /// catches itself, so no row is kept (only an identity value is used up).
    static let readinessStatement: PostgresQuery = """
        DO $readiness$
        BEGIN
            BEGIN
                INSERT INTO audit_events (type, actor) VALUES ('readiness.check', 'system');
                RAISE SQLSTATE 'PKRDY';
            EXCEPTION WHEN SQLSTATE 'PKRDY' THEN
                NULL;
            END;
        END
        $readiness$
        """

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
