import Synchronization

/// Lets one log line per key through per interval, counting the ones held back.
public final class LogThrottle: Sendable {
    private let interval: Double
    private let state = Mutex<[String: (last: Double, suppressed: Int)]>([:])

    public init(interval: Double) { self.interval = interval }

    /// The number of lines held back since the last one for `key`, or nil when this one is held back too.
    public func admit(_ key: String, at time: Double) -> Int? {
        state.withLock { entries -> Int? in
            if let entry = entries[key], time - entry.last < interval {
                entries[key] = (entry.last, entry.suppressed + 1)
                return nil
            }
            let suppressed = entries[key]?.suppressed ?? 0
            entries[key] = (time, 0)
            return suppressed
        }
    }
}
