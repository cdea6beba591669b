import Synchronization
import XCTest

@testable import NetworkIO

final class NetworkIOTests: XCTestCase {
    func testSocketAddressParsing() {
        XCTAssertEqual(SocketAddress(parsing: "127.0.0.1:8080"), SocketAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(SocketAddress(parsing: "[::1]:443"), SocketAddress(host: "::1", port: 443))
        XCTAssertEqual(SocketAddress(parsing: "localhost:1"), SocketAddress(host: "127.0.0.1", port: 1))
        XCTAssertEqual(SocketAddress(host: "::1", port: 443).description, "[::1]:443")
        for bad in ["", "127.0.0.1", ":80", "1.2.3.4:99999", "[::1]", "[::1:80", "host:port"] {
            XCTAssertNil(SocketAddress(parsing: bad), bad)
        }
    }

    func testByteQueue() {
        var queue = ByteQueue()
        queue.append(contentsOf: [1, 2, 3, 4, 5])
        XCTAssertEqual(queue.read(2), [1, 2])
        XCTAssertNil(queue.read(4))
        queue.consume(1)
        XCTAssertEqual(queue.count, 2)
        queue.withUnreadBytes { XCTAssertEqual(Array($0), [4, 5]) }
        queue.consume(10)
        XCTAssertTrue(queue.isEmpty)
    }

    func testByteQueueTakesArraysOver() {
        var queue = ByteQueue()
        queue.append([1, 2, 3])
        queue.append([4])
        queue.consume(1)
        queue.withUnreadBytes { XCTAssertEqual(Array($0), [2, 3, 4]) }
        queue.consume(3)
        queue.append([9])
        XCTAssertEqual(queue.read(1), [9])
        XCTAssertTrue(queue.isEmpty)
    }

    func testTimersFireInOrderAndCancel() throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let fired = Mutex<[Int]>([])
        let done = expectation(description: "timers")
        loop.execute {
            loop.scheduleTimer(afterNanoseconds: 30_000_000) {
                fired.withLock { $0.append(3) }
                done.fulfill()
            }
            let cancelled = loop.scheduleTimer(afterNanoseconds: 10_000_000) { fired.withLock { $0.append(99) } }
            loop.scheduleTimer(afterNanoseconds: 20_000_000) { fired.withLock { $0.append(2) } }
            loop.scheduleTimer(afterNanoseconds: 5_000_000) { fired.withLock { $0.append(1) } }
            loop.cancelTimer(cancelled)
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(fired.withLock { $0 }, [1, 2, 3])
    }

    /// Re-arming a long timer for every request, as connections do, must not leave a dead heap entry each time; and
    /// dropping the dead entries must keep every live timer. (Firing order is covered by the test above.)
    func testCancelledTimersDoNotAccumulateAndEveryLiveOneStillFires() throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let fired = Mutex<[Int]>([])
        let entries = Mutex<Int>(0)
        let done = expectation(description: "live timers")
        done.expectedFulfillmentCount = 10
        loop.execute {
            for round in 0..<10_000 {
                let timer = loop.scheduleTimer(afterNanoseconds: 60_000_000_000) { fired.withLock { $0.append(-1) } }
                if round % 1000 == 0 {
                    loop.scheduleTimer(afterNanoseconds: 20_000_000) {
                        fired.withLock { $0.append(round / 1000) }
                        done.fulfill()
                    }
                }
                loop.cancelTimer(timer)
            }
            entries.withLock { $0 = loop.timerEntryCount }
        }
        wait(for: [done], timeout: 10)
        XCTAssertLessThanOrEqual(entries.withLock { $0 }, 64, "dead entries were dropped")
        XCTAssertEqual(fired.withLock { $0 }.sorted(), Array(0..<10), "every live timer fired, no cancelled one")
    }

    func testTimerHeapPopsInDeadlineOrderAfterRemovals() {
        var heap = TimerHeap()
        var expected: [(UInt64, UInt64)] = []
        for id in 1...500 as ClosedRange<UInt64> {
            let deadline = UInt64.random(in: 0..<1_000)
            heap.push(deadline: deadline, id: id)
            if id % 3 != 0 { expected.append((deadline, id)) }
        }
        heap.removeAll { $0 % 3 == 0 }
        XCTAssertEqual(heap.count, expected.count)
        var deadlines: [UInt64] = []
        var ids = Set<UInt64>()
        while let deadline = heap.peekDeadline() {
            deadlines.append(deadline)
            ids.insert(heap.pop())
        }
        XCTAssertEqual(deadlines, expected.map(\.0).sorted())
        XCTAssertEqual(ids, Set(expected.map(\.1)))
    }

    func testAPortInUseIsRefusedEvenThoughTheListenerUsesReusePort() throws {
        let group = try EventLoopGroup(threadCount: 2)
        defer { group.shutdown() }
        let first = try TCPListener(group: group, address: SocketAddress(host: "127.0.0.1", port: 0)) { _ in
            IgnoringHandler()
        }
        let taken = first.localAddress
        XCTAssertNotEqual(taken.port, 0)
        XCTAssertThrowsError(
            try TCPListener(group: group, address: taken) { _ in IgnoringHandler() },
            "a second listener silently shared the port")
        first.close()
        // Closing happens on the loops; the port is free again soon after.
        var second: TCPListener?
        for _ in 0..<50 where second == nil {
            second = try? TCPListener(group: group, address: taken) { _ in IgnoringHandler() }
            if second == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        XCTAssertNotNil(second, "the port was not released by close()")
        second?.close()
    }

    func testExecuteFromManyThreads() throws {
        let group = try EventLoopGroup(threadCount: 1)
        defer { group.shutdown() }
        let loop = group.next()
        let count = Mutex(0)
        let done = expectation(description: "tasks")
        done.expectedFulfillmentCount = 4000
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<1000 {
                loop.execute {
                    XCTAssertTrue(loop.inEventLoop)
                    count.withLock { $0 += 1 }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(count.withLock { $0 }, 4000)
    }
}

private final class IgnoringHandler: ChannelHandler {
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {}
    func channelWillFlush(_ channel: Channel) {}
    func channelInactive(_ channel: Channel, error: NetworkError?) {}
}
