import Encoding

/// A name shown to the user: an account's display name or a passkey's label.
public struct DisplayName: Hashable, Sendable {
    /// The longest name accepted, in Unicode scalars.
    public static let maximumLength = 128
    public let value: String

    /// Trims surrounding whitespace; nil when the text as sent is longer than ``maximumLength`` or has a control
    /// character anywhere, or when nothing is left once trimmed.
    public init?(_ raw: String) {
        guard raw.unicodeScalars.count <= DisplayName.maximumLength,
            !raw.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty else { return nil }
        self.value = trimmed
    }
}

extension DisplayName {
    /// The name in `text`, or `invalidRequest` naming `field`: the one rule every service applies to a name a
    /// client sent.
    public static func validated(_ text: String, field: String = "displayName") throws(DomainError) -> DisplayName {
        guard let name = DisplayName(text) else {
            throw DomainError(.invalidRequest, "\(field) must be 1 to \(DisplayName.maximumLength) characters")
        }
        return name
    }

    /// nil for a missing or empty `text`, otherwise as `validated(_:field:)`.
    public static func validatedIfPresent(_ text: String?, field: String = "displayName") throws(DomainError)
        -> DisplayName?
    {
        guard let text, !text.isEmpty else { return nil }
        return try validated(text, field: field)
    }
}
