/// The iOS apps allowed to use the relying party's passkeys, as `apple-app-site-association` lists them: each an
/// app ID, the team ID (10 uppercase letters or digits), a dot and the bundle ID (`ABCDE12345.com.example.app`).
public enum AppleAppID {
    /// Whether `id` is `TEAMID.bundle.id`.
    public static func isValid(_ id: String) -> Bool {
        guard let dot = id.firstIndex(of: ".") else { return false }
        let team = id[..<dot]
        let bundle = id[id.index(after: dot)...]
        return team.count == 10
            && team.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isUppercase || ("0"..."9").contains($0)) }
            && !bundle.isEmpty
            && bundle.unicodeScalars.allSatisfy { ConfigurationValues.isBase64URLCharacter($0) || $0 == "." }
    }
}

extension EnvironmentReader {
    /// `PASSKEY_APPLE_APP_IDS`: a comma-separated list of app IDs; the first that is not `TEAMID.bundle.id` is
    /// refused.
    public func appleAppIDs() throws -> [String] {
        let ids = list("PASSKEY_APPLE_APP_IDS")
        for id in ids where !AppleAppID.isValid(id) {
            throw ConfigurationError(variable: "PASSKEY_APPLE_APP_IDS", problem: "expected TEAMID.bundle.id, got \(id)")
        }
        return ids
    }
}
