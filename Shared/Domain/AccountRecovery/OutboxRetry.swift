import Foundation

/// When a message whose delivery failed is tried again: exponential backoff from one second, capped at a minute.
/// A message is given up when its code has expired (see `OutboxMessage.expiresAt`) or after `maximumAttempts`.
public enum OutboxRetry {
    /// Attempts before a message is given up.
    public static let maximumAttempts = 12
    /// The longest wait between two attempts.
    public static let maximumDelay: TimeInterval = 60

    /// The wait after the `attempt`-th failed attempt (1-based).
    public static func delay(afterAttempt attempt: Int) -> TimeInterval {
        min(maximumDelay, pow(2, Double(max(0, min(attempt, 16) - 1))))
    }
}
