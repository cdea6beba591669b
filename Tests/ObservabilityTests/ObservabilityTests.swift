import Foundation
import Observability
import XCTest

final class LoggerTests: XCTestCase {
    func testLinesAreKeyValueWithServiceAndEvent() {
        let sink = MemoryLogSink()
        let logger = Logger(service: "verification-service", sink: sink, clock: { Date(timeIntervalSince1970: 0) })
            .with(["request.id": "r-1"])
        logger.info("registration.failed", ["reason": "user_present_flag_not_set", "detail": "UP flag \"0\"\nnext"])
        XCTAssertEqual(
            sink.lines,
            [
                "ts=1970-01-01T00:00:00.000Z level=info service=verification-service request.id=r-1 "
                    + "event=registration.failed reason=user_present_flag_not_set detail=\"UP flag \\\"0\\\"\\nnext\""
            ])
    }

    func testControlCharactersAreEscapedAndOtherTextPassesThrough() {
        let sink = MemoryLogSink()
        Logger(service: "s", sink: sink, clock: { Date(timeIntervalSince1970: 0) })
            .info("e", ["bell": "a\u{07}b\u{7F}", "name": "Zoë 日本", "path": "a=b\\c\tx", "empty": ""])
        XCTAssertEqual(
            sink.lines,
            [
                "ts=1970-01-01T00:00:00.000Z level=info service=s event=e bell=\"a\\u0007b\\u007f\" "
                    + "name=\"Zoë 日本\" path=\"a=b\\\\c\\tx\" empty=\"\""
            ])
    }

    func testTimestampsAreRFC3339UTCWithMilliseconds() {
        let cases: [(TimeInterval, String)] = [
            (1_795_984_459.2149, "2026-11-29T20:34:19.214Z"), (951_782_400.007, "2000-02-29T00:00:00.007Z"),
            (4_102_444_799.999, "2099-12-31T23:59:59.999Z"),
        ]
        for (seconds, expected) in cases {
            let sink = MemoryLogSink()
            Logger(service: "s", sink: sink, clock: { Date(timeIntervalSince1970: seconds) }).info("e")
            XCTAssertEqual(sink.lines, ["ts=\(expected) level=info service=s event=e"])
        }
    }

    func testLevelsBelowTheMinimumAreDropped() {
        let sink = MemoryLogSink()
        let logger = Logger(service: "s", minimumLevel: .warning, sink: sink)
        logger.info("quiet")
        logger.debug("quieter")
        logger.error("loud")
        XCTAssertEqual(sink.lines.count, 1)
        XCTAssertTrue(sink.lines[0].contains("level=error"))
    }
}

final class MetricsTests: XCTestCase {
    /// Every label set is its own series, however its bytes could be regrouped, and counts land on the right one.
    func testEachLabelSetCountsSeparately() {
        let metrics = MetricsRegistry()
        for round in 1...3 {
            for index in 0..<200 {
                metrics.increment("calls_total", help: "Calls.", labels: ["route": "r\(index)", "status": "200"])
            }
            metrics.increment("split_total", help: "Split.", labels: ["a": "bc"], by: Double(round))
            metrics.increment("split_total", help: "Split.", labels: ["a": "b", "c": ""], by: 10)
        }
        let lines = metrics.exposition().split(separator: "\n")
        XCTAssertTrue(lines.contains(#"calls_total{route="r0",status="200"} 3"#))
        XCTAssertTrue(lines.contains(#"calls_total{route="r199",status="200"} 3"#))
        XCTAssertEqual(lines.filter { $0.hasPrefix("calls_total{") }.count, 200)
        XCTAssertTrue(lines.contains(#"split_total{a="bc"} 6"#))
        XCTAssertTrue(lines.contains(#"split_total{a="b",c=""} 30"#))
    }

    func testExpositionOfCountersGaugesAndHistograms() {
        let metrics = MetricsRegistry()
        metrics.increment("rpc_requests_total", help: "RPCs handled.", labels: ["method": "Begin", "code": "0"])
        metrics.increment("rpc_requests_total", help: "RPCs handled.", labels: ["method": "Begin", "code": "0"])
        metrics.set("db_pool_busy", help: "Busy connections.", to: 3)
        metrics.observe("latency_seconds", help: "Latency.", labels: ["route": "a\"b"], 0.003, buckets: [0.001, 0.01])
        metrics.observe("latency_seconds", help: "Latency.", labels: ["route": "a\"b"], 5, buckets: [0.001, 0.01])
        XCTAssertEqual(
            metrics.exposition(),
            """
            # HELP db_pool_busy Busy connections.
            # TYPE db_pool_busy gauge
            db_pool_busy 3
            # HELP latency_seconds Latency.
            # TYPE latency_seconds histogram
            latency_seconds_bucket{route="a\\"b",le="0.001"} 0
            latency_seconds_bucket{route="a\\"b",le="0.01"} 1
            latency_seconds_bucket{route="a\\"b",le="+Inf"} 2
            latency_seconds_sum{route="a\\"b"} 5.003
            latency_seconds_count{route="a\\"b"} 2
            # HELP rpc_requests_total RPCs handled.
            # TYPE rpc_requests_total counter
            rpc_requests_total{method="Begin",code="0"} 2

            """)
    }

    func testConcurrentUpdatesAreAllCounted() async {
        let metrics = MetricsRegistry()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<1000 { metrics.increment("n", help: "n") } }
            }
        }
        XCTAssertTrue(metrics.exposition().contains("\nn 8000\n"))
    }
}
