import RateLimiting
import Synchronization
import XCTest

final class ManualClock: Sendable {
    private let value = Mutex<Double>(1000)
    func advance(by seconds: Double) { value.withLock { $0 += seconds } }
    var now: Double { value.withLock { $0 } }
}

final class TokenBucketLimiterTests: XCTestCase {
    func testBurstThenLimitedWithRetryAfterThenRefills() {
        let clock = ManualClock()
        // 10 per minute, burst 10.
        let limiter = TokenBucketLimiter(ratePerSecond: 10.0 / 60, burst: 10, clock: { clock.now })
        for _ in 0..<10 { XCTAssertEqual(limiter.attempt("ada@example.com"), .allowed) }
        XCTAssertEqual(limiter.attempt("ada@example.com"), .limited(retryAfterSeconds: 6))
        // Other keys are independent.
        XCTAssertEqual(limiter.attempt("grace@example.com"), .allowed)
        clock.advance(by: 5.9)
        XCTAssertEqual(limiter.attempt("ada@example.com"), .limited(retryAfterSeconds: 1))
        clock.advance(by: 0.2)
        XCTAssertEqual(limiter.attempt("ada@example.com"), .allowed)
        XCTAssertEqual(limiter.attempt("ada@example.com"), .limited(retryAfterSeconds: 6))
        clock.advance(by: 3600)
        for _ in 0..<10 { XCTAssertEqual(limiter.attempt("ada@example.com"), .allowed) }
        XCTAssertNotEqual(limiter.attempt("ada@example.com"), .allowed)
    }

    func testKeyTableIsBounded() {
        let clock = ManualClock()
        let limiter = TokenBucketLimiter(ratePerSecond: 1, burst: 2, maximumKeys: 100, clock: { clock.now })
        for index in 0..<10_000 {
            _ = limiter.attempt("client-\(index)")
            clock.advance(by: 0.0001)
        }
        XCTAssertLessThanOrEqual(limiter.trackedKeys, 100)
        // A limited key that is still tracked stays limited.
        _ = limiter.attempt("hot")
        _ = limiter.attempt("hot")
        XCTAssertNotEqual(limiter.attempt("hot"), .allowed)
    }

    func testAFloodOfFreshKeysDoesNotResetAVictimsBucket() {
        let clock = ManualClock()
        // 10 per minute, burst 10, as the password limit per email; a small table.
        let limiter = TokenBucketLimiter(ratePerSecond: 10.0 / 60, burst: 10, maximumKeys: 1000, clock: { clock.now })
        for _ in 0..<10 { XCTAssertEqual(limiter.attempt("victim@example.com"), .allowed) }
        XCTAssertNotEqual(limiter.attempt("victim@example.com"), .allowed)
        // Fresh keys, ten times the table, over ten seconds: far less than the victim's minute of refill.
        for index in 0..<10_000 {
            _ = limiter.attempt("flood-\(index)@example.com")
            clock.advance(by: 0.001)
        }
        XCTAssertEqual(limiter.trackedKeys, 1000)
        XCTAssertGreaterThan(limiter.overflowAttempts, 8000)
        // The victim's debt is still there: ten seconds refilled one token and a half, not the burst.
        XCTAssertEqual(limiter.attempt("victim@example.com"), .allowed)
        XCTAssertNotEqual(limiter.attempt("victim@example.com"), .allowed)
        // The flood shared one bucket of one key's burst: the keys that found the table full are limited together.
        XCTAssertNotEqual(limiter.attempt("newcomer@example.com"), .allowed)
    }

    func testOnlyRefilledBucketsMakeRoomAndTheSweepIsPacedWhileTheTableIsFull() {
        let clock = ManualClock()
        // One per second, burst 2: a drained bucket refills in two seconds.
        let limiter = TokenBucketLimiter(
            ratePerSecond: 1, burst: 2, maximumKeys: 10, minimumSweepInterval: 5, clock: { clock.now })
        XCTAssertEqual(limiter.attempt("key-0"), .allowed)
        for index in 1..<10 {
            XCTAssertEqual(limiter.attempt("key-\(index)"), .allowed)
            XCTAssertEqual(limiter.attempt("key-\(index)"), .allowed)
        }
        clock.advance(by: 0.9)
        XCTAssertEqual(limiter.attempt("key-0"), .allowed)
        // Every bucket holds a debt: a new key shares the overflow bucket.
        XCTAssertEqual(limiter.attempt("late-1"), .allowed)
        XCTAssertEqual(limiter.overflowAttempts, 1)
        // At 1.1 s key-0 would have refilled had it not been used again: the sweep finds no bucket to drop.
        clock.advance(by: 0.2)
        XCTAssertEqual(limiter.attempt("late-2"), .allowed)
        XCTAssertEqual(limiter.overflowAttempts, 2)
        XCTAssertEqual(limiter.trackedKeys, 10)
        // Every bucket has refilled by 2 s, but the next sweep waits out its interval: still the overflow bucket.
        clock.advance(by: 1.9)
        XCTAssertEqual(limiter.attempt("late-3"), .allowed)
        XCTAssertEqual(limiter.overflowAttempts, 3)
        // After the interval the refilled buckets go, and new keys get buckets of their own.
        clock.advance(by: 3.2)
        XCTAssertEqual(limiter.attempt("late-4"), .allowed)
        XCTAssertEqual(limiter.overflowAttempts, 3)
        XCTAssertEqual(limiter.trackedKeys, 1)
        // A bucket with a debt survives a sweep; refilled ones around it go.
        for index in 0..<9 { XCTAssertEqual(limiter.attempt("more-\(index)"), .allowed) }
        clock.advance(by: 5)
        XCTAssertEqual(limiter.attempt("late-4"), .allowed)
        XCTAssertEqual(limiter.attempt("late-4"), .allowed)
        XCTAssertEqual(limiter.attempt("late-5"), .allowed)
        XCTAssertEqual(limiter.trackedKeys, 2)
        XCTAssertNotEqual(limiter.attempt("late-4"), .allowed)
    }

    func testMonotonicClockAdvances() {
        let first = TokenBucketLimiter.monotonicSeconds()
        let second = TokenBucketLimiter.monotonicSeconds()
        XCTAssertGreaterThanOrEqual(second, first)
        XCTAssertGreaterThan(first, 0)
    }
}
