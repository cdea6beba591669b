/// The checks of configuration values that more than one variable, or more than one process, applies.
public enum ConfigurationValues {
    public static func isValidHostName(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.unicodeScalars.allSatisfy {
                    ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-"
                }
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
        guard let (scheme, parts) = webAuthority(of: origin) else { return false }
        let host = String(parts[0])
        if parts.count == 2 {
            guard let port = Int(parts[1]), (1...65535).contains(port), !parts[1].hasPrefix("0") else { return false }
        }
        guard isValidHostName(host), host == host.lowercased() else { return false }
        // Plain http is a secure context only on loopback.
        return scheme == "https://" || host == "localhost" || host.hasSuffix(".localhost") || host == "127.0.0.1"
    }

    /// Whether `origin` is a web origin ``isValidOrigin(_:)`` accepts: `https://host[:port]`, or
    /// `http://localhost[:port]` (an app origin is not one).
    public static func isValidWebOrigin(_ origin: String) -> Bool {
        webAuthority(of: origin) != nil && isValidOrigin(origin)
    }

    /// The host of a web origin (`https://host[:port]` or `http://host[:port]`), lowercased; nil for an origin of
    /// another kind (`android:apk-key-hash:…`, `ios:bundle-id:…`).
    public static func host(ofWebOrigin origin: String) -> String? {
        webAuthority(of: origin).map { String($0.parts[0]).lowercased() }
    }

    /// A web origin's scheme (with `://`) and its authority split at the first `:` (the host, then the port if any).
    private static func webAuthority(of origin: String) -> (scheme: String, parts: [Substring])? {
        let scheme = origin.hasPrefix("https://") ? "https://" : origin.hasPrefix("http://") ? "http://" : nil
        guard let scheme else { return nil }
        let authority = origin.dropFirst(scheme.count)
        return (scheme, authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false))
    }

    /// A letter, a digit, `-` or `_`.
    public static func isBase64URLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII
            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
    }
}
