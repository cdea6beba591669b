import CNetworkIO
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Accepts TCP connections on every loop of a group (one `SO_REUSEPORT` socket per loop, so the kernel spreads
/// connections over the cores) and gives each accepted ``Channel`` a handler made by the caller.
///
/// `SO_REUSEPORT` would also let another process of the same user bind the same port and silently take a share of
/// its connections (a second replica given the same address, or an old process left running after a deploy). So
/// the port is first claimed with a plain socket: when anything else listens there, binding fails with "address
/// in use", as it would without `SO_REUSEPORT`.
public final class TCPListener: Sendable {
    /// Makes the protocol handler for a newly accepted channel, on that channel's loop.
    public typealias HandlerFactory = @Sendable (Channel) -> ChannelHandler
    /// Makes the security layer (TLS) for a newly accepted channel, or nil for plaintext.
    public typealias SecurityFactory = @Sendable () throws -> ChannelSecurity

    /// The address actually bound (with the real port when port 0 was asked for).
    public let localAddress: SocketAddress
    private let acceptors: [Acceptor]

    /// Binds and starts accepting on every loop of `group`.
    public init(
        group: EventLoopGroup, address: SocketAddress, backlog: Int32 = 1024,
        security: SecurityFactory? = nil, handlerFactory: @escaping HandlerFactory
    ) throws {
        var acceptors: [Acceptor] = []
        var bound = address
        if address.port != 0 { try Self.checkPortIsFree(address) }
        do {
            for loop in group.loops {
                let fd = try Self.bindSocket(bound, backlog: backlog)
                if bound.port == 0, let actual = SocketAddress.local(of: fd) { bound = actual }
                acceptors.append(Acceptor(loop: loop, fd: fd, security: security, handlerFactory: handlerFactory))
            }
        } catch {
            for acceptor in acceptors { Glibc.close(acceptor.fd) }
            throw error
        }
        localAddress = bound
        self.acceptors = acceptors
        for acceptor in acceptors {
            acceptor.loop.execute { acceptor.start() }
        }
    }

    /// Stops accepting (on the loops, soon); connections already accepted are not affected. Connections still in
    /// the listen queue are reset by the kernel.
    public func close() {
        for acceptor in acceptors {
            acceptor.loop.execute { acceptor.stop(acceptingQueued: false) }
        }
    }

    /// Stops accepting and returns once every listening socket is closed. The connections the kernel has already
    /// completed (in the listen queue) are accepted first and handed to the handler factory like any other:
    /// closing the socket with them still queued would reset them, though a client may already have sent on one.
    /// Blocks the calling thread, which must not be one of the group's loops; gives up after `timeoutNanoseconds`
    /// (loops that no longer run never close their sockets).
    public func closeAndWait(timeoutNanoseconds: UInt64 = 2_000_000_000) {
        let stopped = StopCount()
        for acceptor in acceptors {
            acceptor.loop.execute {
                acceptor.stop(acceptingQueued: true)
                stopped.count.wrappingAdd(1, ordering: .releasing)
            }
        }
        let deadline = monotonicNanoseconds() &+ timeoutNanoseconds
        while stopped.count.load(ordering: .acquiring) < acceptors.count && monotonicNanoseconds() < deadline {
            usleep(500)
        }
    }

    private final class StopCount: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Binds (and releases) a socket without `SO_REUSEPORT`: fails with EADDRINUSE when anything listens there.
    private static func checkPortIsFree(_ address: SocketAddress) throws {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetworkError(.system, "socket failed", errno: errno) }
        defer { Glibc.close(fd) }
        var one: Int32 = 1
        // SO_REUSEADDR only lets the bind through connections in TIME_WAIT, never past a listener.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard try address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
            throw NetworkError(.system, "bind on \(address) failed", errno: errno)
        }
    }

    private static func bindSocket(_ address: SocketAddress, backlog: Int32) throws -> Int32 {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetworkError(.system, "socket failed", errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let result = try address.withSockAddr { bind(fd, $0, $1) }
        guard result == 0, listen(fd, backlog) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw NetworkError(.system, "bind/listen on \(address) failed", errno: code)
        }
        return fd
    }
}

/// One listening socket on one loop. Its mutable state is only touched on `loop`'s thread (it is reached from
/// other threads only through `loop.execute`), which is why the `@unchecked Sendable` holds.
private final class Acceptor: EventLoopSource, @unchecked Sendable {
    let loop: EventLoop
    let fd: Int32
    let security: TCPListener.SecurityFactory?
    let handlerFactory: TCPListener.HandlerFactory
    private var key: UInt64 = 0
    private var open = true

    init(
        loop: EventLoop, fd: Int32, security: TCPListener.SecurityFactory?,
        handlerFactory: @escaping TCPListener.HandlerFactory
    ) {
        self.loop = loop
        self.fd = fd
        self.security = security
        self.handlerFactory = handlerFactory
    }

    func start() {
        guard open else { return }
        do { key = try loop.register(fd: fd, events: EpollEvents.readable, source: self) } catch {
            stop(acceptingQueued: false)
        }
    }

    func stop(acceptingQueued: Bool) {
        guard open else { return }
        if acceptingQueued && key != 0 { acceptQueued(atMost: 4096) }
        open = false
        if key != 0 { loop.deregister(key: key, fd: fd) }
        Glibc.close(fd)
    }

    func handleEvents(_ events: UInt32) {
        acceptQueued(atMost: 64)
    }

    /// Accepts up to `limit` queued connections, stopping early when none is left.
    private func acceptQueued(atMost limit: Int) {
        for _ in 0..<limit {
            guard open else { return }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    cnetworkio_accept4(fd, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if client < 0 { return }
            var channelSecurity: ChannelSecurity?
            if let security {
                guard let made = try? security() else {
                    Glibc.close(client)
                    continue
                }
                channelSecurity = made
            }
            let channel = Channel(
                loop: loop, fd: client, remoteAddress: SocketAddress.from(storage: storage),
                security: channelSecurity, connecting: false)
            channel.handler = handlerFactory(channel)
            do { try channel.start() } catch { Glibc.close(client) }
        }
    }
}
