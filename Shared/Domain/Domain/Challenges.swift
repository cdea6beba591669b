import Foundation

/// How a registration challenge was issued. Decided when the challenge is issued, never from the finish request.
public enum RegistrationMode: String, Hashable, Sendable, CaseIterable {
    /// The user tapped a button: user presence is required.
    case modal
    /// Automatic Passkey Upgrade (conditional create): the authenticator may leave UP unset.
    case conditional
}

/// A challenge for adding a passkey to an existing account (`passkey_registration_challenges`).
public struct RegistrationChallenge: Hashable, Sendable {
    public var id: ChallengeID
    public var accountID: AccountID
    public var challenge: [UInt8]
    public var mode: RegistrationMode
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?

    public init(
        id: ChallengeID, accountID: AccountID, challenge: [UInt8], mode: RegistrationMode, createdAt: Date,
        expiresAt: Date, consumedAt: Date?
    ) {
        self.id = id
        self.accountID = accountID
        self.challenge = challenge
        self.mode = mode
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
    }
}

/// A challenge for signing in with a passkey (`passkey_authentication_challenges`). Not bound to an account.
public struct AuthenticationChallenge: Hashable, Sendable {
    public var id: ChallengeID
    public var challenge: [UInt8]
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?

    public init(id: ChallengeID, challenge: [UInt8], createdAt: Date, expiresAt: Date, consumedAt: Date?) {
        self.id = id
        self.challenge = challenge
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
    }
}

/// A passkey account creation in progress (`passkey_account_registrations`): nothing is in `accounts` yet.
public struct AccountRegistration: Hashable, Sendable {
    public var id: AccountRegistrationID
    /// The ID the account will get when the registration completes.
    public var prospectiveAccountID: AccountID
    public var userHandle: UserHandle
    public var email: String?
    public var displayName: String?
    public var challenge: [UInt8]
    public var createdAt: Date
    public var expiresAt: Date
    public var consumedAt: Date?
    public var completedAt: Date?

    public init(
        id: AccountRegistrationID, prospectiveAccountID: AccountID, userHandle: UserHandle, email: String?,
        displayName: String?, challenge: [UInt8], createdAt: Date, expiresAt: Date, consumedAt: Date?,
        completedAt: Date?
    ) {
        self.id = id
        self.prospectiveAccountID = prospectiveAccountID
        self.userHandle = userHandle
        self.email = email
        self.displayName = displayName
        self.challenge = challenge
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.consumedAt = consumedAt
        self.completedAt = completedAt
    }
}
