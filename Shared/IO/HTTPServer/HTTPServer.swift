import HTTP1
import HTTP2
import HTTPMessages
import NetworkIO
import Synchronization
import TLSChannels

#if canImport(Glibc)
    import Glibc
#endif

/// Answers one HTTP request, whichever protocol carried it.
public protocol HTTPResponder: Sendable {
    /// The response to `request`; never throws: failures are responses too.
    func respond(to request: HTTPRequest) async -> HTTPResponse
    /// The response for a request the server could not read (malformed 400, too slow 408, too large 413 or 431,
    /// unsupported 501 or 505); the connection closes after it. Responders format it their way and count it.
    func refusal(status: Int, detail: String) -> HTTPResponse
}

extension HTTPResponder {
    /// A plain-text refusal.
    public func refusal(status: Int, detail: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: HTTPHeaders([("content-type", "text/plain; charset=utf-8")]),
            body: Array((detail + "\n").utf8))
    }
}

/// Why the server refused a request it could not read, by status.
enum Refusal {
    static func detail(for status: Int) -> String {
        switch status {
        case 408: "The request was not received in time."
        case 413: "The request body is too large."
        case 431: "The request head is too large."
        case 501: "The transfer coding is not supported."
        case 505: "The HTTP version is not supported."
        default: "The HTTP request is malformed."
        }
    }
}

/// Settings for an ``HTTPServer``.
public struct HTTPServerConfiguration: Sendable {
    /// Where to listen (port 0 picks a free port).
    public var address: SocketAddress
    /// Event-loop threads.
    public var threadCount: Int = EventLoopGroup.onlineCoreCount
    /// Head and body limits for HTTP/1.1 (the body limit applies to HTTP/2 too).
    public var limits = HTTP1Limits(maximumHeadBytes: 16 * 1024, maximumHeaderCount: 100, maximumBodyBytes: 64 * 1024)
    /// How long a connection may sit between requests before it is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// How long a client may take to send one whole request once it has started.
    public var requestTimeout: Duration = .seconds(10)
    /// Bytes a client may pipeline behind a request that is still being answered.
    public var maximumPipelinedBytes = 256 * 1024
    /// HTTP/2 limits.
    public var http2: HTTP2Configuration = {
        var configuration = HTTP2Configuration()
        configuration.maxConcurrentStreams = 128
        configuration.initialWindowSize = 256 * 1024
        configuration.connectionWindowSize = 1 << 20
        return configuration
    }()
    /// TLS (ALPN `h2` and `http/1.1`); nil for plaintext, where HTTP/2 is detected by its connection preface.
    public var tls: (@Sendable () throws -> ChannelSecurity)?
    /// How long requests in flight may run after shutdown starts.
    public var drainTimeout: Duration = .seconds(10)

    /// A configuration listening on `address`.
    public init(address: SocketAddress) { self.address = address }

    /// TLS from PEM files, offering ALPN `h2` then `http/1.1`.
    public static func tls(certificatePath: String, keyPath: String) throws -> @Sendable () throws -> ChannelSecurity {
        try ChannelTLS.serverSecurity(
            certificateChainPath: certificatePath, privateKeyPath: keyPath, applicationProtocols: ["h2", "http/1.1"])
    }
}

/// Something the server can ask to finish its work and close (an HTTP/1.1 or HTTP/2 connection).
protocol DrainableConnection: AnyObject, Sendable {
    /// Finishes what is in flight and closes; hops to the connection's loop itself.
    func beginDrain()
    /// Closes at once; hops to the connection's loop itself.
    func forceClose()
}

/// Tracks a server's open connections for draining; shared by every connection of the server.
final class ConnectionRegistry: Sendable {
    private struct Entry: Sendable {
        // Only used to call `beginDrain` and `forceClose`, which hop to the connection's loop. Strong (a weak
        // reference would put every retain of the connection on the runtime's slow path): a connection removes
        // its entry when it closes.
        let connection: any DrainableConnection
    }

    private let entries = Mutex<(next: Int, open: [Int: Entry], draining: Bool)>((0, [:], false))

    /// Adds a connection; returns its key, or nil when the server is draining (the caller then drains it).
    func add(_ connection: any DrainableConnection) -> Int? {
        entries.withLock { state -> Int? in
            guard !state.draining else { return nil }
            let key = state.next
            state.next += 1
            state.open[key] = Entry(connection: connection)
            return key
        }
    }

    func remove(_ key: Int) { _ = entries.withLock { $0.open.removeValue(forKey: key) } }

    var count: Int { entries.withLock { $0.open.count } }

    /// Marks the registry draining and returns every open connection.
    func startDraining() -> [any DrainableConnection] {
        entries.withLock { state in
            state.draining = true
            return state.open.values.map(\.connection)
        }
    }

    func all() -> [any DrainableConnection] { entries.withLock { $0.open.values.map(\.connection) } }
}

/// The gateway's HTTP server: HTTP/1.1 and HTTP/2 on one port (h2c with prior knowledge is detected by the
/// connection preface; over TLS, ALPN decides), every request handed to one ``HTTPResponder``.
public final class HTTPServer: Sendable {
    /// The configuration the server was made with.
    public let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let registry = ConnectionRegistry()
    private let running = Mutex<(group: EventLoopGroup?, listener: TCPListener?)>((nil, nil))

    /// Creates a server; nothing listens until ``start()``.
    public init(configuration: HTTPServerConfiguration, responder: any HTTPResponder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// The bound address once started.
    public var localAddress: SocketAddress? { running.withLock { $0.listener?.localAddress } }

    /// The number of open connections.
    public var connectionCount: Int { registry.count }

    /// Starts the loops and the listener; returns the bound address.
    @discardableResult
    public func start() throws -> SocketAddress {
        let group = try EventLoopGroup(threadCount: configuration.threadCount, name: "http")
        let configuration = self.configuration
        let responder = self.responder
        let registry = self.registry
        let listener: TCPListener
        do {
            listener = try TCPListener(group: group, address: configuration.address, security: configuration.tls) {
                channel in
                ProtocolDetector(configuration: configuration, responder: responder, registry: registry)
            }
        } catch {
            group.shutdown()
            throw error
        }
        running.withLock { $0 = (group, listener) }
        return listener.localAddress
    }

    /// Stops accepting, lets requests in flight finish (up to the drain timeout), closes every connection and
    /// stops the loops. Blocks the calling thread: call it from `main` or a thread you own, never from a loop.
    public func shutdown() {
        let (group, listener) = running.withLock { $0 }
        listener?.close()
        for connection in registry.startDraining() { connection.beginDrain() }
        let deadline = monotonicNanoseconds() &+ configuration.drainTimeout.wholeNanoseconds
        while registry.count > 0 && monotonicNanoseconds() < deadline { usleep(10_000) }
        for connection in registry.all() { connection.forceClose() }
        usleep(20_000)
        group?.shutdown()
    }
}

/// The first handler of every connection: waits for the first bytes, then hands the channel to HTTP/2 (the
/// client sent the HTTP/2 preface, or TLS negotiated `h2`) or to HTTP/1.1. Loop-confined like its channel.
final class ProtocolDetector: ChannelHandler {
    private static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    private let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let registry: ConnectionRegistry
    private var buffered: [UInt8] = []
    private var timer: TimerID?

    init(configuration: HTTPServerConfiguration, responder: any HTTPResponder, registry: ConnectionRegistry) {
        self.configuration = configuration
        self.responder = responder
        self.registry = registry
    }

    func channelActive(_ channel: Channel) {
        // Held strongly until the timer fires or is cancelled (at hand-over or close); closing twice is harmless.
        timer = channel.loop.scheduleTimer(afterNanoseconds: configuration.requestTimeout.wholeNanoseconds) {
            channel.close()
        }
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        buffered.append(contentsOf: bytes)
        if let security = channel.security {
            handOver(channel, http2: security.negotiatedProtocol == "h2")
            return
        }
        let count = min(buffered.count, Self.preface.count)
        if buffered[0..<count].elementsEqual(Self.preface[0..<count]) {
            if count == Self.preface.count { handOver(channel, http2: true) }
            return
        }
        handOver(channel, http2: false)
    }

    private func handOver(_ channel: Channel, http2: Bool) {
        if let timer { channel.loop.cancelTimer(timer) }
        timer = nil
        let next: ChannelHandler
        if http2 {
            next =
                HTTP2Connection(
                    channel: channel, configuration: configuration, responder: responder, registry: registry
                )
                .session
        } else {
            next = HTTP1Connection(
                channel: channel, configuration: configuration, responder: responder, registry: registry)
        }
        channel.handler = next
        next.channelActive(channel)
        let bytes = buffered
        buffered = []
        bytes.withUnsafeBytes { next.channelRead(channel, $0) }
    }

    func channelWillFlush(_ channel: Channel) {}

    func channelInactive(_ channel: Channel, error: NetworkError?) {
        if let timer { channel.loop.cancelTimer(timer) }
    }
}
