import Glibc
import Synchronization

/// Token buckets keyed by a string (an email, a client address), with a bounded number of keys.
///
/// Each key refills at `ratePerSecond` up to `burst`. Time comes from an injected monotonic clock in seconds, so
/// tests need no sleeping.
///
/// A full table never forgets a debt: only buckets that have refilled completely are dropped (a dropped bucket comes
/// back full, so dropping one that is full gives its key nothing). When every tracked bucket still holds a debt, a
/// new key is not tracked: it shares one overflow bucket, of one key's rate and burst, with every other key that
/// finds the table full. So a flood of fresh keys (made-up emails, addresses) cannot flush a victim's bucket and
/// hand back its burst; what the flood costs falls on the keys that arrive during it.
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
        /// The bucket shared by the keys that found the table full; nil until one did.
        var overflow: Bucket?
        /// No tracked bucket is full before this time (a lower bound: a bucket's refill time only moves later as it
        /// is used, and each new bucket lowers it to its own).
        var earliestFullAt = -Double.infinity
        var lastSweepAt = -Double.infinity
        var overflowAttempts = 0
    }

    public let ratePerSecond: Double
    public let burst: Double
    public let maximumKeys: Int
    /// The least time between two sweeps of a full table for refilled buckets, each a pass over every key: while a
    /// flood keeps the table full, the sweeps cost one pass per interval, not one per new key.
    public let minimumSweepInterval: Double
    private let now: @Sendable () -> Double
    private let state = Mutex(State())

    public init(
        ratePerSecond: Double, burst: Double, maximumKeys: Int = 100_000, minimumSweepInterval: Double = 1,
        clock now: @escaping @Sendable () -> Double = TokenBucketLimiter.monotonicSeconds
    ) {
        precondition(ratePerSecond > 0 && burst >= 1 && maximumKeys > 0 && minimumSweepInterval >= 0)
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.maximumKeys = maximumKeys
        self.minimumSweepInterval = minimumSweepInterval
        self.now = now
    }

    /// Takes one token for `key` if there is one: from its own bucket, or from the shared overflow bucket when the
    /// key is new and the table is full of buckets that still hold a debt.
    public func attempt(_ key: String) -> Decision {
        let time = now()
        return state.withLock { state in
            if state.buckets[key] == nil && state.buckets.count >= maximumKeys {
                if time >= max(state.earliestFullAt, state.lastSweepAt + minimumSweepInterval) {
                    sweep(&state, at: time)
                }
                if state.buckets.count >= maximumKeys {
                    state.overflowAttempts += 1
                    var overflow = state.overflow ?? Bucket(tokens: burst, updatedAt: time)
                    let decision = take(from: &overflow, at: time)
                    state.overflow = overflow
                    return decision
                }
            }
            let isNew = state.buckets[key] == nil
            var bucket = state.buckets[key] ?? Bucket(tokens: burst, updatedAt: time)
            let decision = take(from: &bucket, at: time)
            state.buckets[key] = bucket
            if isNew { state.earliestFullAt = min(state.earliestFullAt, fullAt(bucket)) }
            return decision
        }
    }

    /// How many keys are tracked (the overflow bucket is not one).
    public var trackedKeys: Int { state.withLock { $0.buckets.count } }

    /// How many attempts have been counted against the overflow bucket: nonzero only when the table was full.
    public var overflowAttempts: Int { state.withLock { $0.overflowAttempts } }

    private func take(from bucket: inout Bucket, at time: Double) -> Decision {
        bucket.tokens = min(burst, bucket.tokens + max(0, time - bucket.updatedAt) * ratePerSecond)
        bucket.updatedAt = max(bucket.updatedAt, time)
        guard bucket.tokens >= 1 else {
            let wait = (1 - bucket.tokens) / ratePerSecond
            return .limited(retryAfterSeconds: max(1, Int(wait.rounded(.up))))
        }
        bucket.tokens -= 1
        return .allowed
    }

    /// When the bucket will have refilled completely, if nobody touches it.
    private func fullAt(_ bucket: Bucket) -> Double {
        bucket.updatedAt + (burst - bucket.tokens) / ratePerSecond
    }

    /// Drops the buckets that have refilled completely, and notes when the first of the others will have.
    private func sweep(_ state: inout State, at time: Double) {
        var earliest = Double.infinity
        state.buckets = state.buckets.filter { _, bucket in
            let full = fullAt(bucket)
            guard full > time else { return false }
            earliest = min(earliest, full)
            return true
        }
        state.earliestFullAt = earliest
        state.lastSweepAt = time
    }

    /// Seconds from the system's monotonic clock.
    @Sendable public static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }
}
