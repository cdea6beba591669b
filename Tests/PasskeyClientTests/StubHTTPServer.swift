import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for the URLSession transport's tests: each connection gets one answer from
/// the script and is closed, or is held open without an answer until the server stops.
final class StubHTTPServer: Sendable {
    enum Reply: Sendable {
        /// Answers with a status, header fields and a body.
        case respond(Int, [String: String], String)
        /// Reads the request and never answers.
        case hang
    }

    let port: Int
    private let listener: Int32
    private let handler: @Sendable (_ head: String, _ index: Int) -> Reply
    private let state = Mutex<(count: Int, open: [Int32], stopped: Bool)>((0, [], false))

    /// Starts listening; `handler` picks the reply for the `index`th request (0 first).
    init(_ handler: @escaping @Sendable (_ head: String, _ index: Int) -> Reply) throws {
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
        guard bound, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// How many requests arrived.
    var requestCount: Int { state.withLock { $0.count } }

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Closes the listener and every connection held open.
    func stop() {
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
            let index = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.count += 1
                return state.count - 1
            }
            guard let index else {
                close(connection)
                return
            }
            Thread { [self] in serve(connection, index: index) }.start()
        }
    }

    private func serve(_ connection: Int32, index: Int) {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else {
                close(connection)
                return
            }
            head += buffer[0..<count]
        }
        switch handler(String(decoding: head, as: UTF8.self), index) {
        case .hang:
            state.withLock { $0.open.append(connection) }
        case .respond(let status, let headers, let body):
            var text = "HTTP/1.1 \(status) Reply\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
            for (name, value) in headers { text += "\(name): \(value)\r\n" }
            text += "\r\n" + body
            let bytes = Array(text.utf8)
            _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            close(connection)
        }
    }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
