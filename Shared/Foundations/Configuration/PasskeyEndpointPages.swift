/// Where `/.well-known/passkey-endpoints` sends password managers: the page that adds a passkey (`enroll`) and the
/// one that lists them (`manage`). Each is an absolute `https://` URL or a path on the first web origin
/// (`PASSKEY_ENROLL_PAGE`, `PASSKEY_MANAGE_PAGE`); the defaults are the gateway's own sections of its page.
public struct PasskeyEndpointPages: Sendable, Equatable {
    /// The gateway's page section for adding a passkey.
    public static let defaultEnroll = "/passkeys/enroll"
    /// The gateway's page section for managing passkeys.
    public static let defaultManage = "/passkeys/manage"
    /// The longest value accepted, in bytes.
    public static let maximumLength = 2048

    /// An absolute https URL or a path starting with `/`.
    public var enroll: String
    public var manage: String

    public init(enroll: String = defaultEnroll, manage: String = defaultManage) {
        self.enroll = enroll
        self.manage = manage
    }

    /// Reads both variables; a value that is neither an absolute https URL nor a path names its variable.
    public init(_ env: EnvironmentReader) throws {
        enroll = try Self.validated(
            env.string("PASSKEY_ENROLL_PAGE", default: "/passkeys/enroll"), "PASSKEY_ENROLL_PAGE")
        manage = try Self.validated(
            env.string("PASSKEY_MANAGE_PAGE", default: "/passkeys/manage"), "PASSKEY_MANAGE_PAGE")
    }

    private static func validated(_ value: String, _ name: String) throws -> String {
        guard isValid(value) else {
            throw ConfigurationError(
                variable: name,
                problem:
                    "expected an absolute https:// URL or a path starting with / (at most \(maximumLength) bytes, no spaces), got \(value.prefix(100))"
            )
        }
        return value
    }

    /// An absolute `https://host[:port][/path][?query][#fragment]` URL, or a path `/…` (not `//…`, which would be
    /// another host); only URL characters (RFC 3986 unreserved, sub-delims, `:@/?#%`), no whitespace or controls.
    static func isValid(_ value: String) -> Bool {
        guard !value.isEmpty, value.utf8.count <= maximumLength,
            value.utf8.allSatisfy({ isURLCharacter($0) })
        else { return false }
        if value.hasPrefix("/") { return !value.hasPrefix("//") }
        guard value.hasPrefix("https://") else { return false }
        let rest = value.utf8.dropFirst("https://".utf8.count)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        let text = String(decoding: authority, as: UTF8.self)
        guard !text.contains("@") else { return false }
        var host = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            let port = text[text.index(after: colon)...]
            guard let number = Int(port), (1...65535).contains(number), port.count <= 5 else { return false }
            host = text[..<colon]
        }
        return ConfigurationValues.isValidHostName(String(host).lowercased())
    }

    private static func isURLCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?#%".utf8.contains(byte)
        }
    }

    /// The URL of `page` for the document: itself when absolute, else on `origin`; nil for a path with no origin.
    public static func resolve(_ page: String, origin: String?) -> String? {
        if page.hasPrefix("https://") { return page }
        guard let origin else { return nil }
        return origin + page
    }
}
