import Encoding

/// An email address as the user typed it, with the form used for lookups and uniqueness.
public struct EmailAddress: Hashable, Sendable {
    /// The longest address accepted (RFC 5321's path limit), in Unicode scalars as the database's `char_length`
    /// counts, for the address as given and once lowercased.
    public static let maximumLength = 254

    /// The address as given, trimmed.
    public let address: String
    /// Trimmed and lowercased: two addresses that differ only in case or surrounding spaces are the same account.
    public let normalized: String

    /// Validates the shape loosely (one `@`, something on each side, no spaces or control characters);
    /// returns nil when the address cannot be an email address.
    public init?(_ raw: String) {
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= EmailAddress.maximumLength else { return nil }
        let parts = trimmed.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        guard !trimmed.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else { return nil }
        // Lowercasing can lengthen an address (U+0130 becomes two scalars); the stored form must fit too.
        let normalized = trimmed.lowercased()
        guard normalized.unicodeScalars.count <= EmailAddress.maximumLength else { return nil }
        self.address = trimmed
        self.normalized = normalized
    }
}

extension EmailAddress {
    /// The key that per-email limits count `text` under: the normalized address, or for text that is not one, the
    /// same trimming and lowercasing (at most `maximumLength` characters), so that every limit and lookup treats a
    /// given text alike whether or not it parses.
    public static func limitKey(_ text: String) -> String {
        if let address = EmailAddress(text) { return address.normalized }
        return String(text.trimmingWhitespace().lowercased().prefix(maximumLength))
    }

    /// The address in `text`, or `invalidRequest` naming `field`: the one rule every service applies to an email
    /// a client sent.
    public static func validated(_ text: String, field: String = "email") throws(DomainError) -> EmailAddress {
        guard let email = EmailAddress(text) else {
            throw DomainError(.invalidRequest, "\(field) is not a valid email address")
        }
        return email
    }

    /// nil for a missing or empty `text`, otherwise as `validated(_:field:)`.
    public static func validatedIfPresent(_ text: String?, field: String = "email") throws(DomainError)
        -> EmailAddress?
    {
        guard let text, !text.isEmpty else { return nil }
        return try validated(text, field: field)
    }
}
