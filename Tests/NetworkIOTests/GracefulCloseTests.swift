import Foundation
import NetworkIO
import Synchronization
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// `Channel.close()` ends a connection the way a peer can rely on: everything queued arrives, then a FIN (never a
/// RST, even while the peer is still sending), and the socket closes once the peer has ended its side too, or after
/// the close's bound.
final class GracefulCloseTests: XCTestCase {
    private var group: EventLoopGroup!

    override func setUp() async throws {
        group = try EventLoopGroup(threadCount: 1, name: "close-test")
    }

    override func tearDown() async throws {
        group.shutdown()
    }

    /// A server that, on the first bytes it reads, writes `response` and closes; `closed` is told when the
    /// channel is inactive, with the time it took from the close.
    private func startServer(
        response: [UInt8], closeTimeoutNanoseconds: UInt64 = 1_000_000_000, closed: CloseRecord
    ) throws -> TCPListener {
        try TCPListener(group: group, address: SocketAddress(host: "127.0.0.1", port: 0)) { channel in
            channel.closeTimeoutNanoseconds = closeTimeoutNanoseconds
            return RespondAndClose(response: response, closed: closed)
        }
    }

    func testEverythingQueuedArrivesAndTheConnectionEndsWithAFINWhileThePeerStillSends() throws {
        // More than the socket buffers hold at once, so most of it is still queued when close() is called.
        let block = (0..<4093).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let response = Array([[UInt8]](repeating: block, count: (24 << 20) / block.count).joined())
        let closed = CloseRecord()
        let listener = try startServer(response: response, closed: closed)
        defer { listener.close() }
        let peer = try BlockingPeer(port: listener.localAddress.port)
        defer { peer.close() }
        try peer.send(Array("hello".utf8))
        // The server has closed by now: what the peer sends next arrives at a closing socket, which would make a
        // plain close() answer with RST.
        usleep(50_000)
        try peer.send(Array(repeating: 7, count: 256 * 1024))
        let (received, end) = peer.readToEnd()
        XCTAssertEqual(end, .endOfStream, "the connection did not end with a FIN")
        XCTAssertEqual(received.count, response.count)
        let same =
            received.count == response.count
            && received.withUnsafeBytes { a in
                response.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
            }
        XCTAssertTrue(same, "the bytes that arrived differ from those sent")
        XCTAssertTrue(closed.wait(seconds: 2))
    }

    func testTheSocketClosesWhenThePeerEndsItsSideOrAtTheBound() throws {
        let closed = CloseRecord()
        let listener = try startServer(
            response: Array("bye".utf8), closeTimeoutNanoseconds: 300_000_000, closed: closed)
        defer { listener.close() }

        // A peer that reads the end and closes at once: the server's socket closes right after.
        let prompt = try BlockingPeer(port: listener.localAddress.port)
        try prompt.send(Array("hi".utf8))
        let (answer, end) = prompt.readToEnd()
        XCTAssertEqual(answer, Array("bye".utf8))
        XCTAssertEqual(end, .endOfStream)
        prompt.close()
        XCTAssertTrue(closed.wait(seconds: 2))
        XCTAssertLessThan(closed.lastDuration, 200_000_000, "the close waited although the peer had closed")

        // A peer that never ends its side: the server waits for the bound, then closes anyway.
        let silent = try BlockingPeer(port: listener.localAddress.port)
        defer { silent.close() }
        try silent.send(Array("hi".utf8))
        XCTAssertTrue(closed.wait(seconds: 3))
        XCTAssertGreaterThanOrEqual(closed.lastDuration, 250_000_000)
        XCTAssertLessThan(closed.lastDuration, 1_000_000_000)
        // It still got the answer and the FIN before the bound ran out.
        let (late, lateEnd) = silent.readToEnd()
        XCTAssertEqual(late, Array("bye".utf8))
        XCTAssertEqual(lateEnd, .endOfStream)
    }
}

/// When a channel became inactive, and how long after its close() that was.
private final class CloseRecord: Sendable {
    private let state = Mutex<(count: Int, waited: Int, duration: UInt64)>((0, 0, 0))

    func record(_ duration: UInt64) {
        state.withLock {
            $0.count += 1
            $0.duration = duration
        }
    }

    /// Waits for the next close not yet waited for.
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let seen = state.withLock { state -> Bool in
                guard state.count > state.waited else { return false }
                state.waited += 1
                return true
            }
            if seen { return true }
            usleep(2_000)
        }
        return false
    }

    var lastDuration: UInt64 { state.withLock { $0.duration } }
}

private final class RespondAndClose: ChannelHandler {
    let response: [UInt8]
    let closed: CloseRecord
    private var closeStarted: UInt64 = 0

    init(response: [UInt8], closed: CloseRecord) {
        self.response = response
        self.closed = closed
    }

    func channelActive(_ channel: Channel) {}

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard closeStarted == 0 else { return }
        response.withUnsafeBytes { channel.write($0) }
        closeStarted = monotonicNanoseconds()
        channel.close()
    }

    func channelWillFlush(_ channel: Channel) {}

    func channelInactive(_ channel: Channel, error: NetworkError?) {
        closed.record(monotonicNanoseconds() - closeStarted)
    }
}

/// A plain blocking client socket.
private final class BlockingPeer {
    enum End: Equatable {
        case endOfStream
        case reset(Int32)
        case timedOut
    }

    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { throw NetworkError(.system, "connect failed", errno: errno) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw NetworkError(.system, "send failed", errno: errno) }
            offset += sent
        }
    }

    /// Everything until the peer's FIN, a reset or 5 s of silence.
    func readToEnd() -> ([UInt8], End) {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
                continue
            }
            if count == 0 { return (received, .endOfStream) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return (received, .timedOut) }
            return (received, .reset(errno))
        }
    }

    func close() { Glibc.close(fd) }
}
