/// Where a client finds a service's replicas, in gRPC's target syntax.
///
/// - `host:port`: a numeric host is one replica; a host name stands for every address it resolves to through the
///   system resolver, and is resolved again while the client runs (a Kubernetes headless Service's name).
/// - `dns:///host:port`: the same, said explicitly.
/// - `dns://server[:port]/host:port`: the name is asked of that DNS server (numeric, port 53 by default) instead.
public struct ServiceTarget: Sendable, Hashable, CustomStringConvertible {
    /// The host (numeric or a name) and the port every replica listens on.
    public let address: ServiceAddress
    /// The DNS server to ask, when the target names one.
    public let nameServer: ServiceAddress?

    public init(address: ServiceAddress, nameServer: ServiceAddress? = nil) {
        self.address = address
        self.nameServer = nameServer
    }

    /// Parses the forms above; nil when malformed, or when `dns://` names a server that is not a numeric address.
    public init?(parsing text: String) {
        guard text.hasPrefix("dns:") else {
            guard let address = ServiceAddress(parsing: text) else { return nil }
            self.init(address: address)
            return
        }
        let rest = text.dropFirst("dns:".count)
        guard rest.hasPrefix("//") else { return nil }
        let authorityAndPath = rest.dropFirst(2)
        guard let slash = authorityAndPath.firstIndex(of: "/") else { return nil }
        let authority = authorityAndPath[..<slash]
        guard let address = ServiceAddress(parsing: String(authorityAndPath[authorityAndPath.index(after: slash)...]))
        else { return nil }
        guard !authority.isEmpty else {
            self.init(address: address)
            return
        }
        let server =
            ServiceAddress(parsing: String(authority))
            ?? ServiceAddress(parsing: authority.hasPrefix("[") ? "\(authority):53" : "[\(authority)]:53")
        guard let server, ServiceTarget.isNumeric(server.host) else { return nil }
        self.init(address: address, nameServer: server)
    }

    /// Whether the host is an IPv4 or IPv6 literal, so that no lookup is needed.
    public var isNumeric: Bool { Self.isNumeric(address.host) }

    public var description: String {
        guard let nameServer else { return address.description }
        return "dns://\(nameServer)/\(address)"
    }

    /// An IPv4 dotted quad or an IPv6 literal (hex groups and colons, with an optional dotted-quad tail).
    static func isNumeric(_ host: String) -> Bool {
        if host.contains(":") {
            return host.utf8.allSatisfy { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") || isHexDigit($0) }
        }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.utf8.allSatisfy { (48...57).contains($0) }
                    && Int(part)! <= 255
            }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }
}

extension EnvironmentReader {
    /// A non-empty comma-separated list of service targets (`host:port`, `dns:///host:port`,
    /// `dns://server/host:port`).
    public func targets(_ name: String, default defaultValue: [ServiceTarget]) throws -> [ServiceTarget] {
        let values = list(name)
        guard !values.isEmpty else { return defaultValue }
        return try values.map { value in
            guard let target = ServiceTarget(parsing: value) else {
                throw ConfigurationError(
                    variable: name,
                    problem: "expected host:port, dns:///host:port or dns://<numeric server>/host:port, got \(value)")
            }
            return target
        }
    }
}
