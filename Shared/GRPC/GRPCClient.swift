import Observability
import HTTP2
import NetworkIO
import Protobuf
import Synchronization

/// Settings for a ``GRPCClient``.
public struct GRPCClientConfiguration: Sendable {
    /// Event-loop threads for the client's connections.
    public var threadCount: Int = 1
    /// The largest response message accepted.
    public var maxReceiveMessageSize: Int = 4 * 1024 * 1024
    /// The first reconnect delay after a connection fails.
    public var initialBackoffNanoseconds: UInt64 = 100_000_000
    /// The longest reconnect delay.
    public var maxBackoffNanoseconds: UInt64 = 5_000_000_000
    /// When set, a call made while the connection backs off starts a new attempt at once if the last attempt began
    /// at least this long ago, instead of failing until the backoff ends. Calls still fail fast while the address
    /// refuses connections, and a service that has come back is used by the next call. nil waits out the backoff.
    public var reconnectOnDemandAfterNanoseconds: UInt64?
    /// How many attempts a call may make in all (over different addresses) when a retry is allowed.
    public var maxAttempts: Int = 3
    /// HTTP/2 limits for the client side.
    public var http2 = HTTP2Configuration()
    /// TLS for outgoing connections (ALPN h2, optional client certificate); nil for h2c.
    public var tls: (@Sendable (SocketAddress) throws -> ChannelSecurity)?
    /// The `:authority` sent; defaults to the address.
    public var authority: String?
    /// Where the client's events go.
    public var logger: Logger = .disabled

    /// The defaults.
    public init() {}
}

/// A gRPC client for one service with one or more backend addresses: one HTTP/2 connection per address,
/// multiplexed calls, reconnection with backoff, and round-robin over the healthy addresses.
///
/// A call made from a task that runs on an event loop (a request handler of a server in this process) goes over
/// connections owned by that same loop, opened on its first call there: the request is written and the response
/// read on the caller's own thread, with no hand-off to the client's loops and back. Other callers use the
/// client's own loops.
///
/// A call is retried on another address only when it is marked idempotent or when it provably never reached
/// a server (connection refused, REFUSED_STREAM, or above the last stream ID of a GOAWAY).
public final class GRPCClient: Sendable {
    private let group: EventLoopGroup
    private let addresses: [SocketAddress]
    private let connections: [ClientConnection]
    /// Connections owned by callers' loops, one per address, by loop.
    private let callerLoopConnections = Mutex<[ObjectIdentifier: [ClientConnection]]>([:])
    private let configuration: GRPCClientConfiguration
    private let nextIndex = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// Creates the client and starts connecting to every address.
    public init(addresses: [SocketAddress], configuration: GRPCClientConfiguration = GRPCClientConfiguration()) throws {
        guard !addresses.isEmpty else { throw RPCError(code: .invalidArgument, message: "no addresses given") }
        self.configuration = configuration
        self.addresses = addresses
        let group = try EventLoopGroup(threadCount: configuration.threadCount, name: "grpc-client")
        self.group = group
        connections = addresses.map { ClientConnection(address: $0, loop: group.next(), configuration: configuration) }
        for connection in connections { connection.start() }
    }

    /// Closes every connection (calls in flight fail with UNAVAILABLE) and stops the client's loops.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for connection in connections { connection.shutdown() }
        for connection in callerLoopConnections.withLock({ $0.values.flatMap { $0 } }) { connection.shutdown() }
        group.shutdown()
    }

    /// The connections for a call from the current thread: those of the caller's loop when it runs one.
    private func connectionsForCaller() -> [ClientConnection] {
        guard let loop = EventLoop.current, !group.loops.contains(where: { $0 === loop }) else { return connections }
        return callerLoopConnections.withLock { table in
            if let existing = table[ObjectIdentifier(loop)] { return existing }
            let created = addresses.map { ClientConnection(address: $0, loop: loop, configuration: configuration) }
            table[ObjectIdentifier(loop)] = created
            for connection in created { connection.start() }
            return created
        }
    }

    deinit {
        close()
    }

    /// Makes a unary call and returns its response, or throws ``RPCError`` with the call's status.
    /// - Parameters:
    ///   - deadline: the time budget for the whole call, retries included; sent as `grpc-timeout`.
    ///   - idempotent: whether the call may be retried on another address after it may have reached a server.
    public func unary<Request: ProtobufMessage, Response: ProtobufMessage>(
        path: String, request: Request, responseType: Response.Type = Response.self,
        deadline: Duration = .seconds(30), idempotent: Bool = false, metadata: Metadata = Metadata()
    ) async throws -> Response {
        guard !closed.load(ordering: .acquiring) else {
            throw RPCError(code: .unavailable, message: "the client was closed")
        }
        let deadlineNanoseconds = monotonicNanoseconds() &+ deadline.wholeNanoseconds
        let framed = GRPCMessageFramer.frame(request.serializedBytes())
        let connections = connectionsForCaller()
        var excluded: Set<Int> = []
        var attempt = 0
        while true {
            attempt += 1
            let index = pick(from: connections, excluding: excluded)
            do {
                let bytes = try await connections[index].unary(
                    path: path, framedRequest: framed, metadata: metadata, deadline: deadlineNanoseconds)
                do { return try Response(serializedBytes: bytes) } catch {
                    throw RPCError(code: .internal, message: "could not decode the response message")
                }
            } catch let failure as AttemptFailure {
                let retryable = failure.neverReachedServer || (idempotent && failure.error.code == .unavailable)
                if retryable && attempt < configuration.maxAttempts && monotonicNanoseconds() < deadlineNanoseconds {
                    excluded.insert(index)
                    if excluded.count == connections.count { excluded.removeAll() }
                    continue
                }
                throw failure.error
            }
        }
    }

    /// The next address in turn, preferring connected ones, then ones not backing off.
    private func pick(from connections: [ClientConnection], excluding excluded: Set<Int>) -> Int {
        let start = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        let count = connections.count
        for wanted in [ClientConnection.Health.ready, .connecting] {
            for offset in 0..<count {
                let index = (start + offset) % count
                if !excluded.contains(index) && connections[index].health == wanted { return index }
            }
        }
        for offset in 0..<count where !excluded.contains((start + offset) % count) {
            return (start + offset) % count
        }
        return start % count
    }
}

/// The failure of one attempt, with whether it is known not to have reached a server.
struct AttemptFailure: Error {
    let error: RPCError
    let neverReachedServer: Bool
}
