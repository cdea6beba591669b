import Foundation

/// A blocking HTTP/1.1 keep-alive connection for the load generator: one request at a time, JSON bodies.
final class HTTPConnection {
    private let host: String
    private let port: UInt16
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 16 * 1024)

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
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
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
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure.io }
        buffer.append(contentsOf: chunk[0..<count])
    }

    // The generator's own CPU counts against the machine it measures, so responses are read from bytes: no
    // per-read allocation, no string splitting.
    private func readResponse() throws -> Response {
        var headEnd = findHeadEnd(from: 0)
        while headEnd == nil {
            let searched = max(0, buffer.count - 3)
            try fill()
            headEnd = findHeadEnd(from: searched)
        }
        let head = buffer[0..<headEnd!]
        // "HTTP/1.1 200 ..."
        guard head.count >= 12, let status = decimal(head[(head.startIndex + 9)..<(head.startIndex + 12)]) else {
            throw Failure.malformed
        }
        let length = contentLength(in: head) ?? 0
        let start = headEnd! + 4
        while buffer.count < start + length { try fill() }
        let body = Array(buffer[start..<(start + length)])
        buffer.removeSubrange(0..<(start + length))
        return Response(status: status, body: body)
    }

    private func findHeadEnd(from start: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        var index = start
        while index + 3 < buffer.count {
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
                return index
            }
            index += 1
        }
        return nil
    }

    /// The value of the `Content-Length` field, matched without regard to case.
    private func contentLength(in head: ArraySlice<UInt8>) -> Int? {
        let name = Array("content-length:".utf8)
        var index = head.startIndex
        while index + name.count <= head.endIndex {
            let atLineStart = index == head.startIndex || head[index - 1] == 10
            if atLineStart && (0..<name.count).allSatisfy({ head[index + $0] | 0x20 == name[$0] | 0x20 }) {
                var cursor = index + name.count
                while cursor < head.endIndex && head[cursor] == 32 { cursor += 1 }
                var end = cursor
                while end < head.endIndex && head[end] >= 48 && head[end] <= 57 { end += 1 }
                return decimal(head[cursor..<end])
            }
            index += 1
        }
        return nil
    }

    private func decimal(_ digits: ArraySlice<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 9 else { return nil }
        var value = 0
        for digit in digits {
            guard digit >= 48 && digit <= 57 else { return nil }
            value = value * 10 + Int(digit - 48)
        }
        return value
    }
}
