import AccessTokens
import Foundation

/// What a verified access token says: whose session it is, how and when it signed in, and until when the token
/// holds. Every field comes from a claim whose signature, issuer, audience and times were checked.
public struct VerifiedSession: Sendable, Equatable {
    /// `sub`: the account's ID.
    public let accountID: String
    /// `sid`: the session's ID, the same for every token the session is refreshed into.
    public let sessionID: String
    /// `exp`: when the token stops being accepted (plus the verifier's leeway).
    public let expiresAt: Date
    /// `iat`: when the token was issued.
    public let issuedAt: Date
    /// `auth_time`: when the session's sign-in happened.
    public let authenticatedAt: Date
    /// `amr`: how the session signed in (`["pop", "user"]` for a passkey, `["pwd"]` for a password,
    /// `["otp", "pop"]` for account recovery).
    public let methods: [String]
    /// `jti`: this token's unique ID.
    public let tokenID: String
    /// `client_id`: the relying party the token was issued through.
    public let clientID: String
    /// `iss`: the issuer, the configured one.
    public let issuer: String
    /// The configured audience, which is among the token's `aud`.
    public let audience: String

    /// The session that verified `claims` for `audience`.
    init(claims: AccessTokenClaims, audience: String) {
        accountID = claims.subject
        sessionID = claims.sessionID
        expiresAt = Date(timeIntervalSince1970: TimeInterval(claims.expiresAt))
        issuedAt = Date(timeIntervalSince1970: TimeInterval(claims.issuedAt))
        authenticatedAt = Date(timeIntervalSince1970: TimeInterval(claims.authenticatedAt))
        methods = claims.methods
        tokenID = claims.tokenID
        clientID = claims.clientID
        issuer = claims.issuer
        self.audience = audience
    }
}
