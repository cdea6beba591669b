/// The checks of configuration values that more than one variable, or more than one process, applies.
public enum ConfigurationValues {
    public static func isValidHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" }
        }
    }

    public static func isValidOrigin(_ origin: String) -> Bool {
        if origin.hasPrefix("android:apk-key-hash:") {
            let hash = origin.dropFirst("android:apk-key-hash:".count)
            return hash.count == 43 && hash.unicodeScalars.allSatisfy(isBase64URLCharacter)
        }
        if origin.hasPrefix("ios:bundle-id:") {
            let id = origin.dropFirst("ios:bundle-id:".count)
            return !id.isEmpty && id.unicodeScalars.allSatisfy { isBase64URLCharacter($0) || $0 == "." }
        }
        let scheme: String
        if origin.hasPrefix("https://") {
            scheme = "https://"
        } else if origin.hasPrefix("http://") {
            scheme = "http://"
        } else {
            return false
        }
        let authority = origin.dropFirst(scheme.count)
        let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let host = String(parts[0])
        if parts.count == 2 {
            guard let port = Int(parts[1]), (1...65535).contains(port), !parts[1].hasPrefix("0") else { return false }
        }
        guard isValidHostName(host), host == host.lowercased() else { return false }
        // Plain http is a secure context only on loopback.
        return scheme == "https://" || host == "localhost" || host.hasSuffix(".localhost") || host == "127.0.0.1"
    }

    /// A letter, a digit, `-` or `_`.
    public static func isBase64URLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
    }
}
