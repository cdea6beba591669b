import Encoding
import HTTP2
import NetworkIO
import Observability
import Synchronization

/// Carries a task's cancellation to its call on the loop, whichever arrives first.
private final class CallCancellation: Sendable {
    let callID = Atomic<UInt64>(0)
    let requested = Atomic<Bool>(false)
}

/// One call in flight on a client connection.
private final class ClientCall {
    let id: UInt64
    let path: String
    let framedRequest: [UInt8]
    let metadata: Metadata
    let deadline: UInt64
    var completion: ((Result<[UInt8], AttemptFailure>) -> Void)?
    var streamID: Int32?
    var timer: TimerID?
    var httpStatus = 0
    var deframer: GRPCMessageDeframer
    var response: [UInt8]?
    var headersReceived = false
    /// The HEADERS that open the call's stream went out: from here on the server may have run it.
    var requestSent = false

    init(
        id: UInt64, path: String, framedRequest: [UInt8], metadata: Metadata, deadline: UInt64, maxMessageSize: Int,
        completion: @escaping (Result<[UInt8], AttemptFailure>) -> Void
    ) {
        self.id = id
        self.path = path
        self.framedRequest = framedRequest
        self.metadata = metadata
        self.deadline = deadline
        self.deframer = GRPCMessageDeframer(maxMessageSize: maxMessageSize)
        self.completion = completion
    }
}

/// The client's HTTP/2 connection to one address, with reconnection and backoff. Its state is confined to its
/// loop; other threads reach it through `loop.execute` and read only the atomic `health`, which is why the
/// `@unchecked Sendable` holds.
final class ClientConnection: HTTP2SessionDelegate, @unchecked Sendable {
    /// How usable the connection looks from outside its loop.
    enum Health: UInt8 {
        case connecting = 0
        case ready = 1
        case failing = 2
    }

    /// `connecting` lasts until the server's SETTINGS frame arrives: a TCP connection the kernel completed may
    /// still be reset from the listen queue of a server that is closing its listener, and one over TLS may still
    /// be refused, so no call is sent before the server has shown it took the connection up.
    private enum State {
        case idle
        case connecting(HTTP2Session)
        case ready(HTTP2Session)
        /// The server sent GOAWAY: the calls on its streams run to their end, new calls go elsewhere.
        case goingAway(HTTP2Session)
        case backoff(until: UInt64)
        case shutDown
    }

    let address: SocketAddress
    let loop: EventLoop
    private let configuration: GRPCClientConfiguration
    /// Told (on the loop) when a connection attempt fails or an established connection is lost, so that the
    /// client can look its addresses up again.
    private let onConnectionTrouble: (@Sendable () -> Void)?
    /// The address left the client's set: calls that have a stream finish, new ones go elsewhere, then it closes.
    private var draining = false
    /// The channel of the attempt in progress, closed if it has not connected within the connect timeout.
    private var connectingChannel: Channel?
    private let healthValue = Atomic<UInt8>(Health.connecting.rawValue)
    private var state: State = .idle
    private var backoff: UInt64
    /// When the latest connection attempt began (monotonic nanoseconds).
    private var lastAttemptStarted: UInt64 = 0
    /// An on-demand attempt is scheduled for calls that arrived just after an attempt failed.
    private var probeScheduled = false
    private var waiting: [ClientCall] = []
    private var calls: [UInt64: ClientCall] = [:]
    private var callsByStream = StreamTable<ClientCall>()
    private var nextCallID: UInt64 = 1
    private var goAwayLastStreamID: Int32 = .max
    private let baseHeaders: [HTTP2Header]

    init(
        address: SocketAddress, loop: EventLoop, configuration: GRPCClientConfiguration,
        onConnectionTrouble: (@Sendable () -> Void)? = nil
    ) {
        self.address = address
        self.loop = loop
        self.configuration = configuration
        self.onConnectionTrouble = onConnectionTrouble
        self.backoff = configuration.initialBackoffNanoseconds
        baseHeaders = [
            HTTP2Header(":method", "POST"),
            HTTP2Header(":scheme", configuration.tls == nil ? "http" : "https"),
            HTTP2Header(":authority", configuration.authority ?? address.description),
        ]
    }

    var health: Health { Health(rawValue: healthValue.load(ordering: .relaxed)) ?? .failing }

    func start() {
        loop.execute { [self] in connect() }
    }

    func shutdown() {
        loop.execute { [self] in
            let previous = state
            state = .shutDown
            healthValue.store(Health.failing.rawValue, ordering: .relaxed)
            switch previous {
            case .connecting(let session), .ready(let session), .goingAway(let session):
                // The client's loops stop right after this: its GOAWAY and FIN go out, but nothing waits for the
                // server's end (a close left waiting would keep its socket until the process exits).
                session.channel?.closeTimeoutNanoseconds = 0
                session.close()
            default: break
            }
            failAll(RPCError(code: .unavailable, message: "the client was closed"), neverReached: true)
        }
    }

    /// Takes the connection out of service without failing the calls it is serving: calls that have not been sent
    /// fail as never sent (the client retries them on another address), calls on a stream run to their end, and
    /// then the connection closes for good.
    func drain() {
        loop.execute { [self] in
            guard !draining else { return }
            draining = true
            healthValue.store(Health.failing.rawValue, ordering: .relaxed)
            for call in waiting {
                finish(call, .failure(AttemptFailure(error: Self.removedError, neverReachedServer: true)))
            }
            closeIfDrained()
        }
    }

    private static let removedError = RPCError(code: .unavailable, message: "the address left the service's set")
    private static let goingAwayError = RPCError(code: .unavailable, message: "the server is going away")

    /// Once a draining connection has no call left, closes it and stops reconnecting.
    private func closeIfDrained() {
        guard draining, calls.isEmpty else { return }
        let previous = state
        state = .shutDown
        switch previous {
        case .connecting(let session), .ready(let session), .goingAway(let session): session.close()
        default: break
        }
        connectingChannel?.close()
        connectingChannel = nil
    }

    // MARK: - Calls

    func unary(path: String, framedRequest: [UInt8], metadata: Metadata, deadline: UInt64) async throws -> [UInt8] {
        let cancellation = CallCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], Error>) in
                // From a task running on this connection's own loop, the call starts at once, on this thread.
                if loop.inEventLoop {
                    start(path, framedRequest, metadata, deadline, cancellation, continuation)
                } else {
                    loop.execute { [self] in start(path, framedRequest, metadata, deadline, cancellation, continuation)
                    }
                }
            }
        } onCancel: {
            cancellation.requested.store(true, ordering: .relaxed)
            loop.execute { [self] in
                let id = cancellation.callID.load(ordering: .relaxed)
                if id != 0 { cancel(id) }
            }
        }
    }

    private func start(
        _ path: String, _ framedRequest: [UInt8], _ metadata: Metadata, _ deadline: UInt64,
        _ cancellation: CallCancellation, _ continuation: CheckedContinuation<[UInt8], Error>
    ) {
        let id = nextCallID
        nextCallID += 1
        cancellation.callID.store(id, ordering: .relaxed)
        let call = ClientCall(
            id: id, path: path, framedRequest: framedRequest, metadata: metadata, deadline: deadline,
            maxMessageSize: configuration.maxReceiveMessageSize
        ) { result in
            continuation.resume(with: result.mapError { $0 as Error })
        }
        begin(call)
        // The task may have been cancelled before the call existed on the loop.
        if cancellation.requested.load(ordering: .relaxed) { cancel(id) }
    }

    private func begin(_ call: ClientCall) {
        guard !draining else {
            finish(call, .failure(AttemptFailure(error: Self.removedError, neverReachedServer: true)))
            return
        }
        let now = monotonicNanoseconds()
        guard call.deadline > now else {
            finish(call, .failure(AttemptFailure(error: Self.deadlineError, neverReachedServer: false)))
            return
        }
        calls[call.id] = call
        call.timer = loop.scheduleTimer(afterNanoseconds: call.deadline - now) { [self] in deadlineExpired(call.id) }
        switch state {
        case .ready(let session):
            open(call, on: session)
        case .idle:
            waiting.append(call)
            connect()
        case .connecting:
            waiting.append(call)
        case .goingAway:
            // Waiting here would hold the call until this connection's last stream ends: another address takes it.
            finish(call, .failure(AttemptFailure(error: Self.goingAwayError, neverReachedServer: true)))
        case .backoff(let until):
            let now = monotonicNanoseconds()
            // With on-demand reconnection, a call does not wait out the backoff once the last attempt is a little
            // while ago: a service that has come back is used at once rather than after the rest of the delay.
            let onDemand = configuration.reconnectOnDemandAfterNanoseconds.map { now &- lastAttemptStarted >= $0 }
            if now >= until || onDemand == true {
                waiting.append(call)
                connect()
            } else if let probeAge = configuration.reconnectOnDemandAfterNanoseconds {
                // The last attempt failed moments ago: the call waits for one more, made as soon as that one is
                // old enough, so a service that came back in between is not refused by the call that finds it.
                waiting.append(call)
                if !probeScheduled {
                    probeScheduled = true
                    loop.scheduleTimer(afterNanoseconds: lastAttemptStarted &+ probeAge &- now) { [self] in
                        probeScheduled = false
                        if case .backoff = state { connect() }
                    }
                }
            } else {
                finish(
                    call,
                    .failure(
                        AttemptFailure(
                            error: RPCError(code: .unavailable, message: "\(address) is unreachable"),
                            neverReachedServer: true)))
            }
        case .shutDown:
            finish(
                call,
                .failure(
                    AttemptFailure(
                        error: RPCError(code: .unavailable, message: "the client was closed"), neverReachedServer: true)
                ))
        }
    }

    private func open(_ call: ClientCall, on session: HTTP2Session) {
        var headers = baseHeaders
        headers.append(HTTP2Header(":path", call.path))
        headers.append(HTTP2Header("content-type", "application/grpc"))
        headers.append(HTTP2Header("te", "trailers"))
        let remaining = call.deadline > monotonicNanoseconds() ? call.deadline - monotonicNanoseconds() : 1
        headers.append(HTTP2Header("grpc-timeout", GRPCTimeout.encode(nanoseconds: remaining)))
        for (name, value) in call.metadata.headerFields() { headers.append(HTTP2Header(name, value)) }
        guard let streamID = session.submitRequest(headers: headers) else {
            waiting.append(call)
            return
        }
        call.streamID = streamID
        callsByStream[streamID] = call
        call.framedRequest.withUnsafeBytes { session.sendData(streamID: streamID, bytes: $0) }
        session.finishStream(streamID: streamID, trailers: nil as HTTP2HeaderList?)
    }

    private func cancel(_ id: UInt64) {
        guard let call = calls[id] else { return }
        if let streamID = call.streamID, let session = currentSession {
            session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
        }
        finish(
            call,
            .failure(
                AttemptFailure(
                    error: RPCError(code: .cancelled, message: "the call was cancelled"), neverReachedServer: false)))
    }

    private func deadlineExpired(_ id: UInt64) {
        guard let call = calls[id] else { return }
        call.timer = nil
        if let streamID = call.streamID, let session = currentSession {
            session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
        }
        finish(call, .failure(AttemptFailure(error: Self.deadlineError, neverReachedServer: false)))
    }

    private static let deadlineError = RPCError(code: .deadlineExceeded, message: "Deadline Exceeded")

    private func finish(_ call: ClientCall, _ result: Result<[UInt8], AttemptFailure>) {
        calls[call.id] = nil
        if let streamID = call.streamID { callsByStream[streamID] = nil }
        waiting.removeAll { $0 === call }
        if let timer = call.timer { loop.cancelTimer(timer) }
        let completion = call.completion
        call.completion = nil
        completion?(result)
        // Closing from inside a session callback would pull the session out from under nghttp2: do it next turn.
        if draining && calls.isEmpty { loop.execute { [self] in closeIfDrained() } }
    }

    private func failAll(_ error: RPCError, neverReached: Bool) {
        for call in Array(calls.values) {
            finish(call, .failure(AttemptFailure(error: error, neverReachedServer: neverReached || !mayHaveRun(call))))
        }
    }

    /// Whether the server may have run `call`: its request went out on a stream that no GOAWAY excluded. A call
    /// that never got a stream, whose HEADERS were never sent, or whose stream was above a GOAWAY's last stream ID
    /// never ran anywhere, and may be sent again, idempotent or not.
    private func mayHaveRun(_ call: ClientCall) -> Bool {
        guard let streamID = call.streamID else { return false }
        return call.requestSent && streamID <= goAwayLastStreamID
    }

    private var currentSession: HTTP2Session? {
        switch state {
        case .connecting(let session), .ready(let session), .goingAway(let session): session
        default: nil
        }
    }

    // MARK: - Connection lifecycle

    private func connect() {
        switch state {
        case .idle, .backoff: break
        default: return
        }
        lastAttemptStarted = monotonicNanoseconds()
        let session = HTTP2Session(role: .client, configuration: configuration.http2)
        session.delegate = self
        do {
            let security = try configuration.tls?(address)
            let channel = try Channel.connect(to: address, on: loop, security: security, handler: session)
            state = .connecting(session)
            connectingChannel = channel
            healthValue.store(Health.connecting.rawValue, ordering: .relaxed)
            // An address whose host has gone (a deleted pod) may swallow the SYN: give up on it after the timeout.
            loop.scheduleTimer(afterNanoseconds: configuration.connectTimeoutNanoseconds) { [self] in
                guard case .connecting(let current) = state, current === session else { return }
                connectingChannel = nil
                channel.close(error: NetworkError(.system, "connect timed out"))
            }
        } catch {
            session.delegate = nil
            connectionFailed(RPCError(code: .unavailable, message: "cannot connect to \(address)"))
        }
    }

    private func connectionFailed(_ error: RPCError) {
        if case .shutDown = state { return }
        connectingChannel = nil
        onConnectionTrouble?()
        if draining {
            state = .shutDown
            let pending = waiting
            waiting.removeAll()
            for call in pending { finish(call, .failure(AttemptFailure(error: error, neverReachedServer: true))) }
            return
        }
        let delay = backoff
        backoff = min(configuration.maxBackoffNanoseconds, backoff * 8 / 5)
        state = .backoff(until: monotonicNanoseconds() &+ delay)
        healthValue.store(Health.failing.rawValue, ordering: .relaxed)
        configuration.logger.log(.warning, "client.connect_failed", ("address", address.description))
        let pending = waiting
        waiting.removeAll()
        for call in pending { finish(call, .failure(AttemptFailure(error: error, neverReachedServer: true))) }
        loop.scheduleTimer(afterNanoseconds: delay) { [self] in
            if case .backoff = state { connect() }
        }
    }

    func http2SessionDidBecomeActive(_ session: HTTP2Session) {}

    func http2SessionDidReceivePeerSettings(_ session: HTTP2Session) {
        guard case .connecting(let current) = state, current === session else { return }
        connectingChannel = nil
        state = .ready(session)
        backoff = configuration.initialBackoffNanoseconds
        goAwayLastStreamID = .max
        healthValue.store(Health.ready.rawValue, ordering: .relaxed)
        let pending = waiting
        waiting.removeAll()
        for call in pending { open(call, on: session) }
    }

    func http2SessionDidClose(_ session: HTTP2Session, error: NetworkError?) {
        let wasConnecting: Bool
        switch state {
        case .connecting: wasConnecting = true
        case .ready, .goingAway: wasConnecting = false
        default: return
        }
        if let error, error.code == .tlsFailure {
            configuration.logger.log(
                .warning, "client.tls_failed", ("address", address.description), ("reason", error.reason))
        }
        if wasConnecting || error?.code == .connectionRefused {
            failAll(RPCError(code: .unavailable, message: "cannot connect to \(address)"), neverReached: true)
            connectionFailed(RPCError(code: .unavailable, message: "cannot connect to \(address)"))
            return
        }
        failAll(RPCError(code: .unavailable, message: "the connection to \(address) was lost"), neverReached: false)
        onConnectionTrouble?()
        if draining {
            state = .shutDown
            return
        }
        // An orderly close (GOAWAY) reconnects at once; anything else backs off first.
        state = .idle
        healthValue.store(Health.connecting.rawValue, ordering: .relaxed)
        if error == nil {
            connect()
        } else {
            connectionFailed(RPCError(code: .unavailable, message: "connection lost"))
        }
    }

    func http2Session(_ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32) {
        goAwayLastStreamID = min(goAwayLastStreamID, lastStreamID)
        // A server that says goodbye is usually draining before it leaves: look for its successors now.
        onConnectionTrouble?()
        switch state {
        case .ready(let current) where current === session, .connecting(let current) where current === session:
            state = .goingAway(session)
            connectingChannel = nil
            healthValue.store(Health.failing.rawValue, ordering: .relaxed)
            // Calls not on a stream yet go to another address now instead of waiting for this connection's end.
            let pending = waiting
            waiting.removeAll()
            for call in pending {
                finish(call, .failure(AttemptFailure(error: Self.goingAwayError, neverReachedServer: true)))
            }
        default:
            break
        }
    }

    func http2Session(_ session: HTTP2Session, didSendRequestHeaders streamID: Int32) {
        callsByStream[streamID]?.requestSent = true
    }

    func http2Session(
        _ session: HTTP2Session, didReceiveHeaders block: HTTP2HeaderBlock, streamID: Int32, endStream: Bool
    ) {
        guard let call = callsByStream[streamID] else { return }
        // Read the few fields that decide the outcome as bytes; Strings are made only for an error's details.
        var statusIndex: Int?
        var messageIndex: Int?
        for index in 0..<block.count {
            if !call.headersReceived && block.nameEquals(at: index, ":status") {
                call.httpStatus = block.withValueBytes(at: index, Self.decimal) ?? 0
            } else if block.nameEquals(at: index, "grpc-status") {
                statusIndex = index
            } else if block.nameEquals(at: index, "grpc-message") {
                messageIndex = index
            }
        }
        if !call.headersReceived {
            call.headersReceived = true
            if !endStream {
                if call.httpStatus != 200 {
                    completeWithoutStatus(call)
                }
                return
            }
        }
        guard let statusIndex else {
            completeWithoutStatus(call)
            return
        }
        let status = block.withValueBytes(at: statusIndex) { GRPCStatusCode(headerBytes: $0) }
        if status == .ok {
            if let response = call.response {
                finish(call, .success(response))
            } else {
                finish(
                    call,
                    .failure(
                        AttemptFailure(
                            error: RPCError(code: .internal, message: "the response had no message"),
                            neverReachedServer: false)))
            }
        } else {
            let message = messageIndex.map { GRPCPercentEncoding.decode(block.value(at: $0)) } ?? ""
            let metadata = Metadata(headers: block.headers.lazy.map { ($0.name, $0.value) })
            finish(
                call,
                .failure(
                    AttemptFailure(
                        error: RPCError(code: status, message: message, metadata: metadata), neverReachedServer: false))
            )
        }
    }

    /// A non-negative decimal of at most 9 digits (an HTTP or gRPC status), or nil.
    private static func decimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        bytes.count <= 9 ? DecimalText.parse(bytes).map(Int.init) : nil
    }

    private func completeWithoutStatus(_ call: ClientCall) {
        let code: GRPCStatusCode = call.httpStatus == 200 ? .internal : .fromHTTPStatus(call.httpStatus)
        finish(
            call,
            .failure(
                AttemptFailure(
                    error: RPCError(code: code, message: "HTTP status \(call.httpStatus) without a gRPC status"),
                    neverReachedServer: false)))
        if let streamID = call.streamID {
            currentSession?.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
        }
    }

    func http2Session(_ session: HTTP2Session, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        guard let call = callsByStream[streamID] else { return }
        call.deframer.append(bytes)
        do {
            while let message = try call.deframer.next() {
                if call.response == nil { call.response = message }
            }
        } catch {
            let rpcError: RPCError
            switch error {
            case .messageTooLarge(let declared, let limit):
                rpcError = RPCError(
                    code: .resourceExhausted, message: "Received message larger than max (\(declared) vs. \(limit))")
            default:
                rpcError = RPCError(code: .internal, message: "invalid response framing")
            }
            session.resetStream(streamID: streamID, errorCode: HTTP2ErrorCode.cancel)
            finish(call, .failure(AttemptFailure(error: rpcError, neverReachedServer: false)))
        }
    }

    func http2Session(_ session: HTTP2Session, didReceiveEndStream streamID: Int32) {
        guard let call = callsByStream[streamID] else { return }
        completeWithoutStatus(call)
    }

    func http2Session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: UInt32) {
        guard let call = callsByStream[streamID] else { return }
        let refused = errorCode == HTTP2ErrorCode.refusedStream || !mayHaveRun(call)
        finish(
            call,
            .failure(
                AttemptFailure(
                    error: RPCError(
                        code: .unavailable,
                        message: refused ? "the stream was refused" : "the stream was reset (\(errorCode))"),
                    neverReachedServer: refused)))
    }
}
