import NetworkIO
import Observability
import RuntimeMetrics
import XCTest

final class ProcessStatisticsTests: XCTestCase {
    func testParsesTheFieldsAfterACommandNameWithSpacesAndParentheses() throws {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
        // priority nice threads itrealvalue starttime vsize rss ...
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 12345 1000000 2048 rest"
        let statistics = try XCTUnwrap(ProcessStatistics.parse(stat: line, ticksPerSecond: 100, pageSize: 4096))
        XCTAssertEqual(statistics.cpuSeconds, 4.0)
        XCTAssertEqual(statistics.residentBytes, 2048 * 4096)
        XCTAssertEqual(statistics.startSecondsAfterBoot, 123.45, accuracy: 1e-9)
    }

    func testRefusesTextThatIsNotAStatLine() {
        XCTAssertNil(ProcessStatistics.parse(stat: "", ticksPerSecond: 100, pageSize: 4096))
        XCTAssertNil(ProcessStatistics.parse(stat: "1 (x) S 1 2 3", ticksPerSecond: 100, pageSize: 4096))
        XCTAssertNil(ProcessStatistics.parse(stat: "no parenthesis at all", ticksPerSecond: 100, pageSize: 4096))
        let line = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 1 0 0 20 0 1 0 5 100 7"
        XCTAssertNil(ProcessStatistics.parse(stat: line, ticksPerSecond: 100, pageSize: 4096))
    }

    func testReadsThisProcess() throws {
        let statistics = try XCTUnwrap(ProcessStatistics.current())
        XCTAssertGreaterThan(statistics.residentBytes, 1_048_576)
        XCTAssertGreaterThan(try XCTUnwrap(ProcessStatistics.openDescriptors()), 2)
        XCTAssertGreaterThan(try XCTUnwrap(ProcessStatistics.bootTime()), 1_500_000_000)
    }

    /// The count follows the descriptors opened and closed, across many directory buffers' worth of entries (the
    /// reading must stop at each entry's own length, never past the kernel's buffer).
    func testCountsEveryOpenDescriptor() throws {
        let before = try XCTUnwrap(ProcessStatistics.openDescriptors())
        var opened: [Int32] = []
        defer { for descriptor in opened { close(descriptor) } }
        for round in 1...8 {
            for _ in 0..<100 {
                var pair: [Int32] = [0, 0]
                XCTAssertEqual(pipe(&pair), 0)
                opened += pair
            }
            // Other threads of the test process open and close a few descriptors meanwhile.
            let counted = try XCTUnwrap(ProcessStatistics.openDescriptors())
            XCTAssertLessThanOrEqual(abs(counted - (before + 200 * round)), 50, "round \(round)")
        }
        for descriptor in opened { close(descriptor) }
        opened = []
        XCTAssertLessThanOrEqual(abs(try XCTUnwrap(ProcessStatistics.openDescriptors()) - before), 50)
    }
}

final class RuntimeProbeTests: XCTestCase {
    func testRecordsTheLagOfEveryRunningLoopAndTheProcess() throws {
        let group = try EventLoopGroup(threadCount: 2, name: "probed")
        defer { group.shutdown() }
        waitUntilRunning(group.loops)
        let metrics = MetricsRegistry()
        let probe = RuntimeProbe(service: "test-service", metrics: metrics)
        // Keep one loop busy for 30 ms right after the probe hands it its task: its lag must show that.
        let busy = expectation(description: "busy")
        group.loops[1].execute {
            usleep(30_000)
            busy.fulfill()
        }
        probe.probeOnce(sampleProcess: true)
        wait(for: [busy], timeout: 5)
        // Both probe tasks have run once the busy loop is free again.
        let settled = expectation(description: "settled")
        group.loops[1].execute { settled.fulfill() }
        wait(for: [settled], timeout: 5)
        let text = metrics.exposition()
        XCTAssertTrue(text.contains(#"event_loop_lag_seconds_count{service="test-service",loop="probed-0"} 1"#), text)
        XCTAssertTrue(text.contains(#"event_loop_lag_seconds_count{service="test-service",loop="probed-1"} 1"#), text)
        // The busy loop's one observation is above 10 ms.
        XCTAssertTrue(
            text.contains(#"event_loop_lag_seconds_bucket{service="test-service",loop="probed-1",le="0.01"} 0"#), text)
        XCTAssertTrue(text.contains(#"process_cpu_seconds_total{service="test-service"}"#), text)
        XCTAssertTrue(text.contains(#"process_resident_memory_bytes{service="test-service"}"#), text)
        XCTAssertTrue(text.contains(#"process_open_fds{service="test-service"}"#), text)
    }

    func testALoopThatStoppedIsNoLongerProbed() throws {
        let group = try EventLoopGroup(threadCount: 1, name: "stopping")
        waitUntilRunning(group.loops)
        XCTAssertTrue(EventLoop.running.contains { $0 === group.loops[0] })
        group.shutdown()
        let deadline = Date().addingTimeInterval(5)
        while EventLoop.running.contains(where: { $0 === group.loops[0] }) && Date() < deadline { usleep(1000) }
        XCTAssertFalse(EventLoop.running.contains { $0 === group.loops[0] })
    }
}

/// Waits until every loop has started running on its thread.
private func waitUntilRunning(_ loops: [EventLoop]) {
    let deadline = Date().addingTimeInterval(5)
    while !loops.allSatisfy({ loop in EventLoop.running.contains { $0 === loop } }) && Date() < deadline {
        usleep(1000)
    }
}
