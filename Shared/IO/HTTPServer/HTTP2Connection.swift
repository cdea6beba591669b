import HTTP1
import HTTP2
import HTTPMessages
import NetworkIO

/// One HTTP/2 connection (h2c with prior knowledge or h2 over TLS): each stream's headers and body become an
/// ``HTTPRequest`` for the responder, and its ``HTTPResponse`` goes back on the same stream. Bodies over the limit
/// get 413 at once.
///
/// A stream the client resets is not processed further (HTTP/2 rapid reset): its handler's task is cancelled, and a
/// handler that has not started yet, as when the request's last frame and the reset arrive together, never does.
///
/// Confined to its channel's loop; other threads reach it only through `loop.execute` (the responder's result, the
/// server's drain), which is why the `@unchecked Sendable` holds.
final class HTTP2Connection: HTTP2SessionDelegate, DrainableConnection, @unchecked Sendable {
    private struct Stream {
        var headers: [HTTP2Header]
        var body: [UInt8] = []
        var answered = false
        /// The responder's task, from the end of the request until the stream closes.
        var handler: Task<Void, Never>?
    }

    let session: HTTP2Session
    private let loop: EventLoop
    private let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let registry: ConnectionRegistry
    private let peer: String
    private var registryKey: Int?
    private var streams = StreamTable<Stream>()
    private var draining = false
    private var idleTimer: TimerID?

    init(
        channel: Channel, configuration: HTTPServerConfiguration, responder: any HTTPResponder,
        registry: ConnectionRegistry
    ) {
        session = HTTP2Session(role: .server, configuration: configuration.http2)
        loop = channel.loop
        self.configuration = configuration
        self.responder = responder
        self.registry = registry
        peer = channel.remoteAddress?.host ?? ""
        session.delegate = self
    }

    // MARK: - DrainableConnection

    func beginDrain() {
        loop.execute { [self] in
            guard !draining else { return }
            draining = true
            session.submitShutdownNotice()
            loop.scheduleTimer(afterNanoseconds: 100_000_000) { [self] in session.submitGoAway() }
        }
    }

    func forceClose() {
        loop.execute { [self] in session.close() }
    }

    // MARK: - HTTP2SessionDelegate

    func http2SessionDidBecomeActive(_ session: HTTP2Session) {
        registryKey = registry.add(self)
        if registryKey == nil {
            draining = true
            session.submitGoAway()
        }
        armIdleTimer()
    }

    func http2SessionDidClose(_ session: HTTP2Session, error: NetworkError?) {
        if let idleTimer { loop.cancelTimer(idleTimer) }
        idleTimer = nil
        // Nobody is left to answer: handlers that have not started do not start, and running ones are cancelled.
        for stream in streams.values { stream.handler?.cancel() }
        streams.removeAll()
        if let registryKey { registry.remove(registryKey) }
        registryKey = nil
    }

    func http2Session(
        _ session: HTTP2Session, didReceiveHeaders block: HTTP2HeaderBlock, streamID: Int32, endStream: Bool
    ) {
        let headers = block.headers
        if streams[streamID] != nil {
            // Trailers end the request.
            if endStream { dispatch(streamID) }
            return
        }
        if let idleTimer { loop.cancelTimer(idleTimer) }
        idleTimer = nil
        streams[streamID] = Stream(headers: headers)
        if let length = headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }),
            length > configuration.limits.maximumBodyBytes
        {
            refuse(streamID, status: 413)
            return
        }
        if endStream {
            dispatch(streamID)
        } else {
            // A body that does not arrive in time is answered with 408, like a slow HTTP/1.1 request.
            loop.scheduleTimer(afterNanoseconds: configuration.requestTimeout.wholeNanoseconds) { [weak self] in
                guard let self, self.streams[streamID]?.answered == false else { return }
                self.refuse(streamID, status: 408)
            }
        }
    }

    func http2Session(_ session: HTTP2Session, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32) {
        guard var stream = streams[streamID], !stream.answered else { return }
        if stream.body.count + bytes.count > configuration.limits.maximumBodyBytes {
            refuse(streamID, status: 413)
            return
        }
        stream.body.append(contentsOf: bytes)
        streams[streamID] = stream
    }

    func http2Session(_ session: HTTP2Session, didReceiveEndStream streamID: Int32) {
        dispatch(streamID)
    }

    func http2Session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: UInt32) {
        // Closed before its response was sent (reset by the client, or the connection is going): stop the handler.
        // After the response it has finished, and cancelling it changes nothing.
        streams[streamID]?.handler?.cancel()
        streams[streamID] = nil
        armIdleTimer()
    }

    func http2Session(_ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32) {}

    // MARK: - Requests

    private func dispatch(_ streamID: Int32) {
        guard var stream = streams[streamID], !stream.answered else { return }
        stream.answered = true
        let body = stream.body
        stream.body = []
        streams[streamID] = stream
        var method = ""
        var target = ""
        var authority: String?
        var fields = HTTPHeaders()
        for header in stream.headers {
            switch header.name {
            case ":method": method = header.value
            case ":path": target = header.value
            case ":authority": authority = header.value
            case let name where name.hasPrefix(":"): break
            default: fields.add(header.name, header.value)
            }
        }
        if fields["host"] == nil, let authority { fields.add("host", authority) }
        let (path, query) = HTTPRequest.splitTarget(target)
        let request = HTTPRequest(
            method: method, path: path, query: query, headers: fields, body: body, remoteAddress: peer)
        let responder = self.responder
        let loop = self.loop
        let headRequest = method == "HEAD"
        // The task runs on this loop after the bytes read with the request's end are processed, so a reset that
        // came with them has already cancelled it.
        streams[streamID]?.handler = Task(executorPreference: loop) {
            guard !Task.isCancelled else { return }
            let response = await responder.respond(to: request)
            loop.executeOnLoop { [self] in send(streamID, response, headRequest: headRequest) }
        }
    }

    /// Answers a stream before its request is complete (a body over the limit, or too slow).
    private func refuse(_ streamID: Int32, status: Int) {
        streams[streamID]?.answered = true
        streams[streamID]?.body = []
        send(streamID, responder.refusal(status: status, detail: Refusal.detail(for: status)), headRequest: false)
    }

    private func send(_ streamID: Int32, _ response: HTTPResponse, headRequest: Bool) {
        guard streams[streamID] != nil else { return }
        var headers = [HTTP2Header(":status", String(response.status))]
        for (name, value) in response.headers {
            // Connection-specific fields are not allowed in HTTP/2 (RFC 9113 section 8.2.2).
            if ["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"].contains(name) {
                continue
            }
            headers.append(HTTP2Header(name, value.filter { $0 != "\r" && $0 != "\n" }))
        }
        headers.append(HTTP2Header("content-length", String(response.body.count)))
        let withBody = !response.body.isEmpty && !headRequest
        session.submitResponse(streamID: streamID, headers: headers, endStream: !withBody)
        if withBody {
            response.body.withUnsafeBytes { session.sendData(streamID: streamID, bytes: $0) }
            session.finishStream(streamID: streamID, trailers: nil as [HTTP2Header]?)
        }
    }

    private func armIdleTimer() {
        guard streams.isEmpty, idleTimer == nil else { return }
        idleTimer = loop.scheduleTimer(afterNanoseconds: configuration.idleTimeout.wholeNanoseconds) {
            [weak self] in
            guard let self else { return }
            self.idleTimer = nil
            if self.streams.isEmpty { self.session.submitGoAway() }
        }
    }
}
