/// A name shown to the user: an account's display name or a passkey's label.
public struct DisplayName: Hashable, Sendable {
    /// The longest name accepted, in Unicode scalars.
    public static let maximumLength = 128
    public let value: String

    /// Trims surrounding whitespace; returns nil when the result is empty, too long, or has control characters.
    public init?(_ raw: String) {
        let trimmed = raw.trimmingWhitespace()
        guard !trimmed.isEmpty, trimmed.unicodeScalars.count <= DisplayName.maximumLength else { return nil }
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return nil
        }
        self.value = trimmed
    }
}
