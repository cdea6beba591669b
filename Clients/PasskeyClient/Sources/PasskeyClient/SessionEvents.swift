import Foundation

/// What happened to the session the client holds, for the app to follow (``PasskeyAPIClient/sessionEvents()``):
/// typically to show the sign-in screen on ``signedOut(reason:)``.
public enum SessionEvent: Sendable, Equatable {
    /// The client refreshed the access token by itself and stored the new tokens.
    case refreshed
    /// The client removed the stored tokens: the session is over, or the app signed out.
    case signedOut(reason: SignedOutReason)
}

/// Why the client removed the session's tokens. The gateway's reasons are kept as sent, unknown ones included.
public struct SignedOutReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The app signed out (``SignOutOperation``).
    public static let signedOut = SignedOutReason(rawValue: "signed_out")
    /// A refresh token that had been replaced was presented again (a stolen copy, or a refresh repeated after the
    /// reuse window): the gateway ended the session.
    public static let refreshTokenReused = SignedOutReason(rawValue: "refresh_token_reused")
    /// The gateway does not know the refresh token.
    public static let refreshTokenInvalid = SignedOutReason(rawValue: "refresh_token_invalid")
    /// The session was revoked, expired, idle for too long, or its account was disabled.
    public static let sessionEnded = SignedOutReason(rawValue: "session_ended")
    /// The gateway refused the access token (`unauthenticated`) and there was no refresh token to get another, or a
    /// new one was refused too.
    public static let accessTokenRefused = SignedOutReason(rawValue: "access_token_refused")

    /// The reason of a refresh that failed with 401: the problem's `reason`, else ``sessionEnded``.
    init(refreshFailure error: PasskeyClientError) {
        self = error.reason.map { SignedOutReason(rawValue: $0.rawValue) } ?? .sessionEnded
    }
}

/// Hands each event to every stream that is being listened to. Events happen while nobody listens are dropped, and
/// a slow listener keeps only the latest ones.
final class SessionEventBroadcaster: @unchecked Sendable {
    // @unchecked: `listeners` and `nextID` are only read and written while `lock` is held; the continuations are
    // Sendable.
    private let lock = NSLock()
    private var listeners: [Int: AsyncStream<SessionEvent>.Continuation] = [:]
    private var nextID = 0

    /// How many events a listener that does not keep up may have waiting.
    static let buffered = 32

    func stream() -> AsyncStream<SessionEvent> {
        var continuation: AsyncStream<SessionEvent>.Continuation?
        let stream = AsyncStream(SessionEvent.self, bufferingPolicy: .bufferingNewest(Self.buffered)) {
            continuation = $0
        }
        guard let continuation else { return stream }
        lock.lock()
        let id = nextID
        nextID += 1
        listeners[id] = continuation
        lock.unlock()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return stream
    }

    func yield(_ event: SessionEvent) {
        lock.lock()
        let current = Array(listeners.values)
        lock.unlock()
        for listener in current { listener.yield(event) }
    }

    private func remove(_ id: Int) {
        lock.lock()
        listeners[id] = nil
        lock.unlock()
    }

    deinit {
        for listener in listeners.values { listener.finish() }
    }
}

/// Refreshes one refresh token at a time: every caller that asks for the same token's refresh while it runs gets
/// its result, so concurrent calls across an expiry send one refresh between them.
actor SingleFlightRefresh {
    private var running: (refreshToken: String, task: Task<AccessToken?, any Error>)?

    /// The result of `refresh(seen)`, shared with every caller asking about the same refresh token meanwhile.
    /// `refresh` reads the store again first, so a caller that read the tokens before an earlier refresh finished
    /// gets that refresh's tokens rather than a second refresh.
    func refreshed(
        from seen: AccessToken, by refresh: @escaping @Sendable (AccessToken) async throws -> AccessToken?
    ) async throws -> AccessToken? {
        guard let refreshToken = seen.refreshToken else { return seen }
        if let running, running.refreshToken == refreshToken { return try await running.task.value }
        let task = Task { try await refresh(seen) }
        running = (refreshToken, task)
        let result = await task.result
        if running?.refreshToken == refreshToken { running = nil }
        return try result.get()
    }
}
