import Foundation

/// The bearer token of a session, as a sign-in returned it. Its description and mirror leave the value out.
public struct AccessToken: Sendable, Equatable, Codable, CustomStringConvertible, CustomReflectable {
    /// The token sent as `Authorization: Bearer <value>`. A secret: never log it.
    public var value: String
    /// When the session ends, if known.
    public var expiresAt: Date?
    /// The signed-in account, if known.
    public var accountID: String?

    /// Creates a token.
    public init(value: String, expiresAt: Date? = nil, accountID: String? = nil) {
        self.value = value
        self.expiresAt = expiresAt
        self.accountID = accountID
    }

    /// The token of a session a sign-in returned.
    public init(_ session: Session) {
        self.init(value: session.accessToken, expiresAt: session.expiresAt, accountID: session.accountID)
    }

    /// Whether the token can still be used at `date` by its expiry (the gateway decides in the end: a revoked
    /// token stops working at once).
    public func isUsable(at date: Date = Date()) -> Bool { expiresAt.map { date < $0 } ?? true }

    public var description: String {
        "AccessToken(expiresAt: \(expiresAt.map(String.init(describing:)) ?? "nil"), accountID: \(accountID ?? "nil"))"
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["expiresAt": expiresAt as Any, "accountID": accountID as Any])
    }
}

/// Where the client keeps the access token between calls (and, for a Keychain-backed store, between launches).
/// The client reads it before every call that needs it, stores the token of each sign-in, and removes it after
/// sign-out or when the gateway says it is no longer valid.
public protocol AccessTokenStore: Sendable {
    /// The stored token, if any.
    func load() async throws -> AccessToken?
    /// Replaces the stored token.
    func save(_ token: AccessToken) async throws
    /// Removes the stored token.
    func remove() async throws
}

/// A store in memory: the token lives as long as the client.
public actor InMemoryAccessTokenStore: AccessTokenStore {
    private var token: AccessToken?

    /// A store holding `token`.
    public init(_ token: AccessToken? = nil) { self.token = token }

    public func load() -> AccessToken? { token }
    public func save(_ token: AccessToken) { self.token = token }
    public func remove() { token = nil }
}
