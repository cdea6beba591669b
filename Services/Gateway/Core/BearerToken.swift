/// The token of `Authorization: Bearer <token>`, read the same way by both listeners.
enum BearerToken {
    /// The token (scheme case-insensitive); nil when absent or malformed.
    static func read(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1]
        guard token.utf8.count <= 1024,
            token.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._~+/=".unicodeScalars.contains($0))
            })
        else { return nil }
        return String(token)
    }
}
