/// The fields of an import record, by their names in JSON Lines members and CSV header columns.
public enum ImportField: String, Sendable, Hashable, CaseIterable {
    /// Required: the account's email address.
    case email
    /// The name shown for the account; the email's local part when absent.
    case displayName
    /// The account's existing password hash, in any format `StoredPasswordHash` reads; no password when absent.
    case passwordHash
    /// The operator's own identifier for the account, unique, kept on the account.
    case externalID
    /// When the account was created (RFC 3339); the import's time when absent.
    case createdAt
    /// Whether the email address was verified before the move; false when absent. Only a verified address can
    /// recover the account by email, which an account without a password needs to add its first passkey.
    case emailVerified
}

/// One record as read from a line, before validation: each field absent (nil) or its text.
public struct RawImportRecord: Sendable, Hashable {
    public var values: [ImportField: String] = [:]
    /// `emailVerified` as JSON gave it (a boolean); CSV gives it as text in `values`.
    public var emailVerifiedFlag: Bool?

    public init(values: [ImportField: String] = [:], emailVerifiedFlag: Bool? = nil) {
        self.values = values
        self.emailVerifiedFlag = emailVerifiedFlag
    }

    public subscript(field: ImportField) -> String? {
        get { values[field] }
        set { values[field] = newValue }
    }
}
