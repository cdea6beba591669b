import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where the admin API listens, from `PASSKEY_ADMIN_URL`: `http://HOST[:PORT][/]`. The admin listener speaks plain
/// HTTP only, so `https://` is refused with a message saying so, as are a user, a path, a query and a fragment.
struct AdminAPIAddress: Equatable {
    static let defaultURL = "http://127.0.0.1:8081"

    /// A name or an address, IPv6 without its brackets.
    let host: String
    let port: Int

    struct Invalid: Error {
        let reason: String
    }

    init(url: String) throws(Invalid) {
        guard (8...2048).contains(url.utf8.count) else { throw Invalid(reason: "must be like http://127.0.0.1:8081") }
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") {
            throw Invalid(
                reason: "https is not supported: the admin listener speaks plain HTTP; reach it on loopback, a "
                    + "private network or through an SSH tunnel")
        }
        guard lowered.hasPrefix("http://") else { throw Invalid(reason: "must start with http://") }
        var rest = Substring(url.dropFirst("http://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains(where: { "/?#@ \\".contains($0) }) else {
            throw Invalid(reason: "must be http://HOST[:PORT] with no user, path or query")
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw Invalid(reason: "an IPv6 address needs its ]") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid(reason: "must be http://[ADDRESS]:PORT") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty,
                host.utf8.allSatisfy({ Self.isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { throw Invalid(reason: "the IPv6 address is malformed") }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw Invalid(reason: "an IPv6 address goes in brackets") }
            host = String(parts[0])
            portText = parts.count == 2 ? parts[1] : nil
            guard (1...253).contains(host.utf8.count),
                host.utf8.allSatisfy({ Self.isHex($0) || (0x61...0x7A).contains($0 | 0x20) || $0 == 0x2D || $0 == 0x2E }
                )
            else { throw Invalid(reason: "the host must be a name or an address") }
        }
        if let portText {
            guard (1...5).contains(portText.utf8.count), portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let port = Int(portText), (1...65_535).contains(port)
            else { throw Invalid(reason: "the port must be 1 to 65535") }
            self.port = port
        } else {
            port = 80
        }
    }

    /// The `Host` header's value.
    var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte | 0x20)
    }
}

/// One HTTP response from the admin API.
struct AdminHTTPResponse {
    let status: Int
    /// Header fields, names lowercased; a repeated field keeps its last value.
    let headers: [String: String]
    let body: [UInt8]
}

/// Why no response arrived: the message names the address, never the request's headers.
struct AdminHTTPFailure: Error, CustomStringConvertible {
    let description: String
}

/// A blocking HTTP/1.1 client for the command line: one request per connection (`Connection: close`), every step
/// bounded by one deadline, the response head by 64 KiB and the body by 8 MiB. The bearer token goes only into
/// the request's `Authorization` header, never into a failure's text.
enum AdminHTTPClient {
    static let headLimit = 64 * 1024
    static let bodyLimit = 8 * 1024 * 1024

    static func send(
        method: String, target: String, bearer: String, body: [UInt8] = [], to address: AdminAPIAddress,
        timeoutSeconds: Int = 30
    ) throws(AdminHTTPFailure) -> AdminHTTPResponse {
        let deadline = monotonicMilliseconds() + Int64(timeoutSeconds) * 1000
        let socket = try connect(to: address, until: deadline)
        defer { close(socket) }
        let head =
            "\(method) \(target) HTTP/1.1\r\nHost: \(address.authority)\r\nUser-Agent: passkey-admin\r\n"
            + "Accept: application/json\r\nAuthorization: Bearer \(bearer)\r\nContent-Length: \(body.count)\r\n"
            + (body.isEmpty ? "" : "Content-Type: application/json\r\n") + "Connection: close\r\n\r\n"
        try write(Array(head.utf8) + body, to: socket, until: deadline)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if let response = try parse(received, complete: false) { return response }
            guard received.count <= headLimit + bodyLimit + 64 * 1024 else {
                throw AdminHTTPFailure(description: "the response from \(address.authority) is larger than 8 MiB")
            }
            let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
            } else if count == 0 {
                guard let response = try parse(received, complete: true) else {
                    throw AdminHTTPFailure(
                        description: "\(address.authority) closed the connection before a whole response")
                }
                return response
            } else if errno == EAGAIN || errno == EINTR {
                guard wait(socket, for: Int16(POLLIN), until: deadline) else {
                    throw AdminHTTPFailure(
                        description: "no response from \(address.authority) within \(timeoutSeconds) s")
                }
            } else {
                throw AdminHTTPFailure(
                    description: "reading from \(address.authority): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// A connected non-blocking socket to the first of the host's addresses that accepts.
    private static func connect(to address: AdminAPIAddress, until deadline: Int64) throws(AdminHTTPFailure) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(address.host, String(address.port), &hints, &found)
        guard resolved == 0, found != nil else {
            throw AdminHTTPFailure(
                description: "cannot resolve \(address.host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(found) }
        var lastError = "no address"
        var candidate = found
        while let entry = candidate {
            candidate = entry.pointee.ai_next
            let socket = Glibc.socket(
                entry.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard socket >= 0 else {
                lastError = String(cString: strerror(errno))
                continue
            }
            if Glibc.connect(socket, entry.pointee.ai_addr, entry.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
                lastError = String(cString: strerror(errno))
                close(socket)
                continue
            }
            guard wait(socket, for: Int16(POLLOUT), until: deadline) else {
                close(socket)
                throw AdminHTTPFailure(description: "cannot connect to \(address.authority): timed out")
            }
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket, SOL_SOCKET, SO_ERROR, &socketError, &length)
            guard socketError == 0 else {
                lastError = String(cString: strerror(socketError))
                close(socket)
                continue
            }
            return socket
        }
        throw AdminHTTPFailure(description: "cannot connect to \(address.authority): \(lastError)")
    }

    private static func write(_ bytes: [UInt8], to socket: Int32, until deadline: Int64) throws(AdminHTTPFailure) {
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a peer that closed early is an error here, not a SIGPIPE.
            let written = bytes.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(socket, for: Int16(POLLOUT), until: deadline) else {
                    throw AdminHTTPFailure(description: "sending the request timed out")
                }
            } else {
                throw AdminHTTPFailure(description: "sending the request: \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func wait(_ socket: Int32, for events: Int16, until deadline: Int64) -> Bool {
        while true {
            let remaining = deadline - monotonicMilliseconds()
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining, 60_000)))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// The response in `bytes` once it is whole: by its `Content-Length`, by the end of a chunked body, or (when
    /// `complete`, the peer having closed) by the end of the bytes. Nil while more is needed.
    static func parse(_ bytes: [UInt8], complete: Bool) throws(AdminHTTPFailure) -> AdminHTTPResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headEnd = firstIndex(of: separator, in: bytes, from: 0, limit: headLimit) else {
            if bytes.count > headLimit { throw AdminHTTPFailure(description: "the response head is over 64 KiB") }
            if complete { throw AdminHTTPFailure(description: "the admin API's answer is not an HTTP response") }
            return nil
        }
        let headText = String(decoding: bytes[..<headEnd], as: UTF8.self)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        let statusLine = lines.next() ?? ""
        let statusParts = statusLine.split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), statusParts[1].utf8.count == 3,
            let status = Int(statusParts[1]), (100...599).contains(status)
        else { throw AdminHTTPFailure(description: "the admin API's answer is not an HTTP response") }
        var headers: [String: String] = [:]
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":") else {
                throw AdminHTTPFailure(description: "a malformed header in the admin API's answer")
            }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let bodyStart = headEnd + separator.count
        if (100..<200).contains(status) {
            // An interim response: the real one follows it.
            return try parse(Array(bytes[bodyStart...]), complete: complete)
        }
        if status == 204 || status == 304 { return AdminHTTPResponse(status: status, headers: headers, body: []) }
        if headers["transfer-encoding"]?.lowercased() == "chunked" {
            guard let body = try dechunk(bytes[bodyStart...]) else {
                if complete { throw AdminHTTPFailure(description: "the admin API's answer ended midway") }
                return nil
            }
            return AdminHTTPResponse(status: status, headers: headers, body: body)
        }
        if let lengthText = headers["content-length"] {
            guard (1...8).contains(lengthText.utf8.count), lengthText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let length = Int(lengthText), length <= bodyLimit
            else { throw AdminHTTPFailure(description: "the admin API's answer has a bad or too large Content-Length") }
            guard bytes.count - bodyStart >= length else {
                if complete { throw AdminHTTPFailure(description: "the admin API's answer ended midway") }
                return nil
            }
            return AdminHTTPResponse(
                status: status, headers: headers, body: Array(bytes[bodyStart..<bodyStart + length]))
        }
        guard complete else { return nil }
        guard bytes.count - bodyStart <= bodyLimit else {
            throw AdminHTTPFailure(description: "the admin API's answer is larger than 8 MiB")
        }
        return AdminHTTPResponse(status: status, headers: headers, body: Array(bytes[bodyStart...]))
    }

    /// A chunked body, or nil until its last chunk has arrived.
    private static func dechunk(_ bytes: ArraySlice<UInt8>) throws(AdminHTTPFailure) -> [UInt8]? {
        var body: [UInt8] = []
        var position = bytes.startIndex
        while true {
            guard let lineEnd = firstIndex(of: [13, 10], in: Array(bytes[position...]), from: 0, limit: 64) else {
                if bytes.endIndex - position > 64 { throw AdminHTTPFailure(description: "a malformed chunk") }
                return nil
            }
            let sizeText =
                String(decoding: bytes[position..<position + lineEnd], as: UTF8.self)
                .split(separator: ";").first.map(String.init) ?? ""
            guard (1...7).contains(sizeText.utf8.count), let size = Int(sizeText, radix: 16),
                body.count + size <= bodyLimit
            else { throw AdminHTTPFailure(description: "a malformed or too large chunk") }
            let dataStart = position + lineEnd + 2
            if size == 0 { return body }
            guard bytes.endIndex - dataStart >= size + 2 else { return nil }
            body.append(contentsOf: bytes[dataStart..<dataStart + size])
            position = dataStart + size + 2
        }
    }

    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int, limit: Int) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        let last = min(bytes.count - needle.count, limit)
        guard start <= last else { return nil }
        for index in start...last
        where bytes[index] == needle[0] && Array(bytes[index..<index + needle.count]) == needle {
            return index
        }
        return nil
    }
}
