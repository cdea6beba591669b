/// Why a line of an import was not imported: a stable code (the rejects file and the summary count these) and a
/// short detail for the operator. Details name fields and line numbers, never a field's value.
public struct ImportReject: Sendable, Hashable, Error {
    /// The kinds of bad line.
    public enum Reason: String, Sendable, Hashable, CaseIterable, Comparable {
        /// The line is not valid UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// The line is longer than `ImportLimits.maximumLineBytes`.
        case lineTooLong = "line_too_long"
        /// A JSON Lines line that is not one JSON object.
        case malformedJSON = "malformed_json"
        /// A CSV row with a stray or unterminated quote.
        case malformedCSV = "malformed_csv"
        /// A CSV row with more or fewer fields than the header.
        case wrongFieldCount = "wrong_field_count"
        /// A JSON member that is not one of the record's fields.
        case unknownField = "unknown_field"
        /// A field of the wrong JSON type (a number where a string belongs, …).
        case wrongType = "wrong_type"
        /// No email, or an empty one.
        case missingEmail = "missing_email"
        /// A field longer than its limit.
        case fieldTooLong = "field_too_long"
        case invalidEmail = "invalid_email"
        case invalidDisplayName = "invalid_display_name"
        case invalidExternalID = "invalid_external_id"
        case invalidCreatedAt = "invalid_created_at"
        case invalidEmailVerified = "invalid_email_verified"
        /// A password hash in no format this system verifies.
        case unknownHashFormat = "unknown_hash_format"
        /// A password hash of a known format with a field that does not parse, or a cost beyond the limits.
        case malformedHash = "malformed_hash"
        /// The normalized email is on an earlier line of the input already.
        case duplicateEmail = "duplicate_email"
        /// The externalID is on an earlier line of the input already.
        case duplicateExternalID = "duplicate_external_id"
        /// The normalized email belongs to an account that this line did not create.
        case emailTaken = "email_taken"
        /// The externalID belongs to another account.
        case externalIDTaken = "external_id_taken"

        public static func < (lhs: Reason, rhs: Reason) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public let reason: Reason
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
}

/// The sizes an import accepts. Every field is checked against its limit before it is looked at further.
public enum ImportLimits {
    /// The longest line, in bytes without its line break. A longer one is rejected without being held in memory.
    public static let maximumLineBytes = 16 * 1024
    /// The longest externalID, in Unicode scalars.
    public static let maximumExternalIDLength = 256
    /// The longest createdAt text, in bytes.
    public static let maximumCreatedAtLength = 40
    /// The most rows one transaction writes, and the default.
    public static let batchSizes: ClosedRange<Int> = 1...10_000
    public static let defaultBatchSize = 5_000
}
