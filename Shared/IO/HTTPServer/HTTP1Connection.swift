import HTTP1
import HTTPMessages
import NetworkIO

#if canImport(Glibc)
    import Glibc
#endif

/// One HTTP/1.1 connection: keep-alive, one request answered at a time so that pipelined requests get their
/// responses in order, `Expect: 100-continue`, an idle timeout between requests and a timeout for a request that
/// arrives too slowly. A request the parser refuses gets its error response and the connection closes.
///
/// Confined to its channel's loop; other threads reach it only through `loop.execute` (the responder's result, the
/// server's drain), which is why the `@unchecked Sendable` holds.
final class HTTP1Connection: ChannelHandler, DrainableConnection, @unchecked Sendable {
    private enum TimerKind { case none, idle, request }

    /// Held strongly until the channel closes (a weak reference would slow every retain of the channel).
    private var channel: Channel?
    private let loop: EventLoop
    private let configuration: HTTPServerConfiguration
    private let responder: any HTTPResponder
    private let registry: ConnectionRegistry
    private let peer: String
    private var registryKey: Int?
    private var parser: HTTP1RequestParser
    /// Bytes that arrived while a request was being answered; parsed once its response is written.
    private var pending: [UInt8] = []
    private var inFlight = false
    private var draining = false
    /// After a response that ends the connection: input is discarded until the peer closes or lingering ends.
    private var closing = false
    private var timer: TimerID?
    private var timerKind = TimerKind.none

    init(
        channel: Channel, configuration: HTTPServerConfiguration, responder: any HTTPResponder,
        registry: ConnectionRegistry
    ) {
        self.channel = channel
        self.loop = channel.loop
        self.configuration = configuration
        self.responder = responder
        self.registry = registry
        self.peer = channel.remoteAddress?.host ?? ""
        self.parser = HTTP1RequestParser(limits: configuration.limits)
    }

    // MARK: - ChannelHandler

    func channelActive(_ channel: Channel) {
        registryKey = registry.add(self)
        if registryKey == nil { draining = true }
        setTimer(.idle)
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard !closing else { return }
        if inFlight {
            pending.append(contentsOf: bytes)
            if pending.count > configuration.maximumPipelinedBytes { channel.close() }
            return
        }
        parser.append(bytes)
        processInput()
    }

    func channelWillFlush(_ channel: Channel) {}

    func channelInactive(_ channel: Channel, error: NetworkError?) {
        self.channel = nil
        cancelTimer()
        if let registryKey { registry.remove(registryKey) }
        registryKey = nil
    }

    // MARK: - DrainableConnection

    func beginDrain() {
        loop.execute { [self] in
            draining = true
            if !inFlight && parser.isIdle && pending.isEmpty && !closing { channel?.close() }
        }
    }

    func forceClose() {
        loop.execute { [self] in channel?.close() }
    }

    // MARK: - Requests

    private func processInput() {
        guard let channel, channel.isOpen, !inFlight, !closing else { return }
        do {
            while let event = try parser.next() {
                switch event {
                case .expectContinue:
                    HTTP1ResponseSerializer.continueResponse.withUnsafeBytes { channel.write($0) }
                case .request(let request):
                    dispatch(request, on: channel)
                    return
                }
            }
            setTimer(parser.isIdle ? .idle : .request)
        } catch let error as HTTP1ParseError {
            refuseAndClose(status: error.status, on: channel)
        } catch {
            refuseAndClose(status: 400, on: channel)
        }
    }

    private func dispatch(_ parsed: HTTP1Request, on channel: Channel) {
        inFlight = true
        cancelTimer()
        let (path, query) = HTTPRequest.splitTarget(parsed.target)
        let request = HTTPRequest(
            method: parsed.method, path: path, query: query, headers: parsed.headers, body: parsed.body,
            remoteAddress: peer)
        let keepAlive = parsed.keepAlive
        let responder = self.responder
        let loop = self.loop
        // The responder runs on this connection's loop (see EventLoop's TaskExecutor conformance).
        Task(executorPreference: loop) {
            let response = await responder.respond(to: request)
            loop.executeOnLoop { [self] in
                complete(response, keepAlive: keepAlive, headRequest: request.method == "HEAD")
            }
        }
    }

    private func complete(_ response: HTTPResponse, keepAlive: Bool, headRequest: Bool) {
        inFlight = false
        guard let channel, channel.isOpen else { return }
        let staysOpen = keepAlive && !draining
        HTTP1ResponseSerializer.serialize(response, keepAlive: staysOpen, headRequest: headRequest).withUnsafeBytes {
            channel.write($0)
        }
        guard staysOpen else {
            lingerAndClose(channel)
            return
        }
        if !pending.isEmpty {
            parser.append(pending)
            pending = []
        }
        processInput()
    }

    private func refuseAndClose(status: Int, on channel: Channel) {
        let response = responder.refusal(status: status, detail: Refusal.detail(for: status))
        HTTP1ResponseSerializer.serialize(response, keepAlive: false).withUnsafeBytes { channel.write($0) }
        lingerAndClose(channel)
    }

    /// Closes after the response has gone out: the write side is shut first and input is read and discarded for
    /// a moment, so a client still sending (a body over the limit) reads the response instead of a reset.
    private func lingerAndClose(_ channel: Channel) {
        closing = true
        pending = []
        cancelTimer()
        var checks = 0
        func shutWhenSent() {
            guard channel.isOpen else { return }
            checks += 1
            if channel.pendingOutboundBytes > 0 && checks < 200 {
                loop.scheduleTimer(afterNanoseconds: 10_000_000) { shutWhenSent() }
                return
            }
            shutdown(channel.fd, Int32(SHUT_WR))
            loop.scheduleTimer(afterNanoseconds: 2_000_000_000) { [weak channel] in channel?.close() }
        }
        loop.scheduleTimer(afterNanoseconds: 0) { shutWhenSent() }
    }

    // MARK: - Timers

    private func setTimer(_ kind: TimerKind) {
        // The request timer runs from a request's first byte to its last: more bytes do not extend it.
        if kind == timerKind && timer != nil { return }
        cancelTimer()
        timerKind = kind
        let duration = kind == .idle ? configuration.idleTimeout : configuration.requestTimeout
        // Strong: the timer is cancelled when the channel closes (a weak capture would slow every retain of self).
        timer = loop.scheduleTimer(afterNanoseconds: duration.wholeNanoseconds) { [self] in timerFired(kind) }
    }

    private func cancelTimer() {
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        timerKind = .none
    }

    private func timerFired(_ kind: TimerKind) {
        timer = nil
        timerKind = .none
        guard let channel, channel.isOpen, !inFlight, !closing else { return }
        if kind == .idle {
            channel.close()
        } else {
            refuseAndClose(status: 408, on: channel)
        }
    }
}
