import Foundation

/// The verifier's two times: the wall clock that tokens' `exp`, `nbf` and `iat` are compared with, and a monotonic
/// clock for the key set's cache lifetime and refetch rate. Tests give one they move by hand.
public protocol SessionVerifierClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// The current monotonic time.
    var instant: ContinuousClock.Instant { get }
}

/// The system's clocks.
public struct SystemSessionVerifierClock: SessionVerifierClock {
    /// The system's clocks.
    public init() {}

    public var now: Date { Date() }
    public var instant: ContinuousClock.Instant { .now }
}
