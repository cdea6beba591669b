import Crypto
import Domain
import Foundation

/// Makes new sessions: the tokens for the client and the row that stores only their digests. session-service
/// issues password sessions with it and verification-service passkey sessions, each in the statement that proves
/// the sign-in, so both follow one rule for tokens, identifiers and lifetimes.
///
/// With a ``signer`` a session gets a signed access token (a JWT, see `AccessTokens`) and a refresh token; without
/// one (`PASSKEY_SESSION_TOKENS=opaque`), and always for a recovery session, it gets one opaque bearer token that
/// lives as long as the session.
public struct SessionIssuer: Sendable {
    let random: any RandomSource
    let lifetime: TimeInterval
    let clock: @Sendable () -> Date
    /// Signs access tokens; nil when sessions use opaque bearer tokens.
    public let signer: AccessTokenSigner?
    /// How long a session with refresh tokens lasts without a refresh (`PASSKEY_SESSION_IDLE_TIMEOUT`).
    public let idleTimeout: TimeInterval

    public init(
        random: any RandomSource, lifetime: TimeInterval, clock: @escaping @Sendable () -> Date = Date.init,
        signer: AccessTokenSigner? = nil, idleTimeout: TimeInterval = 7 * 86_400
    ) {
        self.random = random
        self.lifetime = lifetime
        self.clock = clock
        self.signer = signer
        self.idleTimeout = idleTimeout
    }

    /// A session as issued: the tokens exist only here and in the response.
    public struct IssuedSession: Sendable {
        /// The bearer token: a signed access token, or the opaque token of a session without refresh.
        public let token: String
        /// When `token` stops working.
        public let tokenExpiresAt: Date
        /// The refresh token, for a session with signed access tokens.
        public let refreshToken: String?
        /// When the refresh token stops working unless used: the earlier of the idle timeout and the session's end.
        public let refreshTokenExpiresAt: Date?
        public let session: AuthenticationSession
        public let displayName: String

        public init(
            token: String, tokenExpiresAt: Date? = nil, refreshToken: String? = nil, refreshTokenExpiresAt: Date? = nil,
            session: AuthenticationSession, displayName: String
        ) {
            self.token = token
            self.tokenExpiresAt = tokenExpiresAt ?? session.expiresAt
            self.refreshToken = refreshToken
            self.refreshTokenExpiresAt = refreshTokenExpiresAt
            self.session = session
            self.displayName = displayName
        }
    }

    /// A new session, not yet stored, with the secrets only the response will carry.
    public struct PendingSession: Sendable {
        /// The row to store.
        public let session: AuthenticationSession
        /// What the response will carry beside the session.
        let secret: Secret

        enum Secret: Sendable {
            /// The opaque bearer token (its digest is the row's), for a session without refresh.
            case opaque(String)
            /// The first refresh token (its digest is the row's `refreshDigest`), for a session with signed tokens.
            case refresh(String)
        }
    }

    /// A new, not yet stored session of `accountID`. The identifier is time-ordered (UUIDv7). `references`, when
    /// given, are the `amr` of its access tokens instead of the method's own; `passkey` is the passkey
    /// (`PasskeyCredential.id`) that signed a passkey session in.
    public func newSession(
        accountID: AccountID, method: AuthenticationMethod, references: [String]? = nil, passkey: UUID? = nil
    ) -> PendingSession {
        let now = clock()
        let id = SessionID.timeOrdered(at: now)
        var session = AuthenticationSession(
            id: id, accountID: accountID, tokenDigest: [], authenticationMethod: method,
            createdAt: now, expiresAt: now.addingTimeInterval(lifetime), revokedAt: nil, passkeyID: passkey)
        guard signer != nil, method.grantsFullAccess else {
            let (token, digest) = SessionTokens.issue(for: id, random: random)
            session.tokenDigest = digest
            return PendingSession(session: session, secret: .opaque(token))
        }
        // The token digest column is required; a session with refresh tokens has no opaque token, so its digest is
        // 32 random bytes that no token hashes to.
        session.tokenDigest = random.bytes(count: 32)
        let refresh = RefreshTokens.issue(for: id, generation: 0, random: random)
        session.refreshDigest = refresh.presented.digest
        session.methodReferences = references
        return PendingSession(session: session, secret: .refresh(refresh.token))
    }

    /// The tokens of a stored pending session: a signed access token beside its refresh token, or the opaque one.
    public func issue(_ pending: PendingSession, displayName: String) async throws -> IssuedSession {
        let refreshToken: String
        switch pending.secret {
        case .opaque(let token): return IssuedSession(token: token, session: pending.session, displayName: displayName)
        case .refresh(let token): refreshToken = token
        }
        // `newSession` makes a refresh token only with a signer.
        guard let signer else { throw DomainError(.unavailable, "no signer for a session with refresh tokens") }
        let now = clock()
        let (token, expiresAt) = try await signer.sign(pending.session, now: now)
        return IssuedSession(
            token: token, tokenExpiresAt: expiresAt, refreshToken: refreshToken,
            refreshTokenExpiresAt: refreshDeadline(of: pending.session, refreshedAt: now),
            session: pending.session, displayName: displayName)
    }

    /// When a refresh token issued at `refreshedAt` stops working: the idle timeout, within the session's life.
    public func refreshDeadline(of session: AuthenticationSession, refreshedAt: Date) -> Date {
        min(session.expiresAt, refreshedAt.addingTimeInterval(idleTimeout))
    }
}
