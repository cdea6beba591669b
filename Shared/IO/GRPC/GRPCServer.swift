import HTTP2
import NetworkIO
import Observability
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Settings for a ``GRPCServer``.
public struct GRPCServerConfiguration: Sendable {
    /// Where to listen (port 0 picks a free port; see ``GRPCServer/localAddress``).
    public var address: SocketAddress
    /// Event-loop threads (default: one per core).
    public var threadCount: Int = EventLoopGroup.onlineCoreCount
    /// The largest request message accepted; larger ones end the call with RESOURCE_EXHAUSTED.
    public var maxReceiveMessageSize: Int = 4 * 1024 * 1024
    /// The largest response message sent; larger ones end the call with RESOURCE_EXHAUSTED.
    public var maxSendMessageSize: Int = 4 * 1024 * 1024
    /// HTTP/2 limits and protections.
    public var http2 = HTTP2Configuration()
    /// TLS for incoming connections (ALPN h2, optional client-certificate verification); nil for h2c.
    public var tls: (@Sendable () throws -> ChannelSecurity)?
    /// Decides which peers may call which methods; nil lets every call run.
    public var authorizer: (any GRPCCallAuthorizer)?
    /// How long calls in flight may run after shutdown starts.
    public var drainTimeoutNanoseconds: UInt64 = 10_000_000_000
    /// Where the server's events go.
    public var logger: Logger = .disabled

    /// A configuration listening on `address` with default limits.
    public init(address: SocketAddress) {
        self.address = address
    }
}

/// A gRPC server: register methods, then ``start()`` (or ``run()`` until SIGTERM) and ``shutdown()`` with drain.
public final class GRPCServer: Sendable {
    private struct State {
        var methods: [String: MethodKind] = [:]
        var group: EventLoopGroup?
        var listener: TCPListener?
        var connections: [ObjectIdentifier: ServerConnectionRef] = [:]
        var shutdownHandlers: [@Sendable () -> Void] = []
        var draining = false
    }

    /// The configuration the server was made with.
    public let configuration: GRPCServerConfiguration
    private let state = Mutex(State())
    private let openConnections = Atomic<Int>(0)

    /// Creates a server; nothing listens until ``start()``.
    public init(configuration: GRPCServerConfiguration) {
        self.configuration = configuration
    }

    /// Adds a method; must be called before ``start()``.
    public func register(_ method: some GRPCServerMethod) {
        state.withLock { $0.methods[method.path] = method.kind.kind }
    }

    /// Adds a function called when shutdown begins (health uses it to report NOT_SERVING).
    public func onShutdown(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.shutdownHandlers.append(handler) }
    }

    /// The paths of the registered methods.
    public var registeredPaths: Set<String> { state.withLock { Set($0.methods.keys) } }

    /// The bound address once started.
    public var localAddress: SocketAddress? { state.withLock { $0.listener?.localAddress } }

    /// The number of connections currently open.
    public var connectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Starts the loops and the listener; returns the bound address.
    @discardableResult
    public func start() throws -> SocketAddress {
        let group = try EventLoopGroup(threadCount: configuration.threadCount, name: "grpc-server")
        let methods = MethodTable(state.withLock { $0.methods })
        let configuration = self.configuration
        let listener: TCPListener
        do {
            listener = try TCPListener(group: group, address: configuration.address, security: configuration.tls) {
                [weak self] channel in
                let connection = ServerConnection(
                    channel: channel, methods: methods, configuration: configuration)
                self?.track(connection)
                return connection.session
            }
        } catch {
            group.shutdown()
            throw error
        }
        state.withLock {
            $0.group = group
            $0.listener = listener
        }
        configuration.logger.log(.info, "server.started", ("address", listener.localAddress.description))
        return listener.localAddress
    }

    private func track(_ connection: ServerConnection) {
        openConnections.wrappingAdd(1, ordering: .relaxed)
        let id = ObjectIdentifier(connection)
        let draining = state.withLock { state -> Bool in
            state.connections[id] = ServerConnectionRef(connection)
            return state.draining
        }
        connection.onClose = { [weak self] in
            guard let self else { return }
            self.openConnections.wrappingSubtract(1, ordering: .relaxed)
            _ = self.state.withLock { $0.connections.removeValue(forKey: id) }
        }
        if draining { connection.beginDrain() }
    }

    /// How long shutdown waits, after the drain, for the connections it closed to finish closing: a little more
    /// than a channel's own close bound (``NetworkIO/Channel/closeTimeoutNanoseconds``).
    private static let closeWaitNanoseconds: UInt64 = 1_200_000_000

    /// Starts shutdown: health handlers run, the listener closes, every connection gets GOAWAY, and calls in
    /// flight may finish until the drain timeout; then remaining connections are closed and the loops stop.
    /// Each connection closes gracefully once its last call has ended: the final GOAWAY is followed by a FIN
    /// (after TLS's close_notify), and the socket is closed once the client has ended its side too.
    /// Blocks the calling thread: call it from `main` or a thread you own, never from a loop or task.
    public func shutdown() {
        let (handlers, listener, connections, group) = state.withLock { state in
            // A second shutdown (or one concurrent with the first) leaves the listener to the first.
            let listener = state.draining ? nil : state.listener
            state.draining = true
            return (state.shutdownHandlers, listener, Array(state.connections.values), state.group)
        }
        configuration.logger.log(.info, "server.draining", ("connections", "\(connections.count)"))
        for handler in handlers { handler() }
        // Returns once no listening socket is left, so that every connection is in `connections` from here on
        // (those the kernel had queued are accepted, and drain like the others).
        listener?.closeAndWait()
        for reference in connections { reference.connection.beginDrain() }
        let deadline = monotonicNanoseconds() &+ configuration.drainTimeoutNanoseconds
        while openConnections.load(ordering: .relaxed) > 0 && monotonicNanoseconds() < deadline {
            usleep(2_000)
        }
        let remaining = state.withLock { Array($0.connections.values) }
        for reference in remaining { reference.connection.forceClose() }
        // A connection counts as open until its socket is closed, after its graceful close (GOAWAY, FIN, the
        // client's input read to its end): the loops run until then, or until that close's own bound has passed,
        // so no socket is left behind to be reset when the process exits.
        let closeDeadline = monotonicNanoseconds() &+ Self.closeWaitNanoseconds
        while openConnections.load(ordering: .relaxed) > 0 && monotonicNanoseconds() < closeDeadline {
            usleep(2_000)
        }
        group?.shutdown()
        configuration.logger.log(.info, "server.stopped", ("forced", "\(remaining.count)"))
    }

    /// Starts the server, serves until SIGTERM or SIGINT, then drains and returns. Blocks the calling thread.
    public func run() throws {
        let signals = try SignalWaiter(signals: [SIGTERM, SIGINT])
        try start()
        let signal = signals.wait()
        configuration.logger.log(.info, "server.signal", ("signal", "\(signal)"))
        shutdown()
    }
}

/// A connection in the server's table, from accept until its `onClose` removes it. The reference is strong (a weak
/// one would put every retain of the connection on the runtime's slow path) and only used to call `beginDrain` and
/// `forceClose`, which hop to the connection's loop before touching its state.
struct ServerConnectionRef: Sendable {
    let connection: ServerConnection

    init(_ connection: ServerConnection) { self.connection = connection }
}
