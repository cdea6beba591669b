import Foundation
import Synchronization
import WorkerThreads
import XCTest

final class BlockingWorkerPoolTests: XCTestCase {
    func testJobsRunOnPoolThreadsWithTheirOwnState() async throws {
        let pool = BlockingWorkerPool<[Int]>(name: "test", threadCount: 2) { [] }
        defer { pool.shutdown() }
        // Each job reports the thread it ran on and how many jobs that thread's state has seen.
        let runs = try await withThrowingTaskGroup(of: (thread: UInt, seen: Int).self) { group in
            for index in 0..<20 {
                group.addTask {
                    try await pool.run { state in
                        state.append(index)
                        return (UInt(bitPattern: Int(bitPattern: pthread_self())), state.count)
                    }
                }
            }
            return try await group.reduce(into: [(thread: UInt, seen: Int)]()) { $0.append($1) }
        }
        let byThread = Dictionary(grouping: runs, by: \.thread)
        XCTAssertLessThanOrEqual(byThread.count, 2, "more threads than the pool has")
        // A state that stays with its thread counts 1, 2, 3, … there.
        for (_, jobs) in byThread {
            XCTAssertEqual(jobs.map(\.seen).sorted(), Array(1...jobs.count))
        }
        XCTAssertEqual(runs.count, 20)
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
        let blocker = Task {
            try await pool.run { _ in
                started.signal()
                gate.wait()
            }
        }
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
