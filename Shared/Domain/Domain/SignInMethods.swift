/// What an account can sign in with, read as one snapshot under the account's lock: the input of the rule that an
/// account always keeps a way to sign in. The Postgres and the in-memory repositories read the snapshot their own
/// way and apply these functions, so the rule has one home.
public struct SignInMethods: Sendable, Equatable {
    public var hasPassword: Bool
    public var passkeyCount: Int
    /// Whether one of its passkeys has signed in (a use recorded, or a passkey session).
    public var passkeySignedIn: Bool

    public init(hasPassword: Bool, passkeyCount: Int, passkeySignedIn: Bool = false) {
        self.hasPassword = hasPassword
        self.passkeyCount = passkeyCount
        self.passkeySignedIn = passkeySignedIn
    }

    /// Whether one passkey may be removed: not when it is the account's only way to sign in.
    public var canRemovePasskey: Bool { hasPassword || passkeyCount > 1 }

    /// Whether the password may be removed (stage ③): only once a passkey has signed in; nil when it may, else
    /// the refusal's reason (`PasswordRemovalRefusal`).
    public var passwordRemovalRefusal: String? {
        if passkeyCount == 0 { return PasswordRemovalRefusal.noPasskey }
        if !passkeySignedIn { return PasswordRemovalRefusal.passkeySignInRequired }
        return nil
    }

    /// `lastSignInMethod` unless a passkey may be removed.
    public func checkPasskeyRemoval() throws(DomainError) {
        guard canRemovePasskey else {
            throw DomainError(.lastSignInMethod, "this passkey is the account's only way to sign in")
        }
    }

    /// `notFound` without a password; `lastSignInMethod` with the reason while the password is still the only
    /// proven way to sign in.
    public func checkPasswordRemoval() throws(DomainError) {
        guard hasPassword else { throw DomainError(.notFound, "this account has no password") }
        switch passwordRemovalRefusal {
        case nil: return
        case PasswordRemovalRefusal.noPasskey?:
            throw DomainError(
                .lastSignInMethod, "add a passkey before removing the password",
                reason: PasswordRemovalRefusal.noPasskey)
        case let reason?:
            throw DomainError(
                .lastSignInMethod, "sign in with a passkey once before removing the password", reason: reason)
        }
    }
}
