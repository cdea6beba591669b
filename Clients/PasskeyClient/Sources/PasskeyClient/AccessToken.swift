import Foundation

/// The tokens of a session, as a sign-in or a refresh returned them: the bearer access token and, with signed
/// access tokens, the refresh token that gets the next one. Its description and mirror leave both tokens out.
///
/// It is `Codable` for stores that keep it between launches (a Keychain item, say); a value stored before refresh
/// tokens existed (`value`, `expiresAt`, `accountID` only) still decodes.
public struct AccessToken: Sendable, Equatable, Codable, CustomStringConvertible, CustomReflectable {
    /// The token sent as `Authorization: Bearer <value>`. A secret: never log it.
    public var value: String
    /// When the access token expires, if known. A token the client stores from a response is counted on this
    /// device's clock (``PasskeyAPIClient/Configuration/clock``) from the response's arrival and ``lifetime``, so a
    /// device clock that is off does not make it look expired or fresh.
    public var expiresAt: Date?
    /// The signed-in account, if known.
    public var accountID: String?
    /// The refresh token (`prt_…`), single-use: each refresh returns the next one. Nil with opaque access tokens,
    /// which cannot be refreshed. A secret: never log it.
    public var refreshToken: String?
    /// When the refresh token stops working unless used (the session's idle timeout, within its lifetime), by the
    /// gateway's clock.
    public var refreshTokenExpiresAt: Date?
    /// The session, if known.
    public var sessionID: String?
    /// How long the access token was valid when the gateway issued it (the session document's `expiresIn`).
    public var lifetime: Duration?

    /// Creates tokens.
    public init(
        value: String, expiresAt: Date? = nil, accountID: String? = nil, refreshToken: String? = nil,
        refreshTokenExpiresAt: Date? = nil, sessionID: String? = nil, lifetime: Duration? = nil
    ) {
        self.value = value
        self.expiresAt = expiresAt
        self.accountID = accountID
        self.refreshToken = refreshToken
        self.refreshTokenExpiresAt = refreshTokenExpiresAt
        self.sessionID = sessionID
        self.lifetime = lifetime
    }

    /// The tokens of a session a sign-in or a refresh returned; ``expiresAt`` is the gateway's until the client
    /// counts it from the response's arrival (``anchored(at:)``).
    public init(_ session: Session) {
        self.init(
            value: session.accessToken, expiresAt: session.expiresAt, accountID: session.accountID,
            refreshToken: session.refreshToken, refreshTokenExpiresAt: session.refreshTokenExpiresAt,
            sessionID: session.sessionID, lifetime: .seconds(session.expiresIn))
    }

    /// Whether the access token can still be used at `date` by its expiry (the gateway decides in the end: a
    /// revoked token stops working at once).
    public func isUsable(at date: Date = Date()) -> Bool { expiresAt.map { date < $0 } ?? true }

    /// Whether the client refreshes the access token before using it at `date`: it has a refresh token and expires
    /// within `leeway`, or within half its ``lifetime`` when that is shorter (so a 30-second token is not
    /// refreshed before every call), or has expired.
    public func needsRefresh(at date: Date, leeway: Duration) -> Bool {
        guard refreshToken != nil, let expiresAt else { return false }
        var margin = max(0, leeway.seconds)
        if let lifetime { margin = min(margin, max(0, lifetime.seconds) / 2) }
        return date >= expiresAt.addingTimeInterval(-margin)
    }

    /// The tokens with ``expiresAt`` counted from `arrival` (on this device's clock) by ``lifetime``; unchanged
    /// without a lifetime.
    public func anchored(at arrival: Date) -> AccessToken {
        guard let lifetime else { return self }
        var anchored = self
        anchored.expiresAt = arrival.addingTimeInterval(max(0, lifetime.seconds))
        return anchored
    }

    public var description: String {
        "AccessToken(expiresAt: \(expiresAt.map(String.init(describing:)) ?? "nil"), accountID: \(accountID ?? "nil"), "
            + "refreshable: \(refreshToken != nil))"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "expiresAt": expiresAt as Any, "accountID": accountID as Any, "sessionID": sessionID as Any,
                "refreshTokenExpiresAt": refreshTokenExpiresAt as Any, "lifetime": lifetime as Any,
            ])
    }
}

/// Where the client keeps the session's tokens between calls (and, for a Keychain-backed store, between launches).
/// The client reads them before every call that needs them, stores those of each sign-in and refresh, and removes
/// them after sign-out or when the gateway says the session is over. Stores keep the whole ``AccessToken``, refresh
/// token included (its `Codable` form is one way).
public protocol AccessTokenStore: Sendable {
    /// The stored tokens, if any.
    func load() async throws -> AccessToken?
    /// Replaces the stored tokens.
    func save(_ token: AccessToken) async throws
    /// Removes the stored tokens.
    func remove() async throws
}

/// A store in memory: the tokens live as long as the client.
public actor InMemoryAccessTokenStore: AccessTokenStore {
    private var token: AccessToken?

    /// A store holding `token`.
    public init(_ token: AccessToken? = nil) { self.token = token }

    public func load() -> AccessToken? { token }
    public func save(_ token: AccessToken) { self.token = token }
    public func remove() { token = nil }
}
