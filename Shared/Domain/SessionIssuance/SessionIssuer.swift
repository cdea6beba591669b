import Crypto
import Domain
import Foundation

/// Makes new sessions: a bearer token for the client and the row that stores only its digest. session-service
/// issues password sessions with it and verification-service passkey sessions, each in the statement that proves
/// the sign-in, so both follow one rule for tokens, identifiers and lifetimes.
public struct SessionIssuer: Sendable {
    let random: any RandomSource
    let lifetime: TimeInterval
    let clock: @Sendable () -> Date

    public init(random: any RandomSource, lifetime: TimeInterval, clock: @escaping @Sendable () -> Date = Date.init) {
        self.random = random
        self.lifetime = lifetime
        self.clock = clock
    }

    /// A session as issued: the bearer token exists only here and in the response.
    public struct IssuedSession: Sendable {
        public let token: String
        public let session: AuthenticationSession
        public let displayName: String

        public init(token: String, session: AuthenticationSession, displayName: String) {
            self.token = token
            self.session = session
            self.displayName = displayName
        }
    }

    /// A new, not yet stored session of `accountID` and its token. The identifier is time-ordered (UUIDv7).
    public func newSession(accountID: AccountID, method: AuthenticationMethod) -> (token: String, session: AuthenticationSession) {
        let now = clock()
        let id = SessionID.timeOrdered(at: now)
        let (token, digest) = SessionTokens.issue(for: id, random: random)
        let session = AuthenticationSession(
            id: id, accountID: accountID, tokenDigest: digest, authenticationMethod: method,
            createdAt: now, expiresAt: now.addingTimeInterval(lifetime), revokedAt: nil)
        return (token, session)
    }
}
