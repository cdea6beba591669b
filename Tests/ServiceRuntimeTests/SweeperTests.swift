import Foundation
import Observability
import ServiceRuntime
import Synchronization
import XCTest

/// A table in memory: rows are their end times; every batch call is recorded.
final class FakeTable: Sendable {
    struct Call: Equatable {
        let table: String
        let cutoff: Date
        let limit: Int
    }

    let name: String
    private let rows: Mutex<[Date]>
    private let failing = Mutex(false)

    init(_ name: String, endedAt ends: [Date]) {
        self.name = name
        rows = Mutex(ends)
    }

    var remaining: [Date] { rows.withLock { $0 } }
    func fail(_ flag: Bool) { failing.withLock { $0 = flag } }

    func swept(retention: TimeInterval, calls: CallLog) -> SweptTable {
        SweptTable(name, retention: retention) { [self] cutoff, limit in
            calls.record(Call(table: name, cutoff: cutoff, limit: limit))
            if failing.withLock({ $0 }) { throw URLError(.cannotConnectToHost) }
            return rows.withLock { rows in
                var deleted = 0
                rows.removeAll { end in
                    guard end < cutoff, deleted < limit else { return false }
                    deleted += 1
                    return true
                }
                return deleted
            }
        }
    }
}

/// Every batch call and pause, in order.
final class CallLog: Sendable {
    enum Event: Equatable {
        case batch(FakeTable.Call)
        case sleep(Duration)
    }

    private let events = Mutex<[Event]>([])
    func record(_ call: FakeTable.Call) { events.withLock { $0.append(.batch(call)) } }
    func record(_ duration: Duration) { events.withLock { $0.append(.sleep(duration)) } }
    var all: [Event] { events.withLock { $0 } }
    var batches: [FakeTable.Call] {
        all.compactMap {
            if case .batch(let call) = $0 { return call }
            return nil
        }
    }
}

final class SweeperTests: XCTestCase {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let settings = Sweeper.Settings(interval: .seconds(10), batchSize: 1000, pause: .milliseconds(50))

    func sweeper(
        _ tables: [SweptTable], calls: CallLog, metrics: MetricsRegistry = MetricsRegistry(),
        logs: MemoryLogSink = MemoryLogSink(), sleeps: Int = .max
    ) -> Sweeper {
        let remaining = Mutex(sleeps)
        return Sweeper(
            service: "test-service", tables: tables, settings: settings, metrics: metrics,
            logger: Logger(service: "test-service", sink: logs), clock: { [now] in now },
            sleep: { duration in
                calls.record(duration)
                let left = remaining.withLock { value -> Int in
                    value -= 1
                    return value
                }
                if left < 0 { throw CancellationError() }
            })
    }

    func testBatchesAreBoundedAndATableIsDrainedInRoundsWithPausesBetween() async {
        let calls = CallLog()
        let table = FakeTable("challenges", endedAt: Array(repeating: now.addingTimeInterval(-120), count: 2500))
        let deleted = await sweeper([table.swept(retention: 60, calls: calls)], calls: calls).sweep()
        XCTAssertEqual(deleted, ["challenges": 2500])
        XCTAssertTrue(table.remaining.isEmpty)
        let cutoff = now.addingTimeInterval(-60)
        let batch = CallLog.Event.batch(FakeTable.Call(table: "challenges", cutoff: cutoff, limit: 1000))
        // Two full batches, each followed by a pause, then the short one that ends the sweep.
        XCTAssertEqual(calls.all, [batch, .sleep(.milliseconds(50)), batch, .sleep(.milliseconds(50)), batch])
    }

    func testRowsInsideTheRetentionAreKept() async {
        let calls = CallLog()
        let old = Array(repeating: now.addingTimeInterval(-3601), count: 3)
        let recent = Array(repeating: now.addingTimeInterval(-3599), count: 4)
        let live = Array(repeating: now.addingTimeInterval(300), count: 5)
        let table = FakeTable("sessions", endedAt: old + recent + live)
        let deleted = await sweeper([table.swept(retention: 3600, calls: calls)], calls: calls).sweep()
        XCTAssertEqual(deleted, ["sessions": 3])
        XCTAssertEqual(table.remaining, recent + live)
        let cutoff = now.addingTimeInterval(-3600)
        XCTAssertEqual(calls.all, [.batch(FakeTable.Call(table: "sessions", cutoff: cutoff, limit: 1000))])
    }

    func testAFloodedTableDoesNotKeepTheOthersWaiting() async {
        let calls = CallLog()
        let flooded = FakeTable("flooded", endedAt: Array(repeating: now.addingTimeInterval(-1), count: 3000))
        let quiet = FakeTable("quiet", endedAt: Array(repeating: now.addingTimeInterval(-1), count: 10))
        let deleted = await sweeper(
            [flooded.swept(retention: 0, calls: calls), quiet.swept(retention: 0, calls: calls)], calls: calls
        ).sweep()
        XCTAssertEqual(deleted, ["flooded": 3000, "quiet": 10])
        // Round one takes a batch from each; the quiet table is done after it, the flooded one goes on.
        XCTAssertEqual(calls.batches.map(\.table), ["flooded", "quiet", "flooded", "flooded", "flooded"])
    }

    func testAFailingTableIsLoggedAndSweptAgainNextTimeWhileTheOthersGoOn() async {
        let calls = CallLog()
        let logs = MemoryLogSink()
        let broken = FakeTable("broken", endedAt: [now.addingTimeInterval(-5)])
        let fine = FakeTable("fine", endedAt: [now.addingTimeInterval(-5)])
        broken.fail(true)
        let sweeper = sweeper(
            [broken.swept(retention: 0, calls: calls), fine.swept(retention: 0, calls: calls)], calls: calls,
            logs: logs)
        let first = await sweeper.sweep()
        XCTAssertEqual(first, ["broken": 0, "fine": 1])
        XCTAssertEqual(broken.remaining.count, 1)
        XCTAssertTrue(
            logs.lines.contains { $0.contains("event=sweep.failed") && $0.contains("table=broken") }, "\(logs.lines)")
        broken.fail(false)
        let second = await sweeper.sweep()
        XCTAssertEqual(second, ["broken": 1, "fine": 0])
        XCTAssertTrue(broken.remaining.isEmpty)
    }

    func testTheMetricCountsTheRowsDeletedPerTableFromZero() async {
        let calls = CallLog()
        let metrics = MetricsRegistry()
        let busy = FakeTable("busy", endedAt: Array(repeating: now.addingTimeInterval(-1), count: 1234))
        let idle = FakeTable("idle", endedAt: [now.addingTimeInterval(60)])
        let sweeper = sweeper(
            [busy.swept(retention: 0, calls: calls), idle.swept(retention: 0, calls: calls)], calls: calls,
            metrics: metrics)
        let before = metrics.exposition()
        XCTAssertTrue(before.contains(#"sweep_deleted_rows_total{service="test-service",table="busy"} 0"#), before)
        await sweeper.sweep()
        await sweeper.sweep()
        let text = metrics.exposition()
        XCTAssertTrue(text.contains("# TYPE sweep_deleted_rows_total counter"), text)
        XCTAssertTrue(text.contains(#"sweep_deleted_rows_total{service="test-service",table="busy"} 1234"#), text)
        XCTAssertTrue(text.contains(#"sweep_deleted_rows_total{service="test-service",table="idle"} 0"#), text)
    }

    func testRunSweepsEveryIntervalUntilCancelled() async {
        let calls = CallLog()
        let table = FakeTable("challenges", endedAt: [])
        // The third sleep throws, as Task.sleep does when the task is cancelled.
        await sweeper([table.swept(retention: 0, calls: calls)], calls: calls, sleeps: 2).run()
        let batch = CallLog.Event.batch(FakeTable.Call(table: "challenges", cutoff: now, limit: 1000))
        XCTAssertEqual(
            calls.all, [batch, .sleep(.seconds(10)), batch, .sleep(.seconds(10)), batch, .sleep(.seconds(10))])
    }

    func testACancelledTaskStopsBetweenBatches() async {
        let calls = CallLog()
        let table = FakeTable("challenges", endedAt: Array(repeating: now.addingTimeInterval(-1), count: 5000))
        let sweeper = sweeper([table.swept(retention: 0, calls: calls)], calls: calls)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await sweeper.sweep()
        }
        let deleted = await task.value
        XCTAssertEqual(deleted, ["challenges": 0])
        XCTAssertEqual(table.remaining.count, 5000)
        XCTAssertTrue(calls.all.isEmpty)
    }
}
