import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for the HTTP clients' tests (PasskeyClient's URLSession transport, the
/// session verifier's key-set fetcher, passkey-admin's libcurl client): each connection gets one answer from the
/// script and is closed, or is held open without an answer until the server stops.
public final class StubHTTPServer: Sendable {
    public enum Reply: Sendable {
        /// Answers with a status, header fields and a body.
        case respond(Int, [String: String], String)
        /// Answers 200 with a body whose end is the end of the connection (no length declared).
        case stream(String)
        /// Sends these bytes as they are, whatever they are, and closes the connection.
        case raw([UInt8])
        /// Reads the request and never answers.
        case hang
    }

    public let port: Int
    private let listener: Int32
    private let handler: @Sendable (_ head: String, _ index: Int) -> Reply
    private let state = Mutex<(count: Int, head: String, open: [Int32], stopped: Bool)>((0, "", [], false))

    /// Starts listening; `handler` picks the reply for the `index`th request (0 first) from its head.
    public init(_ handler: @escaping @Sendable (_ head: String, _ index: Int) -> Reply) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    /// How many requests arrived.
    public var requestCount: Int { state.withLock { $0.count } }
    /// The head of the last request that arrived.
    public var lastRequestHead: String { state.withLock { $0.head } }

    /// The server's URL, with `path`.
    public func url(path: String = "") -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// Closes the listener and every connection held open.
    public func stop() {
        let sockets = state.withLock { state -> [Int32] in
            state.stopped = true
            defer { state.open = [] }
            return state.open
        }
        for socket in sockets { close(socket) }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            guard state.withLock({ !$0.stopped }) else {
                close(connection)
                return
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 4 || Array(head.suffix(4)) != Array("\r\n\r\n".utf8) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else {
                close(connection)
                return
            }
            head += buffer[0..<count]
        }
        let text = String(decoding: head, as: UTF8.self)
        let index = state.withLock { state -> Int in
            state.count += 1
            state.head = text
            return state.count - 1
        }
        switch handler(text, index) {
        case .hang:
            state.withLock { $0.open.append(connection) }
        case .respond(let status, let headers, let body):
            var response = "HTTP/1.1 \(status) Reply\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
            for (name, value) in headers { response += "\(name): \(value)\r\n" }
            reply(response + "\r\n" + body, on: connection)
        case .stream(let body):
            reply("HTTP/1.1 200 Reply\r\nConnection: close\r\n\r\n" + body, on: connection)
        case .raw(let bytes):
            reply(bytes, on: connection)
        }
    }

    private func reply(_ response: String, on connection: Int32) { reply(Array(response.utf8), on: connection) }

    private func reply(_ bytes: [UInt8], on connection: Int32) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { break }
            written += count
        }
        close(connection)
    }
}
