import Glibc
import Synchronization

/// Token buckets keyed by a string (an email, a client address), with a bounded number of keys.
///
/// Each key refills at `ratePerSecond` up to `burst`. Time comes from an injected monotonic clock in seconds, so
/// tests need no sleeping. When the table is full, the bucket that was touched longest ago is dropped: a dropped
/// bucket is a full bucket, so eviction can only make the limiter more lenient for that key, never stricter.
public final class TokenBucketLimiter: Sendable {
    /// The outcome of one attempt.
    public enum Decision: Equatable, Sendable {
        case allowed
        /// Try again after this many seconds (rounded up to whole seconds for `Retry-After`).
        case limited(retryAfterSeconds: Int)
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: Double
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
    }

    public let ratePerSecond: Double
    public let burst: Double
    public let maximumKeys: Int
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    public init(
        ratePerSecond: Double, burst: Double, maximumKeys: Int = 100_000,
        clock now: @escaping @Sendable () -> Double = TokenBucketLimiter.monotonicSeconds
    ) {
        precondition(ratePerSecond > 0 && burst >= 1 && maximumKeys > 0)
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.maximumKeys = maximumKeys
        self.now = now
    }

    /// Takes one token for `key` if there is one.
    public func attempt(_ key: String) -> Decision {
        let time = now()
        return state.withLock { state in
            var bucket = state.buckets[key] ?? Bucket(tokens: burst, updatedAt: time)
            bucket.tokens = min(burst, bucket.tokens + max(0, time - bucket.updatedAt) * ratePerSecond)
            bucket.updatedAt = time
            let decision: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                decision = .allowed
            } else {
                let wait = (1 - bucket.tokens) / ratePerSecond
                decision = .limited(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
            }
            if state.buckets[key] == nil && state.buckets.count >= maximumKeys { evict(&state, at: time) }
            state.buckets[key] = bucket
            return decision
        }
    }

    /// How many keys are tracked.
    public var trackedKeys: Int { state.withLock { $0.buckets.count } }

    private func evict(_ state: inout State, at time: Double) {
        // First drop buckets that have refilled completely: they carry no information. If that frees too little,
        // drop the least recently touched tenth, so a flood of new keys costs amortized O(log n) per key.
        let refillTime = burst / ratePerSecond
        state.buckets = state.buckets.filter { time - $0.value.updatedAt < refillTime }
        guard state.buckets.count > maximumKeys * 9 / 10 else { return }
        let excess = state.buckets.count - maximumKeys * 9 / 10
        for (key, _) in state.buckets.sorted(by: { $0.value.updatedAt < $1.value.updatedAt }).prefix(excess) {
            state.buckets.removeValue(forKey: key)
        }
    }

    /// Seconds from the system's monotonic clock.
    @Sendable public static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }
}
