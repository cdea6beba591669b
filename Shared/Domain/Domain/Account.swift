import Encoding
import Foundation

/// An account: the parent of its emails, password, passkeys and sessions (slide 13 of the talk).
public struct Account: Hashable, Sendable {
    public var id: AccountID
    public var displayName: String
    /// The WebAuthn `user.id` for this account, the same in every registration.
    public var userHandle: UserHandle
    public var createdAt: Date

    public init(id: AccountID, displayName: String, userHandle: UserHandle, createdAt: Date) {
        self.id = id
        self.displayName = displayName
        self.userHandle = userHandle
        self.createdAt = createdAt
    }
}

/// An email address that belongs to an account. `normalizedEmail` is unique across all accounts.
public struct AccountEmail: Hashable, Sendable {
    public var id: UUID
    public var accountID: AccountID
    public var email: String
    public var normalizedEmail: String
    public var createdAt: Date

    public init(id: UUID, accountID: AccountID, email: String, normalizedEmail: String, createdAt: Date) {
        self.id = id
        self.accountID = accountID
        self.email = email
        self.normalizedEmail = normalizedEmail
        self.createdAt = createdAt
    }

    /// A new email row for `address`.
    public init(id: UUID = UUID.randomV4(), accountID: AccountID, address: EmailAddress, createdAt: Date) {
        self.init(
            id: id, accountID: accountID, email: address.address, normalizedEmail: address.normalized,
            createdAt: createdAt)
    }
}

/// An account's password, as a PHC-format hash string (for example `$argon2id$v=19$m=19456,t=2,p=1$…`).
public struct PasswordCredential: Hashable, Sendable {
    public var accountID: AccountID
    public var passwordHash: String
    public var createdAt: Date
    public var updatedAt: Date

    public init(accountID: AccountID, passwordHash: String, createdAt: Date, updatedAt: Date) {
        self.accountID = accountID
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What a password sign-in needs to know about the account that owns an email address.
public struct PasswordSignInRecord: Hashable, Sendable {
    public var accountID: AccountID
    public var displayName: String
    public var passwordHash: String
    /// An operator disabled the account: the sign-in is refused, once the password has been verified.
    public var disabled: Bool
    /// The account's failed password sign-ins (`GuessLimit`), read with the record; nil when it has none stored.
    public var failedGuesses: FailedGuesses?

    public init(
        accountID: AccountID, displayName: String, passwordHash: String, disabled: Bool = false,
        failedGuesses: FailedGuesses? = nil
    ) {
        self.accountID = accountID
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.disabled = disabled
        self.failedGuesses = failedGuesses
    }
}

/// An account with what the account page shows about it.
public struct AccountSummary: Hashable, Sendable {
    public var account: Account
    public var emails: [String]
    public var hasPassword: Bool
    public var passkeyCount: Int
    /// The account's emails that are verified (a subset of `emails`).
    public var verifiedEmails: [String]
    /// Recovery codes generated and not used yet.
    public var recoveryCodesRemaining: Int

    public init(
        account: Account, emails: [String], hasPassword: Bool, passkeyCount: Int, verifiedEmails: [String] = [],
        recoveryCodesRemaining: Int = 0
    ) {
        self.account = account
        self.emails = emails
        self.hasPassword = hasPassword
        self.passkeyCount = passkeyCount
        self.verifiedEmails = verifiedEmails
        self.recoveryCodesRemaining = recoveryCodesRemaining
    }
}
