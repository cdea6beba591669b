import HTTP2
import NetworkIO
import Observability
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
    /// How long a connection attempt may take before it counts as failed: an address whose host has gone may
    /// never answer at all.
    public var connectTimeoutNanoseconds: UInt64 = 1_000_000_000
    /// How long, in all, a call that has reached no server yet may wait for the addresses to change once every
    /// address it knows has refused it (within its deadline): while the last known replica drains, its successor
    /// is found by the lookup the drain prompts. Short, so that a service that is down still fails fast.
    public var unsentRetryWindowNanoseconds: UInt64 = 400_000_000
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
/// The addresses come from a ``GRPCAddressSource``: a fixed list, or a lookup (a DNS name of every replica) that
/// the client runs again periodically and soon after a connection fails. A new address gets connections at once;
/// a removed one drains: its calls in flight finish, and calls not yet sent go to the addresses that remain.
///
/// A call made from a task that runs on an event loop (a request handler of a server in this process) goes over
/// connections owned by that same loop, opened on its first call there: the request is written and the response
/// read on the caller's own thread, with no hand-off to the client's loops and back. Other callers use the
/// client's own loops.
///
/// A call is retried on another address only when it is marked idempotent or when it provably never reached
/// a server (connection refused, REFUSED_STREAM, above the last stream ID of a GOAWAY, or sent to an address that
/// was just removed).
public final class GRPCClient: Sendable {
    /// The current addresses and their connections: the client's own, and those of each caller loop, in the
    /// order of `addresses`.
    private struct Endpoints {
        var addresses: [SocketAddress] = []
        var own: [ClientConnection] = []
        var callerLoops: [ObjectIdentifier: (loop: EventLoop, connections: [ClientConnection])] = [:]
    }

    private let group: EventLoopGroup
    private let endpoints = Mutex(Endpoints())
    private let configuration: GRPCClientConfiguration
    private let nextIndex = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    private let refresher: AddressRefresher?

    /// Creates the client for a fixed list of addresses and starts connecting to every one.
    public convenience init(
        addresses: [SocketAddress], configuration: GRPCClientConfiguration = GRPCClientConfiguration()
    ) throws {
        try self.init(source: .fixed(addresses), configuration: configuration)
    }

    /// Creates the client for the addresses of `source` and starts connecting. A lookup source is run once
    /// before this returns; when that finds nothing, calls fail with UNAVAILABLE until a later lookup does.
    public init(source: GRPCAddressSource, configuration: GRPCClientConfiguration = GRPCClientConfiguration()) throws {
        if case .fixed(let addresses) = source.kind, addresses.isEmpty {
            throw RPCError(code: .invalidArgument, message: "no addresses given")
        }
        self.configuration = configuration
        group = try EventLoopGroup(threadCount: configuration.threadCount, name: "grpc-client")
        switch source.kind {
        case .fixed(let addresses):
            refresher = nil
            update(addresses: addresses)
        case .lookup(let name, let interval, let resolve):
            let refresher = AddressRefresher(
                name: name, intervalNanoseconds: interval, resolve: resolve, logger: configuration.logger)
            self.refresher = refresher
            refresher.start { [weak self] addresses in self?.update(addresses: addresses) }
            if let first = refresher.lookUp() { update(addresses: first) }
        }
    }

    /// Closes every connection (calls in flight fail with UNAVAILABLE) and stops the client's loops.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        refresher?.stop()
        let all = endpoints.withLock { table in
            table.own + table.callerLoops.values.flatMap { $0.connections }
        }
        for connection in all { connection.shutdown() }
        group.shutdown()
    }

    deinit {
        close()
    }

    /// The addresses calls are spread over now.
    public var addresses: [SocketAddress] { endpoints.withLock { $0.addresses } }

    /// Replaces the address set: connections open to new addresses, removed ones drain. An empty set is ignored
    /// (a lookup that finds nothing keeps the replicas it knew), and so is the same set in another order.
    public func update(addresses newAddresses: [SocketAddress]) {
        var unique: [SocketAddress] = []
        var seen: Set<SocketAddress> = []
        for address in newAddresses where seen.insert(address).inserted { unique.append(address) }
        guard !unique.isEmpty else { return }
        let (opened, removed) = endpoints.withLock { table -> ([ClientConnection], [ClientConnection]) in
            guard !closed.load(ordering: .acquiring), Set(table.addresses) != seen else { return ([], []) }
            var opened: [ClientConnection] = []
            var removed: [ClientConnection] = []
            table.own = rebuild(table.own, for: unique, opened: &opened, removed: &removed) { group.next() }
            for (key, entry) in table.callerLoops {
                let connections = rebuild(entry.connections, for: unique, opened: &opened, removed: &removed) {
                    entry.loop
                }
                table.callerLoops[key] = (entry.loop, connections)
            }
            table.addresses = unique
            return (opened, removed)
        }
        guard !opened.isEmpty || !removed.isEmpty else { return }
        for connection in opened { connection.start() }
        for connection in removed { connection.drain() }
        let added = Set(opened.map(\.address)).map(\.description).sorted()
        let gone = Set(removed.map(\.address)).map(\.description).sorted()
        configuration.logger.log(
            .info, "client.addresses_changed", ("addresses", unique.map(\.description).joined(separator: ",")),
            ("added", added.joined(separator: ",")), ("removed", gone.joined(separator: ",")))
    }

    /// The connections for `addresses` on one loop: kept where the address stays, new where it is new.
    private func rebuild(
        _ existing: [ClientConnection], for addresses: [SocketAddress], opened: inout [ClientConnection],
        removed: inout [ClientConnection], loop: () -> EventLoop
    ) -> [ClientConnection] {
        var byAddress: [SocketAddress: ClientConnection] = [:]
        for connection in existing { byAddress[connection.address] = connection }
        let result = addresses.map { address in
            if let connection = byAddress.removeValue(forKey: address) { return connection }
            let connection = makeConnection(address, loop())
            opened.append(connection)
            return connection
        }
        removed.append(contentsOf: byAddress.values)
        return result
    }

    private func makeConnection(_ address: SocketAddress, _ loop: EventLoop) -> ClientConnection {
        ClientConnection(
            address: address, loop: loop, configuration: configuration,
            onConnectionTrouble: { [weak refresher = self.refresher] in refresher?.refreshSoon() })
    }

    /// The connections for a call from the current thread: those of the caller's loop when it runs one.
    private func connectionsForCaller() -> [ClientConnection] {
        let callerLoop = EventLoop.current.flatMap { loop in group.loops.contains { $0 === loop } ? nil : loop }
        guard let loop = callerLoop else { return endpoints.withLock { $0.own } }
        var created: [ClientConnection] = []
        let connections = endpoints.withLock { table in
            if let existing = table.callerLoops[ObjectIdentifier(loop)] { return existing.connections }
            created = table.addresses.map { makeConnection($0, loop) }
            table.callerLoops[ObjectIdentifier(loop)] = (loop, created)
            return created
        }
        for connection in created { connection.start() }
        return connections
    }

    /// Calls `method` and returns its response, or throws ``RPCError`` with the call's status.
    /// - Parameters:
    ///   - deadline: the time budget for the whole call, retries included; sent as `grpc-timeout`.
    ///   - idempotent: whether the call may be retried on another address after it may have reached a server.
    public func unary<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, request: Request, deadline: Duration = .seconds(30),
        idempotent: Bool = false, metadata: Metadata = Metadata()
    ) async throws -> Response {
        guard !closed.load(ordering: .acquiring) else {
            throw RPCError(code: .unavailable, message: "the client was closed")
        }
        let deadlineNanoseconds = monotonicNanoseconds() &+ deadline.wholeNanoseconds
        let framed = GRPCMessageFramer.frame(request.serializedBytes())
        var excluded: Set<ObjectIdentifier> = []
        var attempt = 0
        var waited: UInt64 = 0
        var pause: UInt64 = 20_000_000
        while true {
            attempt += 1
            // Taken afresh for each attempt: a retry after an address was removed goes to the current set.
            let connections = connectionsForCaller()
            guard !connections.isEmpty else {
                throw RPCError(code: .unavailable, message: "no address of the service is known yet")
            }
            let connection = pick(from: connections, excluding: &excluded)
            do {
                let bytes = try await connection.unary(
                    path: method.path, framedRequest: framed, metadata: metadata, deadline: deadlineNanoseconds)
                do { return try Response(serializedBytes: bytes) } catch {
                    throw RPCError(code: .internal, message: "could not decode the response message")
                }
            } catch let failure as AttemptFailure {
                let now = monotonicNanoseconds()
                guard now < deadlineNanoseconds else { throw failure.error }
                excluded.insert(ObjectIdentifier(connection))
                let untried = connections.contains { !excluded.contains(ObjectIdentifier($0)) }
                if failure.neverReachedServer && (untried || attempt < configuration.maxAttempts) {
                    continue
                }
                if failure.neverReachedServer && waited < configuration.unsentRetryWindowNanoseconds {
                    // Every known address refused a call that ran nowhere: wait a moment for the set to change
                    // (a refused connection prompts a lookup) and try the addresses known then.
                    let wait = min(
                        pause, configuration.unsentRetryWindowNanoseconds - waited, deadlineNanoseconds - now)
                    refresher?.refreshSoon()
                    do { try await Task.sleep(nanoseconds: wait) } catch {
                        throw RPCError(code: .cancelled, message: "the call was cancelled")
                    }
                    waited += wait
                    pause = min(pause * 2, 100_000_000)
                    excluded.removeAll()
                    continue
                }
                if idempotent && failure.error.code == .unavailable && attempt < configuration.maxAttempts {
                    continue
                }
                throw failure.error
            }
        }
    }

    /// The next connection in turn that this call has not tried, preferring connected ones, then ones not backing
    /// off; once every connection has been tried, any of them again.
    private func pick(from connections: [ClientConnection], excluding excluded: inout Set<ObjectIdentifier>)
        -> ClientConnection
    {
        let start = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue & Int.max
        let count = connections.count
        if connections.allSatisfy({ excluded.contains(ObjectIdentifier($0)) }) { excluded.removeAll() }
        for wanted in [ClientConnection.Health.ready, .connecting] {
            for offset in 0..<count {
                let connection = connections[(start + offset) % count]
                if connection.health == wanted && !excluded.contains(ObjectIdentifier(connection)) { return connection }
            }
        }
        for offset in 0..<count {
            let connection = connections[(start + offset) % count]
            if !excluded.contains(ObjectIdentifier(connection)) { return connection }
        }
        return connections[start % count]
    }
}

/// The failure of one attempt, with whether it is known not to have reached a server.
struct AttemptFailure: Error {
    let error: RPCError
    let neverReachedServer: Bool
}
