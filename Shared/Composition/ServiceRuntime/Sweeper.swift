import Configuration
import Foundation
import Observability

/// A table whose rows end (expire, are consumed, are revoked) and are then deleted by its owning service.
public struct SweptTable: Sendable {
    /// The table's name, as logs and the `sweep_deleted_rows_total` metric show it.
    public let name: String
    /// How long a row is kept after it ended, in seconds.
    public let retention: TimeInterval
    /// Deletes at most `limit` rows that ended before the date, returning how many; idempotent and safe to run
    /// from several replicas at once (the repositories' `deleteEnded(before:limit:)`).
    public let deleteBatch: @Sendable (_ endedBefore: Date, _ limit: Int) async throws -> Int

    /// A table swept by `deleteBatch`.
    public init(
        _ name: String, retention: TimeInterval,
        deleteBatch: @escaping @Sendable (_ endedBefore: Date, _ limit: Int) async throws -> Int
    ) {
        self.name = name
        self.retention = retention
        self.deleteBatch = deleteBatch
    }
}

/// Deletes a service's ended rows in bounded batches, on every replica, every `interval`.
///
/// A sweep fixes each table's cutoff (now minus its retention) when it starts, then takes one batch from each table
/// in turn, pausing between rounds, until every table's last batch came back short of `batchSize`. No statement
/// touches more than `batchSize` rows, and the pause leaves the tables to the requests in between; a flooded table
/// does not keep the others waiting. A failed batch (the database is away) ends that table's sweep until the next
/// interval.
public struct Sweeper: Sendable {
    /// How often and how much.
    public struct Settings: Sendable, Equatable {
        /// Time from the end of one sweep to the start of the next.
        public var interval: Duration
        /// Rows one batch deletes at most.
        public var batchSize: Int
        /// Time between two rounds of batches.
        public var pause: Duration

        /// Settings as given.
        public init(interval: Duration, batchSize: Int, pause: Duration) {
            precondition(batchSize > 0, "a batch must be allowed to delete something")
            self.interval = interval
            self.batchSize = batchSize
            self.pause = pause
        }

        /// `PASSKEY_SWEEP_INTERVAL`, `PASSKEY_SWEEP_BATCH_SIZE` and `PASSKEY_SWEEP_BATCH_PAUSE`.
        public init(_ configuration: SweepConfiguration) {
            self.init(
                interval: .seconds(configuration.interval), batchSize: configuration.batchSize,
                pause: .seconds(configuration.batchPause))
        }
    }

    let service: String
    let tables: [SweptTable]
    let settings: Settings
    let metrics: MetricsRegistry
    let logger: Logger
    let clock: @Sendable () -> Date
    let sleep: @Sendable (Duration) async throws -> Void

    /// A sweeper of `tables`; `clock` and `sleep` are injected so that tests need not wait.
    public init(
        service: String, tables: [SweptTable], settings: Settings, metrics: MetricsRegistry, logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init,
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.service = service
        self.tables = tables
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        self.sleep = sleep
        for table in tables {
            // Present from the start at 0, so that a rate over it is defined before the first deletion.
            count(0, in: table)
        }
    }

    /// Sweeps at once, then every `interval`, until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            await sweep()
            do {
                try await sleep(settings.interval)
            } catch {
                return
            }
        }
    }

    /// One sweep of every table; returns the rows deleted from each, by name.
    @discardableResult
    public func sweep() async -> [String: Int] {
        let now = clock()
        var deleted = Dictionary(uniqueKeysWithValues: tables.map { ($0.name, 0) })
        var pending = tables.map { (table: $0, cutoff: now.addingTimeInterval(-$0.retention)) }
        while !pending.isEmpty {
            var stillFull: [(table: SweptTable, cutoff: Date)] = []
            for (table, cutoff) in pending {
                guard !Task.isCancelled else { return deleted }
                do {
                    let rows = try await table.deleteBatch(cutoff, settings.batchSize)
                    deleted[table.name, default: 0] += rows
                    count(rows, in: table)
                    if rows >= settings.batchSize { stillFull.append((table, cutoff)) }
                } catch {
                    logger.warning(
                        "sweep.failed", ["table": table.name, "error": String(describing: error)])
                }
            }
            pending = stillFull
            if !pending.isEmpty {
                do {
                    try await sleep(settings.pause)
                } catch {
                    return deleted
                }
            }
        }
        for table in tables where deleted[table.name, default: 0] > 0 {
            logger.info("sweep.completed", ["table": table.name, "rows": String(deleted[table.name, default: 0])])
        }
        return deleted
    }

    private func count(_ rows: Int, in table: SweptTable) {
        metrics.increment(
            "sweep_deleted_rows_total", help: "Ended rows deleted by the sweeper, by table.",
            labels: ["service": service, "table": table.name], by: Double(rows))
    }
}
