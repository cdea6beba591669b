import Configuration
import Glibc
import NetworkIO

/// Turns configured `host:port` addresses into numeric socket addresses, resolving host names once at start.
public enum AddressResolution {
    /// The numeric address for `address`; a host name is looked up (IPv4 first). Throws a configuration error
    /// naming `variable` when it cannot be resolved.
    public static func resolve(_ address: ServiceAddress, variable: String) throws -> SocketAddress {
        if isNumeric(address.host) { return SocketAddress(host: address.host, port: UInt16(address.port)) }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(address.host, nil, &hints, &result) == 0, let first = result else {
            throw ConfigurationError(variable: variable, problem: "cannot resolve \(address.host)")
        }
        defer { freeaddrinfo(result) }
        var candidates: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if current.pointee.ai_family == AF_INET {
                current.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var raw = $0.pointee.sin_addr
                    inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
                candidates.insert(numericText(text), at: 0)
            } else if current.pointee.ai_family == AF_INET6 {
                current.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var raw = $0.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
                candidates.append(numericText(text))
            }
            entry = current.pointee.ai_next
        }
        guard let host = candidates.first else {
            throw ConfigurationError(variable: variable, problem: "cannot resolve \(address.host)")
        }
        return SocketAddress(host: host, port: UInt16(address.port))
    }

    private static func numericText(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
