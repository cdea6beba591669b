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

    func testMonotonicClockAdvances() {
        let first = TokenBucketLimiter.monotonicSeconds()
        let second = TokenBucketLimiter.monotonicSeconds()
        XCTAssertGreaterThanOrEqual(second, first)
        XCTAssertGreaterThan(first, 0)
    }
}
