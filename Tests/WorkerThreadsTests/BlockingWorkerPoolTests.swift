import Foundation
import Synchronization
import WorkerThreads
import XCTest

final class BlockingWorkerPoolTests: XCTestCase {
    func testJobsRunOnPoolThreadsWithTheirOwnState() async throws {
        let pool = BlockingWorkerPool<[String]>(name: "test", threadCount: 2) { [] }
        defer { pool.shutdown() }
        let names = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await pool.run { state in
                        state.append("job \(index)")
                        return Thread.current.name ?? ""
                    }
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        XCTAssertTrue(names.isSubset(of: ["test-0", "test-1"]), "\(names)")
        XCTAssertFalse(names.isEmpty)
    }

    func testErrorsAreRethrownToTheCaller() async {
        struct Failed: Error {}
        let pool = BlockingWorkerPool<Void>(name: "test", threadCount: 1) { () }
        defer { pool.shutdown() }
        do {
            _ = try await pool.run { _ -> Int in throw Failed() }
            XCTFail("no error")
        } catch {
            XCTAssertTrue(error is Failed)
        }
    }

    func testAFullQueueRefusesAtOnce() async throws {
        let pool = BlockingWorkerPool<Void>(name: "test", threadCount: 1, maximumQueueLength: 2) { () }
        defer { pool.shutdown() }
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        // Occupy the only thread, then fill the queue.
        let blocker = Task { try await pool.run { _ in started.signal(); gate.wait() } }
        started.wait()
        let queued = (0..<2).map { _ in Task { try await pool.run { _ in } } }
        while pool.queuedCount < 2 { try await Task.sleep(for: .milliseconds(1)) }
        do {
            try await pool.run { _ in }
            XCTFail("a job was accepted beyond the queue limit")
        } catch let failure as BlockingWorkerPool<Void>.Failure {
            XCTAssertEqual(failure, .queueFull)
        }
        gate.signal()
        try await blocker.value
        for task in queued { try await task.value }
    }

    func testShutdownRefusesNewJobs() async {
        let pool = BlockingWorkerPool<Void>(name: "test", threadCount: 1) { () }
        pool.shutdown()
        do {
            try await pool.run { _ in }
            XCTFail("ran after shutdown")
        } catch let failure as BlockingWorkerPool<Void>.Failure {
            XCTAssertEqual(failure, .closed)
        } catch {
            XCTFail("\(error)")
        }
    }
}
