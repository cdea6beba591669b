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
        // Counted as sent, surrounding whitespace included: the same bound the API document states.
        guard raw.unicodeScalars.count <= EmailAddress.maximumLength else { return nil }
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty,
            !trimmed.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.properties.generalCategory == .control
            })
        else { return nil }
        // Split on the scalar, not on characters: `@` and a combining mark after it are still an `@`.
        let scalars = Array(trimmed.unicodeScalars)
        guard let at = scalars.firstIndex(of: "@"), at > 0, at < scalars.count - 1,
            !scalars[(at + 1)...].contains("@")
        else { return nil }
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
