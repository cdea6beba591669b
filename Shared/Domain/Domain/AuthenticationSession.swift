import Foundation

/// How a session was signed in.
public enum AuthenticationMethod: String, Hashable, Sendable, CaseIterable {
    case password
    case passkey
    /// A recovery session: issued for a one-time email code or a recovery code, it may only register a new passkey,
    /// and registering one ends it.
    case recovery

    /// Whether a session signed in this way may use the account: false for a recovery session.
    public var grantsFullAccess: Bool { self != .recovery }
}

/// A signed-in session. Only the SHA-256 digest of its bearer token is stored.
public struct AuthenticationSession: Hashable, Sendable {
    public var id: SessionID
    public var accountID: AccountID
    /// SHA-256 of the bearer token (32 bytes).
    public var tokenDigest: [UInt8]
    public var authenticationMethod: AuthenticationMethod
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
    /// SHA-256 of the secret of the session's first refresh token (generation 0), for a session with signed access
    /// tokens; nil for a session of opaque bearer tokens, which is never refreshed.
    public var refreshDigest: [UInt8]?
    /// The `amr` values of its access tokens when they are not those of ``authenticationMethod`` (a session that a
    /// completed recovery issued), else nil.
    public var methodReferences: [String]?
    /// The passkey (`PasskeyCredential.id`) that signed a passkey session in, else nil: password removal counts
    /// only a live session of a passkey the account still has.
    public var passkeyID: UUID?
    /// When a reauthentication (a passkey or password ceremony bound to this session) last proved a credential;
    /// nil when none has since the sign-in.
    public var reauthenticatedAt: Date?

    public init(
        id: SessionID, accountID: AccountID, tokenDigest: [UInt8], authenticationMethod: AuthenticationMethod,
        createdAt: Date, expiresAt: Date, revokedAt: Date?, refreshDigest: [UInt8]? = nil,
        methodReferences: [String]? = nil, passkeyID: UUID? = nil, reauthenticatedAt: Date? = nil
    ) {
        self.reauthenticatedAt = reauthenticatedAt
        self.refreshDigest = refreshDigest
        self.methodReferences = methodReferences
        self.passkeyID = passkeyID
        self.id = id
        self.accountID = accountID
        self.tokenDigest = tokenDigest
        self.authenticationMethod = authenticationMethod
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }

    /// When the session last proved a credential: its sign-in, or its last reauthentication (the access tokens'
    /// `auth_time`, and what PASSKEY_REAUTHENTICATION_WINDOW is measured from).
    public var authenticatedAt: Date { max(createdAt, reauthenticatedAt ?? createdAt) }

    /// Whether the session may be used at `now`: not revoked and not expired.
    public func isLive(at now: Date) -> Bool { revokedAt == nil && now < expiresAt }
}
