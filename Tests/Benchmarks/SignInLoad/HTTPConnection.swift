import Foundation

/// A blocking HTTP/1.1 keep-alive connection for the load generator: one request at a time, JSON bodies.
final class HTTPConnection {
    private let host: String
    private let port: UInt16
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    deinit { if fd >= 0 { close(fd) } }

    struct Response {
        let status: Int
        let body: [UInt8]
    }

    enum Failure: Error { case connect, io, malformed }

    func post(_ path: String, _ body: [UInt8]) throws -> Response {
        if fd < 0 { try open() }
        var request = Array(
            "POST \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
                .utf8)
        request += body
        do {
            try write(request)
            return try readResponse()
        } catch {
            // One reconnect: the server may have closed an idle keep-alive connection.
            close(fd)
            fd = -1
            buffer.removeAll()
            try open()
            try write(request)
            return try readResponse()
        }
    }

    private func open() throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw Failure.connect }
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure.io }
            offset += written
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = recv(fd, &chunk, chunk.count, 0)
        guard count > 0 else { throw Failure.io }
        buffer += chunk[0..<count]
    }

    private func readResponse() throws -> Response {
        var headEnd: Int?
        while headEnd == nil {
            if let index = find([13, 10, 13, 10]) { headEnd = index } else { try fill() }
        }
        let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, let status = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else {
            throw Failure.malformed
        }
        var length = 0
        for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let start = headEnd! + 4
        while buffer.count < start + length { try fill() }
        let body = Array(buffer[start..<(start + length)])
        buffer.removeFirst(start + length)
        return Response(status: status, body: body)
    }

    private func find(_ pattern: [UInt8]) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        for index in 0...(buffer.count - pattern.count) where buffer[index] == pattern[0] {
            if Array(buffer[index..<(index + pattern.count)]) == pattern { return index }
        }
        return nil
    }
}
