import Configuration
import Glibc
import NetworkIO

/// Turns configured host names into numeric socket addresses through the system resolver (`getaddrinfo`, so
/// `/etc/hosts`, search domains and the cluster's DNS all apply). Blocking: call it at start or from a thread of
/// its own.
public enum AddressResolution {
    /// The numeric address to listen on or connect to for `address`; a host name is looked up (IPv4 first).
    /// Throws a configuration error naming `variable` when it cannot be resolved.
    public static func resolve(_ address: ServiceAddress, variable: String) throws -> SocketAddress {
        guard let first = try? lookUpAll(address), let host = first.first else {
            throw ConfigurationError(variable: variable, problem: "cannot resolve \(address.host)")
        }
        return host
    }

    /// Every address `address.host` has (IPv4 first, each once) with `address.port`; a numeric host is itself.
    public static func lookUpAll(_ address: ServiceAddress) throws(DNSError) -> [SocketAddress] {
        let port = UInt16(address.port)
        if isNumeric(address.host) { return [SocketAddress(host: address.host, port: port)] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(address.host, nil, &hints, &result)
        guard status == 0, let first = result else {
            // "No such name" and "no address" mean the name has no replicas now, not that the lookup failed.
            if status == EAI_NONAME || status == eaiNoData { return [] }
            throw DNSError(.serverFailure, "cannot resolve \(address.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(result) }
        var v4: [SocketAddress] = []
        var v6: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if current.pointee.ai_family == AF_INET {
                current.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var raw = $0.pointee.sin_addr
                    inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
                v4.append(SocketAddress(host: numericText(text), port: port))
            } else if current.pointee.ai_family == AF_INET6 {
                current.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var raw = $0.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
                v6.append(SocketAddress(host: numericText(text), port: port))
            }
            entry = current.pointee.ai_next
        }
        var seen: Set<SocketAddress> = []
        return (v4 + v6).filter { seen.insert($0).inserted }
    }

    /// glibc's EAI_NODATA ("no address for this name"), which Swift does not import: it is behind _GNU_SOURCE.
    private static let eaiNoData: Int32 = -5

    private static func numericText(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
