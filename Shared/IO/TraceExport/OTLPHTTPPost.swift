import NetworkIO

#if canImport(Glibc)
    import Glibc
#endif

/// One blocking HTTP/1.1 POST of an OTLP body over a new TCP connection (`Connection: close`), every step bounded
/// by one overall timeout: name lookup aside, the connect, the write and the read of the response all share it.
/// Only the status line matters: 2xx is success. The response is read to its end (at most 64 KiB) so the
/// connection closes cleanly.
enum OTLPHTTPPost {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func send(
        _ body: [UInt8], host: String, port: Int, path: String, timeoutMilliseconds: Int32
    ) -> Result<Void, Failure> {
        let deadline = now() + Int64(timeoutMilliseconds)
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            return .failure(Failure(description: "cannot resolve \(host)"))
        }
        defer { freeaddrinfo(found) }
        let socket = Glibc.socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else { return .failure(Failure(description: "socket: errno \(errno)")) }
        defer { close(socket) }
        if connect(socket, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
            return .failure(Failure(description: "connect: errno \(errno)"))
        }
        guard wait(socket, for: Int16(POLLOUT), until: deadline) else {
            return .failure(Failure(description: "connect timed out"))
        }
        var socketError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(socket, SOL_SOCKET, SO_ERROR, &socketError, &length)
        guard socketError == 0 else { return .failure(Failure(description: "connect: errno \(socketError)")) }

        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let head =
            "POST \(path) HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: passkey-server\r\n"
            + "Content-Type: application/x-protobuf\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        let request = Array(head.utf8) + body
        var offset = 0
        while offset < request.count {
            let written = request.withUnsafeBytes { write(socket, $0.baseAddress! + offset, $0.count - offset) }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EINTR) {
                guard wait(socket, for: Int16(POLLOUT), until: deadline) else {
                    return .failure(Failure(description: "write timed out"))
                }
            } else {
                return .failure(Failure(description: "write: errno \(errno)"))
            }
        }
        // The request is complete: say so, and read the answer to its end.
        shutdown(socket, Int32(SHUT_WR))
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while response.count < 64 * 1024 {
            let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
            if count > 0 {
                response.append(contentsOf: buffer[0..<count])
            } else if count == 0 {
                break
            } else if errno == EAGAIN || errno == EINTR {
                guard wait(socket, for: Int16(POLLIN), until: deadline) else {
                    if statusCode(response) != nil { break }
                    return .failure(Failure(description: "no response within the export timeout"))
                }
            } else {
                break
            }
        }
        guard let status = statusCode(response) else {
            return .failure(Failure(description: "no HTTP response"))
        }
        guard (200..<300).contains(status) else { return .failure(Failure(description: "HTTP \(status)")) }
        return .success(())
    }

    /// The status of `HTTP/1.x NNN …` at the start of `response`.
    static func statusCode(_ response: [UInt8]) -> Int? {
        guard response.count >= 12, response.starts(with: Array("HTTP/1.".utf8)) else { return nil }
        let digits = response[9..<12]
        guard digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    private static func wait(_ socket: Int32, for events: Int16, until deadline: Int64) -> Bool {
        while true {
            let left = deadline - now()
            guard left > 0 else { return false }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: left))
            if ready > 0 { return true }
            if ready == 0 { return false }
            if errno != EINTR { return false }
        }
    }

    /// Monotonic milliseconds.
    private static func now() -> Int64 { Int64(monotonicNanoseconds() / 1_000_000) }
}
