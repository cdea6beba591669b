import AccessTokens
import Crypto
import Domain
import Foundation
import JSON
import Observability
import SessionIssuance

/// Refreshing a session: a refresh token traded for a new access token and the next refresh token, single-use,
/// with a reuse window for concurrent refreshes and reuse detection that ends the session (docs/sessions.md).
public struct SessionRefreshUseCases: Sendable {
    let repository: any SessionRefreshRepository
    let issuer: SessionIssuer
    let reuseWindow: TimeInterval
    let random: any RandomSource
    let clock: @Sendable () -> Date
    let logger: Logger

    /// Refreshes through `repository`, with `issuer`'s signer and idle timeout.
    public init(
        repository: any SessionRefreshRepository, issuer: SessionIssuer, reuseWindow: TimeInterval,
        random: any RandomSource = SecureRandom(), clock: @escaping @Sendable () -> Date = Date.init, logger: Logger
    ) {
        self.repository = repository
        self.issuer = issuer
        self.reuseWindow = reuseWindow
        self.random = random
        self.clock = clock
        self.logger = logger
    }

    /// The session's new tokens. Throws `unauthenticated` with reason `refresh_token_invalid`,
    /// `refresh_token_reused` (the session has been ended) or `session_ended`.
    public func refresh(_ token: String) async throws -> SessionIssuer.IssuedSession {
        let invalid = DomainError(.unauthenticated, "the refresh token is not valid", reason: "refresh_token_invalid")
        guard let signer = issuer.signer, let presented = RefreshTokens.parse(token) else { throw invalid }
        // A lost race (another refresh of the same token moved the session on) reads again: the second read finds
        // the token replaced moments ago, and hands out the winner's successor.
        for _ in 0..<3 {
            let state = try await repository.refreshState(
                sessionID: presented.sessionID, generation: presented.generation)
            let now = clock()
            switch RefreshDecision.decide(
                presented, state: state, now: now, idleTimeout: issuer.idleTimeout, reuseWindow: reuseWindow)
            {
            case .invalid:
                throw invalid
            case .ended:
                throw DomainError(.unauthenticated, "the session has ended", reason: "session_ended")
            case .reuseDetected:
                let ended = try await repository.endForReuse(
                    sessionID: presented.sessionID, generation: presented.generation, at: now)
                logger.warning(
                    "session.refresh_reused",
                    [
                        "session.id": presented.sessionID.description, "generation": String(presented.generation),
                        "ended": String(ended),
                    ])
                throw DomainError(
                    .unauthenticated, "a replaced refresh token was used again: the session has been ended",
                    reason: "refresh_token_reused")
            case .repeatSuccessor:
                guard let state, let replaced = state.replaced,
                    let successor = RefreshTokens.openSuccessor(replaced.successorSealed, for: presented)
                else { throw invalid }
                return try await issued(
                    state, refreshToken: successor, refreshedAt: replaced.rotatedAt, signer: signer, now: now)
            case .rotate:
                guard let state else { throw invalid }
                let next = RefreshTokens.issue(
                    for: presented.sessionID, generation: presented.generation + 1, random: random)
                let sealed = try RefreshTokens.sealSuccessor(next.token, for: presented)
                if try await repository.rotate(
                    sessionID: presented.sessionID, from: presented.generation, replacedDigest: presented.digest,
                    nextDigest: next.presented.digest, successorSealed: sealed, at: now)
                {
                    return try await issued(state, refreshToken: next.token, refreshedAt: now, signer: signer, now: now)
                }
            }
        }
        throw DomainError(.unavailable, "the session is being refreshed concurrently; try again")
    }

    private func issued(
        _ state: RefreshState, refreshToken: String, refreshedAt: Date, signer: AccessTokenSigner, now: Date
    ) async throws -> SessionIssuer.IssuedSession {
        let (token, expiresAt) = try await signer.sign(state.session, now: now)
        return SessionIssuer.IssuedSession(
            token: token, tokenExpiresAt: expiresAt, refreshToken: refreshToken,
            refreshTokenExpiresAt: issuer.refreshDeadline(of: state.session, refreshedAt: refreshedAt),
            session: state.session, displayName: state.displayName)
    }

    /// The JWKS document of the keys published now; empty keys with opaque tokens.
    public func publishedKeySet() async -> JSONValue {
        guard let signer = issuer.signer else { return JSONWebKey.keySet([]) }
        await signer.ring.waitUntilLoaded()
        return JSONWebKey.keySet(signer.ring.published(at: clock()))
    }
}
