import Domain
import Foundation

/// A session's refresh state as stored, read for one presented token.
public struct RefreshState: Sendable {
    /// The session (its `refreshDigest` is the current token's).
    public let session: AuthenticationSession
    /// The current token's generation.
    public let generation: UInt32
    /// When the current token was issued.
    public let refreshedAt: Date
    /// Whether the account is disabled.
    public let accountDisabled: Bool
    /// The account's display name.
    public let displayName: String
    /// The replaced token of the presented generation, when the presented one is older than the current.
    public let replaced: ReplacedRefreshToken?

    /// A state as read.
    public init(
        session: AuthenticationSession, generation: UInt32, refreshedAt: Date, accountDisabled: Bool,
        displayName: String, replaced: ReplacedRefreshToken?
    ) {
        self.session = session
        self.generation = generation
        self.refreshedAt = refreshedAt
        self.accountDisabled = accountDisabled
        self.displayName = displayName
        self.replaced = replaced
    }
}

/// A refresh token that a refresh replaced.
public struct ReplacedRefreshToken: Sendable {
    /// Its generation.
    public let generation: UInt32
    /// SHA-256 of its secret.
    public let digest: [UInt8]
    /// When it was replaced.
    public let rotatedAt: Date
    /// Its successor, sealed for its holder.
    public let successorSealed: [UInt8]

    /// A replaced token as stored.
    public init(generation: UInt32, digest: [UInt8], rotatedAt: Date, successorSealed: [UInt8]) {
        self.generation = generation
        self.digest = digest
        self.rotatedAt = rotatedAt
        self.successorSealed = successorSealed
    }
}

/// Where refresh state is kept (`authentication_sessions` and `session_refresh_tokens`).
public protocol SessionRefreshRepository: Sendable {
    /// The refresh state of `sessionID` with, when `generation` is older than the current one, that generation's
    /// replaced token; nil when there is no such session or it has no refresh tokens.
    func refreshState(sessionID: SessionID, generation: UInt32) async throws -> RefreshState?
    /// Moves the session from `generation` to the next one whose digest is `nextDigest`, keeping the replaced token
    /// (`replacedDigest`, with its successor sealed) in the history; false when the session is no longer at
    /// `generation` (a concurrent refresh won) or no longer live.
    func rotate(
        sessionID: SessionID, from generation: UInt32, replacedDigest: [UInt8], nextDigest: [UInt8],
        successorSealed: [UInt8], at now: Date
    ) async throws -> Bool
    /// Ends the session because a replaced refresh token came back after the reuse window; stores the audit event
    /// (`audit.session.refresh_reused`, which webhooks subscribe to) in the same statement. False when it had ended.
    func endForReuse(sessionID: SessionID, generation: UInt32, at now: Date) async throws -> Bool
}

/// What a presented refresh token leads to: the pure decision over its stored state.
public enum RefreshDecision: Equatable, Sendable {
    /// The current token: rotate to the next generation.
    case rotate
    /// The token just replaced, repeated within the reuse window: give out its successor again.
    case repeatSuccessor
    /// A replaced token after the window (or an older one): the session ends.
    case reuseDetected
    /// The session is revoked, expired, idle for too long, or its account is disabled.
    case ended
    /// Not a token of this session.
    case invalid

    /// The decision for `presented` against `state` at `now`.
    public static func decide(
        _ presented: RefreshTokens.Presented, state: RefreshState?, now: Date, idleTimeout: TimeInterval,
        reuseWindow: TimeInterval
    ) -> RefreshDecision {
        guard let state, let current = state.session.refreshDigest else { return .invalid }
        let genuine: Bool
        if presented.generation == state.generation {
            genuine = RefreshTokens.matches(current, presented.digest)
        } else if let replaced = state.replaced, replaced.generation == presented.generation {
            genuine = RefreshTokens.matches(replaced.digest, presented.digest)
        } else {
            genuine = false
        }
        guard genuine else { return .invalid }
        let live =
            state.session.isLive(at: now) && !state.accountDisabled
            && now < state.refreshedAt.addingTimeInterval(idleTimeout)
        guard live else { return .ended }
        if presented.generation == state.generation { return .rotate }
        if let replaced = state.replaced, replaced.generation + 1 == state.generation,
            now.timeIntervalSince(replaced.rotatedAt) <= reuseWindow
        {
            return .repeatSuccessor
        }
        return .reuseDetected
    }
}
