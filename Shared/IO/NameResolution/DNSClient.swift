import NetworkIO

#if canImport(Glibc)
    import Glibc
#endif

/// Asks one DNS server, over UDP, for the addresses of a name: the lookup behind gRPC's
/// `dns://server/host:port` targets, which name the server to ask instead of the system's resolver.
/// Blocking: run it on a thread of its own.
public struct DNSClient: Sendable {
    /// The server asked.
    public let server: SocketAddress
    /// How long each attempt waits for an answer.
    public var timeoutMilliseconds: Int32 = 1000
    /// Attempts per record type before giving up.
    public var attempts = 2

    public init(server: SocketAddress) {
        self.server = server
    }

    /// The IPv4 then IPv6 addresses of `name`, as numeric text; empty when the name has none. One of the two
    /// queries failing (a server that refuses AAAA queries, say) still gives the other's answer.
    public func addresses(of name: String) throws(DNSError) -> [String] {
        let v4 = Result { () throws(DNSError) in try records(of: name, type: .a).map { Self.text($0, family: AF_INET) }
        }
        let v6 = Result { () throws(DNSError) in
            try records(of: name, type: .aaaa).map { Self.text($0, family: AF_INET6) }
        }
        switch (v4, v6) {
        case (.failure(let error), .failure): throw error
        case (.failure(let error), .success(let addresses)), (.success(let addresses), .failure(let error)):
            guard !addresses.isEmpty else { throw error }
            return addresses
        case (.success(let first), .success(let second)): return first + second
        }
    }

    private func records(of name: String, type: DNSMessage.RecordType) throws(DNSError) -> [[UInt8]] {
        var lastError = DNSError(.timedOut, "no answer from \(server)")
        for _ in 0..<max(1, attempts) {
            let id = UInt16.random(in: 0...UInt16.max)
            let query = try DNSMessage.query(id: id, name: name, type: type)
            do {
                let response = try exchange(query, id: id)
                return try DNSMessage.addresses(inResponse: response, id: id, type: type)
            } catch  where error.code == .timedOut {
                lastError = error
            }
        }
        throw lastError
    }

    /// Sends the query from a socket connected to the server (so only its datagrams arrive) and returns the first
    /// datagram that answers this query's ID.
    private func exchange(_ query: [UInt8], id: UInt16) throws(DNSError) -> [UInt8] {
        let family = server.host.contains(":") ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw DNSError(.system, "socket failed (errno \(errno))") }
        defer { close(fd) }
        let connected: Int32
        do { connected = try server.withSockAddr { connect(fd, $0, $1) } } catch {
            throw DNSError(.system, "the server address \(server) cannot be used")
        }
        guard connected == 0 else { throw DNSError(.system, "connect to \(server) failed (errno \(errno))") }
        guard query.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == query.count else {
            throw DNSError(.system, "send to \(server) failed (errno \(errno))")
        }
        var buffer = [UInt8](repeating: 0, count: 65_535)
        var remaining = Int64(timeoutMilliseconds)
        while remaining > 0 {
            let began = monotonicNanoseconds()
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(remaining))
            if ready < 0 && errno != EINTR { throw DNSError(.system, "poll failed (errno \(errno))") }
            if ready > 0 {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                // A refused port (ICMP) shows as an error here: the server is not there.
                if count < 0 && errno != EINTR && errno != EAGAIN {
                    throw DNSError(.timedOut, "\(server) did not answer (errno \(errno))")
                }
                if count > 0 {
                    let datagram = Array(buffer[0..<count])
                    if DNSMessage.isResponse(datagram, to: id) { return datagram }
                }
            }
            remaining -= Int64((monotonicNanoseconds() - began) / 1_000_000)
        }
        throw DNSError(.timedOut, "no answer from \(server) within \(timeoutMilliseconds) ms")
    }

    private static func text(_ raw: [UInt8], family: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        _ = raw.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
