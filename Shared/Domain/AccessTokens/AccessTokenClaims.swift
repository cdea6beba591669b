/// The claims of an access token: the JWT profile of RFC 9068 (`typ: at+jwt`), with the session it belongs to.
///
/// Times are whole seconds since the Unix epoch (JWT `NumericDate`).
public struct AccessTokenClaims: Sendable, Equatable {
    /// `iss`: who issued the token (`PASSKEY_TOKEN_ISSUER`).
    public var issuer: String
    /// `sub`: the account's ID.
    public var subject: String
    /// `aud`: whom the token is for (`PASSKEY_TOKEN_AUDIENCE`).
    public var audience: String
    /// `client_id`: the relying party the token was issued through (RFC 9068 requires the claim).
    public var clientID: String
    /// `exp`.
    public var expiresAt: Int64
    /// `iat`.
    public var issuedAt: Int64
    /// `nbf`, when present (our tokens carry none; a verifier checks it when a token does).
    public var notBefore: Int64?
    /// `jti`: unique per token.
    public var tokenID: String
    /// `sid`: the session the token belongs to.
    public var sessionID: String
    /// `auth_time`: when the session's sign-in happened.
    public var authenticatedAt: Int64
    /// `amr`: how the session signed in, as RFC 8176 method values (see ``AuthenticationMethodReferences``).
    public var methods: [String]

    /// Claims as issued or as read.
    public init(
        issuer: String, subject: String, audience: String, clientID: String, expiresAt: Int64, issuedAt: Int64,
        notBefore: Int64? = nil, tokenID: String, sessionID: String, authenticatedAt: Int64, methods: [String]
    ) {
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.clientID = clientID
        self.expiresAt = expiresAt
        self.issuedAt = issuedAt
        self.notBefore = notBefore
        self.tokenID = tokenID
        self.sessionID = sessionID
        self.authenticatedAt = authenticatedAt
        self.methods = methods
    }
}

/// RFC 8176 `amr` values for the ways to sign in.
public enum AuthenticationMethodReferences {
    /// A passkey: proof of possession of a key (`pop`: hardware or software, as synced passkeys may be either) with
    /// the user's presence (`user`).
    public static let passkey = ["pop", "user"]
    /// A password (`pwd`).
    public static let password = ["pwd"]
    /// Account recovery: a one-time code (`otp`), from a mail or the account's recovery codes, then a new passkey.
    public static let recovery = ["otp", "pop"]
    /// Account recovery finished with a new password: a one-time code (`otp`), then the password it set (`pwd`).
    public static let recoveryWithPassword = ["otp", "pwd"]
}
