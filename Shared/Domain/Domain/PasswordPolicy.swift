/// The password policy of new accounts: one value, which the gateway checks a body against and the use case
/// applies again before hashing.
public enum PasswordPolicy {
    /// The allowed lengths in Unicode scalars (NIST SP 800-63B counts each code point as one character). The longest
    /// is at most 1,024 bytes in UTF-8, within the hasher's limit.
    public static let lengths = 8...256

    /// What a refused password was told.
    public static let requirement = "must be \(lengths.lowerBound) to \(lengths.upperBound) characters"

    /// Whether a new password has an allowed length.
    public static func allows(_ password: String) -> Bool { lengths.contains(password.unicodeScalars.count) }
}
