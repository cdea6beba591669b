/// A `host:port` pair from configuration: an IPv4 address, a bracketed IPv6 address, or a host name.
public struct ServiceAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[v6]:port`; port 0 (any free port) only when `allowAnyPort`.
    public init?(parsing text: String, allowAnyPort: Bool = false) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                return nil
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, hostPart.utf8.count <= 253,
            hostPart.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" }),
            let port = Int(portPart), port >= (allowAnyPort ? 0 : 1), port <= 65535
        else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

extension EnvironmentReader {
    /// One `host:port` address.
    public func address(_ name: String, default defaultValue: String, allowAnyPort: Bool = true) throws
        -> ServiceAddress
    {
        let value = raw(name) ?? defaultValue
        guard let address = ServiceAddress(parsing: value, allowAnyPort: allowAnyPort) else {
            throw ConfigurationError(variable: name, problem: "expected host:port, got \(value)")
        }
        return address
    }
}
