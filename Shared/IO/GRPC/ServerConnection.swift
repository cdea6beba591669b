import HTTP2
import NetworkIO
import Synchronization

/// Delivers a streaming handler's messages to its stream on the connection's loop.
final class ResponseSink: Sendable {
    private let loop: EventLoop
    // Only dereferenced on the connection's own loop. Strong: the call (and with it this sink) leaves the
    // connection's table when the stream closes, which ends the cycle.
    private let connection: ServerConnection
    private let streamID: Int32
    private let finished = Atomic<Bool>(false)

    init(loop: EventLoop, connection: ServerConnection, streamID: Int32) {
        self.loop = loop
        self.connection = connection
        self.streamID = streamID
    }

    /// Queues a serialized message; false once the call is over.
    func send(_ message: [UInt8]) -> Bool {
        guard !finished.load(ordering: .relaxed) else { return false }
        loop.executeOnLoop { [self] in connection.sendStreamMessage(streamID: streamID, message: message) }
        return true
    }

    func markFinished() { finished.store(true, ordering: .relaxed) }
}

/// One gRPC call on a server connection: its request so far, deadline and handler.
private final class ServerCall {
    let path: String
    let method: MethodKind
    var deframer: GRPCMessageDeframer
    var request: [UInt8]?
    var metadata: Metadata
    var deadline: UInt64?
    var timer: TimerID?
    var task: Task<Void, Never>?
    var sink: ResponseSink?
    var headersSent = false
    var finished = false

    init(path: String, method: MethodKind, maxMessageSize: Int, metadata: Metadata) {
        self.path = path
        self.method = method
        self.deframer = GRPCMessageDeframer(maxMessageSize: maxMessageSize)
        self.metadata = metadata
    }
}

/// The outcome of a unary handler, carried back to the loop.
private enum CallOutcome: Sendable {
    case response([UInt8])
    case failure(RPCError)
}

/// The gRPC side of one server HTTP/2 connection. Confined to its channel's loop; other threads reach it only
/// through `loop.execute`, which is why the `@unchecked Sendable` holds.
final class ServerConnection: HTTP2SessionDelegate, @unchecked Sendable {
    let session: HTTP2Session
    let loop: EventLoop
    private let methods: MethodTable
    private let configuration: GRPCServerConfiguration
    private let peer: String
    private let security: ChannelSecurity?
    /// The peer as authorization sees it, read from the TLS connection at the first call (the handshake is over
    /// by then: HTTP/2 frames only arrive after it).
    private lazy var callPeer = GRPCCallPeer(
        address: peer, isSecure: security != nil, certificate: security?.peerCertificate)
    private var calls = StreamTable<ServerCall>()
    private var draining = false
    private var closed = false
    var onClose: (@Sendable () -> Void)?

    private static let responseHeaders = [
        HTTP2Header(":status", "200"), HTTP2Header("content-type", "application/grpc"),
    ]
    private static let okTrailers = [HTTP2Header("grpc-status", "0")]
    private static let preparedResponseHeaders = HTTP2HeaderList(responseHeaders)
    private static let preparedOKTrailers = HTTP2HeaderList(okTrailers)

    init(channel: Channel, methods: MethodTable, configuration: GRPCServerConfiguration) {
        self.session = HTTP2Session(role: .server, configuration: configuration.http2)
        self.loop = channel.loop
        self.methods = methods
        self.configuration = configuration
        self.peer = channel.remoteAddress?.description ?? "unknown"
        self.security = channel.security
        session.delegate = self
    }

    // MARK: - Drain

    /// Sends a shutdown notice now and the final GOAWAY shortly after, so requests already on the wire are served.
    func beginDrain() {
        loop.execute { [self] in
            guard !draining, !closed else { return }
            draining = true
            session.submitShutdownNotice()
            loop.scheduleTimer(afterNanoseconds: 100_000_000) { [self] in
                session.submitGoAway()
            }
        }
    }

    /// Closes the connection at once, cancelling what still runs.
    func forceClose() {
        loop.execute { [self] in session.close() }
    }

    // MARK: - HTTP2SessionDelegate

    func http2SessionDidBecomeActive(_ session: HTTP2Session) {}

    func http2Session(
        _ session: HTTP2Session, didReceiveHeaders headers: HTTP2HeaderBlock, streamID: Int32, endStream: Bool
    ) {
        if let call = calls[streamID] {
            // Trailers from a client are not part of gRPC; treat them as the end of the request.
            if endStream { requestEnded(streamID, call) }
            return
        }
        // Compare names as bytes and make Strings only for the fields used.
        var isPost = false
        var isGRPC = false
        var pathIndex: Int?
        var timeout: String?
        var hasCustomMetadata = false
        for index in 0..<headers.count {
            if headers.nameEquals(at: index, ":method") {
                isPost = headers.valueEquals(at: index, "POST")
            } else if headers.nameEquals(at: index, ":path") {
                pathIndex = index
            } else if headers.nameEquals(at: index, "content-type") {
                isGRPC =
                    headers.valueEquals(at: index, "application/grpc")
                    || GRPCContentType.isGRPC(headers.value(at: index))
            } else if headers.nameEquals(at: index, "grpc-timeout") {
                timeout = headers.value(at: index)
            } else if !Self.isReservedName(headers, index) {
                hasCustomMetadata = true
            }
        }
        guard isPost else {
            session.submitResponse(streamID: streamID, headers: [HTTP2Header(":status", "405")], endStream: true)
            return
        }
        guard isGRPC else {
            session.submitResponse(
                streamID: streamID,
                headers: [HTTP2Header(":status", "415"), HTTP2Header("content-type", "text/plain")],
                endStream: true)
            return
        }
        guard let (path, kind) = pathIndex.flatMap({ headers.withValueBytes(at: $0, methods.find) }) else {
            let path = pathIndex.map { headers.value(at: $0) } ?? ""
            sendTrailersOnly(streamID, RPCError(code: .unimplemented, message: "Method not found: \(path)"))
            return
        }
        if let authorizer = configuration.authorizer, let refusal = authorizer.refusal(path: path, peer: callPeer) {
            sendTrailersOnly(streamID, refusal)
            return
        }
        let metadata =
            hasCustomMetadata
            ? Metadata(headers: (0..<headers.count).lazy.map { (headers.name(at: $0), headers.value(at: $0)) })
            : Metadata()
        let call = ServerCall(
            path: path, method: kind, maxMessageSize: configuration.maxReceiveMessageSize, metadata: metadata)
        if let timeout {
            guard let nanoseconds = GRPCTimeout.parse(timeout) else {
                sendTrailersOnly(streamID, RPCError(code: .internal, message: "malformed grpc-timeout"))
                return
            }
            call.deadline = monotonicNanoseconds() &+ nanoseconds
            call.timer = loop.scheduleTimer(afterNanoseconds: nanoseconds) { [self] in deadlineExpired(streamID) }
        }
        calls[streamID] = call
        if endStream { requestEnded(streamID, call) }
    }

    private static func isReservedName(_ headers: HTTP2HeaderBlock, _ index: Int) -> Bool {
        headers.nameHasPrefix(at: index, ":") || headers.nameHasPrefix(at: index, "grpc-")
            || headers.nameEquals(at: index, "te") || headers.nameEquals(at: index, "user-agent")
            || headers.nameEquals(at: index, "content-length") || headers.nameEquals(at: index, "accept-encoding")
            || headers.nameEquals(at: index, "host") || headers.nameEquals(at: index, "connection")
    }

    func http2Session(_ session: HTTP2Session, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        guard let call = calls[streamID], !call.finished, call.task == nil else { return }
        call.deframer.append(bytes)
        do {
            while let message = try call.deframer.next() {
                guard call.request == nil else {
                    finish(streamID, call, RPCError(code: .unimplemented, message: "expected one request message"))
                    return
                }
                call.request = message
            }
        } catch {
            switch error {
            case .messageTooLarge(let declared, let limit):
                finish(
                    streamID, call,
                    RPCError(
                        code: .resourceExhausted,
                        message: "Received message larger than max (\(declared) vs. \(limit))"))
            case .compressionNotSupported:
                finish(streamID, call, RPCError(code: .unimplemented, message: "compression is not supported"))
            case .invalidFlag:
                finish(streamID, call, RPCError(code: .internal, message: "invalid message flag"))
            }
        }
    }

    func http2Session(_ session: HTTP2Session, didReceiveEndStream streamID: Int32) {
        guard let call = calls[streamID] else { return }
        requestEnded(streamID, call)
    }

    func http2Session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: UInt32) {
        guard let call = calls.removeValue(forKey: streamID) else { return }
        // A reset (or a finished call): stop whatever still runs for it.
        call.finished = true
        call.sink?.markFinished()
        call.task?.cancel()
        if let timer = call.timer { loop.cancelTimer(timer) }
    }

    func http2Session(_ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32) {}

    func http2SessionDidClose(_ session: HTTP2Session, error: NetworkError?) {
        closed = true
        for call in calls.values {
            call.finished = true
            call.sink?.markFinished()
            call.task?.cancel()
            if let timer = call.timer { loop.cancelTimer(timer) }
        }
        calls.removeAll()
        onClose?()
        onClose = nil
    }

    // MARK: - Calls

    private func requestEnded(_ streamID: Int32, _ call: ServerCall) {
        guard !call.finished, call.task == nil else { return }
        guard let request = call.request, call.deframer.bufferedByteCount == 0 else {
            finish(
                streamID, call, RPCError(code: .internal, message: "the request did not contain one complete message"))
            return
        }
        let context = ServerContext(
            path: call.path, metadata: call.metadata, deadlineNanoseconds: call.deadline, peer: peer)
        call.request = nil
        switch call.method {
        case .inlineUnary(let handler):
            do {
                complete(streamID, .response(try handler(request, context)))
            } catch {
                complete(streamID, .failure(Self.rpcError(from: error)))
            }
        case .unary(let handler):
            let loop = self.loop
            // The handler starts right here, on this connection's loop, and runs until it first suspends; it
            // resumes on the same loop (see EventLoop's TaskExecutor conformance). A handler that finishes
            // without suspending answers within this same loop turn.
            let task = Task.immediate(executorPreference: loop) { [self] in
                let outcome: CallOutcome
                do {
                    outcome = .response(try await handler(request, context))
                } catch {
                    outcome = .failure(Self.rpcError(from: error))
                }
                // Inline on the loop (no closure to allocate); from elsewhere, handed over.
                if loop.inEventLoop {
                    complete(streamID, outcome)
                } else {
                    loop.execute { [self] in complete(streamID, outcome) }
                }
            }
            if !call.finished { call.task = task }
        case .serverStreaming(let handler):
            let sink = ResponseSink(loop: loop, connection: self, streamID: streamID)
            call.sink = sink
            let loop = self.loop
            call.task = Task(executorPreference: loop) { [self] in
                let outcome: CallOutcome
                do {
                    try await handler(request, context, sink)
                    outcome = .response([])
                } catch {
                    outcome = .failure(Self.rpcError(from: error))
                }
                sink.markFinished()
                // Queued behind any message a writer on another thread handed over before the handler returned.
                loop.execute { [self] in completeStream(streamID, outcome) }
            }
        }
    }

    private static func rpcError(from error: Error) -> RPCError {
        if let error = error as? RPCError { return error }
        if error is CancellationError { return RPCError(code: .cancelled, message: "the call was cancelled") }
        return RPCError(code: .unknown, message: "the handler failed")
    }

    private func complete(_ streamID: Int32, _ outcome: CallOutcome) {
        guard let call = calls[streamID], !call.finished else { return }
        switch outcome {
        case .response(let message):
            guard message.count <= configuration.maxSendMessageSize else {
                finish(streamID, call, RPCError(code: .resourceExhausted, message: "response message too large"))
                return
            }
            call.finished = true
            if let timer = call.timer { loop.cancelTimer(timer) }
            session.submitResponse(streamID: streamID, headers: Self.preparedResponseHeaders, endStream: false)
            var framed: [UInt8] = []
            framed.reserveCapacity(message.count + 5)
            GRPCMessageFramer.frame(message, into: &framed)
            session.sendData(streamID: streamID, bytes: framed)
            session.finishStream(streamID: streamID, trailers: Self.preparedOKTrailers)
        case .failure(let error):
            finish(streamID, call, error)
        }
    }

    func sendStreamMessage(streamID: Int32, message: [UInt8]) {
        guard let call = calls[streamID], !call.finished else { return }
        if !call.headersSent {
            call.headersSent = true
            session.submitResponse(streamID: streamID, headers: Self.preparedResponseHeaders, endStream: false)
        }
        GRPCMessageFramer.frame(message).withUnsafeBytes { session.sendData(streamID: streamID, bytes: $0) }
    }

    private func completeStream(_ streamID: Int32, _ outcome: CallOutcome) {
        guard let call = calls[streamID], !call.finished else { return }
        switch outcome {
        case .response:
            finish(streamID, call, nil)
        case .failure(let error):
            finish(streamID, call, error)
        }
    }

    /// Ends a call with a status: trailers after the response headers, or a trailers-only response.
    private func finish(_ streamID: Int32, _ call: ServerCall, _ error: RPCError?) {
        call.finished = true
        call.sink?.markFinished()
        call.task?.cancel()
        if let timer = call.timer { loop.cancelTimer(timer) }
        let status = Self.statusFields(error)
        if call.headersSent {
            session.finishStream(streamID: streamID, trailers: status)
        } else {
            session.submitResponse(streamID: streamID, headers: Self.responseHeaders + status, endStream: true)
        }
    }

    private func sendTrailersOnly(_ streamID: Int32, _ error: RPCError) {
        session.submitResponse(
            streamID: streamID, headers: Self.responseHeaders + Self.statusFields(error), endStream: true)
    }

    private static func statusFields(_ error: RPCError?) -> [HTTP2Header] {
        guard let error else { return okTrailers }
        var fields = [HTTP2Header("grpc-status", "\(error.code.rawValue)")]
        if !error.message.isEmpty {
            fields.append(HTTP2Header("grpc-message", GRPCPercentEncoding.encode(error.message)))
        }
        for (name, value) in error.metadata.headerFields() { fields.append(HTTP2Header(name, value)) }
        return fields
    }

    private func deadlineExpired(_ streamID: Int32) {
        guard let call = calls[streamID], !call.finished else { return }
        call.timer = nil
        finish(streamID, call, RPCError(code: .deadlineExceeded, message: "Deadline Exceeded"))
    }
}
