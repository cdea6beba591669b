import Foundation

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

    /// The reason of a new password refused for its length.
    public static let lengthReason = "password_length"
    /// The reason of a new password refused because it is on the list of common passwords.
    public static let tooCommonReason = "password_too_common"

    /// Checks a new password: its length (`invalidRequest`), then the list of common passwords (`weakPassword`),
    /// compared as Django's `CommonPasswordValidator` does: trimmed and lowercased. Each with its reason.
    public static func check(_ password: String, against common: CommonPasswords) throws(DomainError) {
        guard allows(password) else {
            throw DomainError(.invalidRequest, "password \(requirement)", reason: lengthReason)
        }
        guard !common.contains(password) else {
            throw DomainError(
                .weakPassword, "this password is one of the most common ones and is guessed first; choose another",
                reason: tooCommonReason)
        }
    }
}

/// A list of common passwords that new passwords are checked against (ASVS 4.0 2.1.7). The shipped list is
/// session-service's resource `common-passwords.txt`: the 20,000 common passwords Django ships
/// (`django/contrib/auth/common-passwords.txt.gz`, compiled by Royce Williams, BSD-licensed with Django), keeping
/// the 8,571 that ``PasswordPolicy/lengths`` would otherwise admit.
public struct CommonPasswords: Sendable {
    private let entries: Set<String>

    /// The list from text: one password a line, compared lowercased.
    public init(lines text: String) {
        entries = Set(
            text.split(whereSeparator: \.isNewline).map { Self.normalized(Substring($0)) }.filter { !$0.isEmpty })
    }

    /// No list: every password passes.
    public static let empty = CommonPasswords(lines: "")

    /// How many passwords the list holds.
    public var count: Int { entries.count }

    /// Whether `password`, trimmed and lowercased, is on the list.
    public func contains(_ password: String) -> Bool { entries.contains(Self.normalized(Substring(password))) }

    private static func normalized(_ text: Substring) -> String {
        text.trimmingCharacters(in: .whitespaces).lowercased()
    }
}
