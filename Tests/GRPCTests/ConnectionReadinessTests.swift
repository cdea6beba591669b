import Foundation
import GRPC
import GRPCEchoMessages
import NetworkIO
import Synchronization
import TLSChannels
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A client connection carries calls only once the server's SETTINGS frame has arrived. A TCP connection the
/// kernel completed is not yet one a server took up: it may sit in the listen queue of a server that is closing
/// its listener (and is reset with it), or the server may never speak HTTP/2 on it. A call sent on it would be
/// lost with no way to know whether it ran; a call that waited for the SETTINGS provably never ran, and goes to
/// another address even when it is not idempotent.
final class ConnectionReadinessTests: XCTestCase {
    private var servers: [GRPCServer] = []
    private var clients: [GRPCClient] = []

    override func tearDown() {
        for client in clients { client.close() }
        for server in servers { server.shutdown() }
        clients = []
        servers = []
    }

    private func startEchoServer() throws -> SocketAddress {
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: 0))
        configuration.threadCount = 1
        let server = GRPCServer(configuration: configuration)
        EchoService.register(on: server)
        let address = try server.start()
        servers.append(server)
        return address
    }

    /// A call that is not idempotent, made while the client knows only `silent`; `good` joins the set shortly
    /// after. It must succeed there, and `silent` must never have seen its HEADERS.
    private func callSucceedsElsewhere(_ silent: RawPeerServer) async throws {
        let good = try startEchoServer()
        var configuration = GRPCClientConfiguration()
        configuration.connectTimeoutNanoseconds = 300_000_000
        configuration.unsentRetryWindowNanoseconds = 2_000_000_000
        let client = try GRPCClient(addresses: [silent.address], configuration: configuration)
        clients.append(client)
        let call = Task {
            try await client.unary(
                EchoService.get, request: EchoRequest(text: "once"),
                deadline: .seconds(5), idempotent: false)
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        client.update(addresses: [silent.address, good])
        let response = try await call.value
        XCTAssertEqual(response.text, "once")
        XCTAssertGreaterThan(silent.connections, 0, "the client never connected to the silent server")
        XCTAssertEqual(silent.headersFrames, 0, "a call was sent before the server's SETTINGS arrived")
    }

    func testACallWaitsForTheServersSettingsAndGoesElsewhereWhenTheyNeverCome() async throws {
        let silent = try RawPeerServer(behavior: .neverAnswer)
        defer { silent.stop() }
        try await callSucceedsElsewhere(silent)
    }

    func testAConnectionResetBeforeTheServersSettingsFailsNoCall() async throws {
        // As a connection in the listen queue of a server that closes its listener: accepted by the kernel, then
        // reset.
        let resetting = try RawPeerServer(behavior: .resetAfter(milliseconds: 30))
        defer { resetting.stop() }
        try await callSucceedsElsewhere(resetting)
    }

    func testATLSServerClosesWithCloseNotifyBeforeItsFIN() throws {
        let directory = try Certificates.make()
        let security = try ChannelTLS.serverSecurity(
            certificateChainPath: directory + "/server.pem", privateKeyPath: directory + "/server.key")
        let group = try EventLoopGroup(threadCount: 1, name: "tls-close")
        defer { group.shutdown() }
        let listener = try TCPListener(
            group: group, address: SocketAddress(host: "127.0.0.1", port: 0), security: security
        ) { _ in AnswerAndClose() }
        defer { listener.close() }
        // openssl s_client reports a TLS connection that ends without close_notify as "unexpected eof".
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "openssl", "s_client", "-connect", "127.0.0.1:\(listener.localAddress.port)", "-quiet", "-no_ign_eof",
            "-alpn", "h2",
        ]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let watchdog = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: watchdog)
        defer { watchdog.cancel() }
        input.fileHandleForWriting.write(Data("hello\n".utf8))
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try? input.fileHandleForWriting.close()
        XCTAssertTrue(text.contains("bye"), text)
        XCTAssertFalse(text.contains("unexpected eof"), "the server closed without close_notify:\n\(text)")
    }
}

/// Answers the first bytes with "bye" and closes.
private final class AnswerAndClose: ChannelHandler {
    private var answered = false
    func channelActive(_ channel: Channel) {}
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard !answered else { return }
        answered = true
        Array("bye\n".utf8).withUnsafeBytes { channel.write($0) }
        channel.close()
    }
    func channelWillFlush(_ channel: Channel) {}
    func channelInactive(_ channel: Channel, error: NetworkError?) {}
}

/// A TCP server that accepts connections and never sends a byte: it reads what the client sends (and counts the
/// HTTP/2 HEADERS frames in it), then either keeps the connection open or resets it.
private final class RawPeerServer: @unchecked Sendable {
    enum Behavior {
        case neverAnswer
        case resetAfter(milliseconds: Int)
    }

    let address: SocketAddress
    private let fd: Int32
    private let behavior: Behavior
    private let state = Mutex<(connections: Int, headers: Int, open: [Int32])>((0, 0, []))
    private let stopped = Atomic<Bool>(false)

    init(behavior: Behavior) throws {
        self.behavior = behavior
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound, listen(fd, 16) == 0 else { throw NetworkError(.system, "bind failed", errno: errno) }
        self.address = SocketAddress(host: "127.0.0.1", port: UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    var connections: Int { state.withLock { $0.connections } }
    var headersFrames: Int { state.withLock { $0.headers } }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        for connection in state.withLock({ $0.open }) { close(connection) }
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            state.withLock {
                $0.connections += 1
                $0.open.append(connection)
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        var timeout = timeval(tv_sec: 0, tv_usec: 10_000)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let started = monotonicNanoseconds()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !stopped.load(ordering: .relaxed) {
            if case .resetAfter(let milliseconds) = behavior,
                monotonicNanoseconds() - started >= UInt64(milliseconds) * 1_000_000
            {
                // SO_LINGER with a zero timeout: close() sends RST.
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                state.withLock { $0.open.removeAll { $0 == connection } }
                close(connection)
                break
            }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
                let headers = Self.headersFrames(in: received)
                state.withLock { $0.headers = max($0.headers, headers) }
            } else if count == 0 {
                break
            }
        }
    }

    /// HEADERS frames after the client preface in `bytes`.
    private static func headersFrames(in bytes: [UInt8]) -> Int {
        var offset = 24
        var count = 0
        while offset + 9 <= bytes.count {
            let length = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
            if bytes[offset + 3] == 1 { count += 1 }
            offset += 9 + length
        }
        return count
    }
}
