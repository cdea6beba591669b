#if canImport(Glibc)
    import Glibc
#endif

/// The protocol logic on top of a ``Channel`` (HTTP/2, HTTP/1.1, ...). All calls happen on the channel's loop.
public protocol ChannelHandler: AnyObject {
    /// The connection is established (accepted, or connected for a client).
    func channelActive(_ channel: Channel)
    /// Plaintext bytes arrived; they are only valid during the call.
    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer)
    /// The loop is about to write this turn's output: produce any pending output now with ``Channel/write(_:)``.
    func channelWillFlush(_ channel: Channel)
    /// The connection is closed; `error` says why when it was not an orderly close.
    func channelInactive(_ channel: Channel, error: NetworkError?)
}

/// A byte-stream security layer (TLS) between the socket and the handler.
public protocol ChannelSecurity: AnyObject {
    /// Starts the handshake (a client sends its hello); a server waits for the peer.
    func startHandshake() throws
    /// Consumes ciphertext from the peer and hands out any plaintext it yields.
    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) throws
    /// Encrypts plaintext, holding it until the handshake has completed.
    func sendPlaintext(_ bytes: UnsafeRawBufferPointer) throws
    /// Hands out ciphertext that is ready to go to the peer.
    func drainCiphertext(_ sink: (UnsafeRawBufferPointer) -> Void)
    /// The protocol chosen by ALPN, once the handshake is complete.
    var negotiatedProtocol: String? { get }
    /// The certificate the peer presented, once the handshake is complete; nil when it presented none.
    var peerCertificate: PeerCertificate? { get }
    /// Queues the alert that ends the session (TLS close_notify) for ``drainCiphertext(_:)``, once the handshake
    /// has completed; the channel calls it when it closes gracefully.
    func shutdown()
}

extension ChannelSecurity {
    /// A layer with no closing message of its own sends nothing.
    public func shutdown() {}
}

/// What the certificate a TLS peer presented says about it.
public struct PeerCertificate: Sendable, Equatable {
    /// Its URI subject alternative names (a SPIFFE ID among them, for a service).
    public let uris: [String]
    /// Its DNS subject alternative names.
    public let dnsNames: [String]
    /// Why its chain did not verify against the trusted certificates (expired, unknown issuer, ...); nil when it
    /// did.
    public let verificationFailure: String?
    /// Its serial number in hex, for logs.
    public let serialNumber: String

    public init(uris: [String], dnsNames: [String], verificationFailure: String?, serialNumber: String) {
        self.uris = uris
        self.dnsNames = dnsNames
        self.verificationFailure = verificationFailure
        self.serialNumber = serialNumber
    }
}

/// One non-blocking TCP connection on one ``EventLoop``: reads are delivered to the handler, writes are gathered
/// and sent once at the end of the loop turn, and reading pauses while too much output is queued (backpressure).
///
/// ``close()`` ends the connection gracefully: what is queued is sent (after TLS's close_notify), the write side
/// is shut (`shutdown(SHUT_WR)`, a FIN), and the peer's input is read and discarded until it ends its side too,
/// for at most ``closeTimeoutNanoseconds``; only then is the socket closed and the handler told. Closing a socket
/// with unread input makes the kernel send RST instead of FIN, and a RST can discard what the peer has not read
/// yet (our last frames) and fails the peer's next read or write; reading to the end first avoids both.
///
/// Confined to its loop: every method must be called on `loop`'s thread.
public final class Channel: EventLoopSource, EndOfTurnFlushing {
    private enum State { case connecting, active, closing, closed }

    /// The loop the channel lives on.
    public let loop: EventLoop
    /// The socket.
    public let fd: Int32
    /// The peer's address, when known.
    public let remoteAddress: SocketAddress?
    /// The security layer, when the connection uses TLS.
    public let security: ChannelSecurity?
    /// The protocol logic; set before the channel becomes active.
    public var handler: ChannelHandler?
    /// Queued output above this many bytes pauses reading and asks the handler to hold back.
    public var highWaterMark = 1 << 20
    /// How long a graceful ``close()`` may take in all: sending what is queued, then waiting for the peer to end
    /// its side. 0 sends what the socket takes at once, shuts the write side and closes without waiting.
    public var closeTimeoutNanoseconds: UInt64 = 1_000_000_000

    private var key: UInt64 = 0
    private var state: State
    private var outbound = ByteQueue()
    private var flushScheduled = false
    private var watchingWritable = false
    private var readPaused = false
    private var readPausedByHandler = false
    /// The peer has ended its side (a read returned 0).
    private var peerClosed = false
    /// Our write side is shut (the FIN is queued behind everything sent).
    private var writeShut = false
    private var closeTimer: TimerID?

    init(loop: EventLoop, fd: Int32, remoteAddress: SocketAddress?, security: ChannelSecurity?, connecting: Bool) {
        self.loop = loop
        self.fd = fd
        self.remoteAddress = remoteAddress
        self.security = security
        self.state = connecting ? .connecting : .active
    }

    /// True until the channel starts closing: once ``close()`` is called nothing more is written or delivered.
    public var isOpen: Bool { state == .connecting || state == .active }
    /// Bytes queued for the socket and not yet sent.
    public var pendingOutboundBytes: Int { outbound.count }
    /// True while queued output is below the high-water mark.
    public var isWritable: Bool { outbound.count < highWaterMark }

    func start() throws {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let events =
            state == .connecting
            ? EpollEvents.writable | EpollEvents.readHangUp : EpollEvents.readable | EpollEvents.readHangUp
        watchingWritable = state == .connecting
        key = try loop.register(fd: fd, events: events, source: self)
        if state == .active { becomeActive() }
    }

    private func becomeActive() {
        state = .active
        if let security {
            do { try security.startHandshake() } catch {
                close(error: NetworkError(.tlsFailure, "handshake could not start"))
                return
            }
            scheduleFlush()
        }
        handler?.channelActive(self)
    }

    /// Queues plaintext for the peer; it is sent at the end of this loop turn.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        guard state == .active, bytes.count > 0 else { return }
        if let security {
            do { try security.sendPlaintext(bytes) } catch {
                close(error: NetworkError(.tlsFailure, "encryption failed"))
                return
            }
        } else {
            outbound.append(bytes)
        }
        scheduleFlush()
    }

    /// Asks for ``ChannelHandler/channelWillFlush(_:)`` and a socket write at the end of this turn.
    public func scheduleFlush() {
        guard !flushScheduled, state != .closed else { return }
        flushScheduled = true
        loop.scheduleFlush(self)
    }

    public func flushAtEndOfTurn() {
        flushScheduled = false
        guard state == .active else { return }
        if isWritable { handler?.channelWillFlush(self) }
        guard state == .active else { return }
        if let security {
            security.drainCiphertext { outbound.append($0) }
        }
        sendQueued()
    }

    private func sendQueued() {
        while !outbound.isEmpty {
            let sent = outbound.withUnreadBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                outbound.consume(sent)
                continue
            }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            if sent < 0 && errno == EINTR { continue }
            close(error: NetworkError(.connectionClosed, "send failed", errno: errno))
            return
        }
        updateInterest()
    }

    /// Stops (or resumes) reading from the socket on the handler's behalf, e.g. while it holds too much output
    /// that the peer has not taken yet; reading also pauses on its own while the socket's queue is over the mark.
    public func pauseReading(_ paused: Bool) {
        guard paused != readPausedByHandler else { return }
        readPausedByHandler = paused
        updateInterest()
    }

    private func updateInterest() {
        guard state == .active else { return }
        let wantWritable = !outbound.isEmpty
        let wantPause = outbound.count >= highWaterMark || readPausedByHandler
        if wantWritable == watchingWritable && wantPause == readPaused { return }
        watchingWritable = wantWritable
        readPaused = wantPause
        var events = EpollEvents.readHangUp
        if !readPaused { events |= EpollEvents.readable }
        if watchingWritable { events |= EpollEvents.writable }
        loop.modify(key: key, fd: fd, events: events)
    }

    public func handleEvents(_ events: UInt32) {
        if state == .closing {
            if events & EpollEvents.writable != 0 { continueClosing() }
            if state == .closing,
                events & (EpollEvents.readable | EpollEvents.readHangUp | EpollEvents.hangUp | EpollEvents.error) != 0
            {
                discardInput()
            }
            return
        }
        if state == .connecting {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 || events & (EpollEvents.error | EpollEvents.hangUp) != 0 {
                let code: NetworkError.Code = error == ECONNREFUSED ? .connectionRefused : .connectionClosed
                close(error: NetworkError(code, "connect failed", errno: error))
                return
            }
            watchingWritable = true
            readPaused = true
            becomeActive()
            updateInterest()
            if state == .active { scheduleFlush() }
            return
        }
        if events & EpollEvents.writable != 0 {
            sendQueued()
            if state == .active && isWritable { scheduleFlush() }
        }
        if events & (EpollEvents.readable | EpollEvents.readHangUp | EpollEvents.hangUp | EpollEvents.error) != 0,
            state == .active, !readPaused || events & (EpollEvents.hangUp | EpollEvents.error) != 0
        {
            readAvailable()
        }
    }

    private func readAvailable() {
        let buffer = loop.readBuffer
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count > 0 {
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            if let security {
                do {
                    try security.receiveCiphertext(bytes) { plaintext in
                        if state == .active { handler?.channelRead(self, plaintext) }
                    }
                } catch {
                    // The reason (a handshake error, or a peer the client does not accept) is safe to log: it
                    // names certificates and protocol errors, never key material.
                    close(error: NetworkError(.tlsFailure, "TLS failure: \(error)"))
                    return
                }
                // The handshake or alerts may have produced ciphertext to send.
                scheduleFlush()
            } else {
                handler?.channelRead(self, bytes)
            }
            return
        }
        if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return }
        if count == 0 {
            // The peer ended its side: whatever we still have queued goes out, then ours ends too.
            peerClosed = true
            close()
            return
        }
        close(error: NetworkError(.connectionClosed, "recv failed", errno: errno))
    }

    /// Closes the connection; the handler is told once, when the socket is closed.
    ///
    /// Without an error the close is graceful (see the type's description): nothing more reaches the handler or
    /// the peer from the caller, and ``channelInactive`` comes once the peer has ended its side or
    /// ``closeTimeoutNanoseconds`` has passed. With an error (the connection has failed) the queued output is sent
    /// as far as the socket takes it at once and the socket is closed now.
    public func close(error: NetworkError? = nil) {
        switch state {
        case .closed:
            return
        case .connecting:
            finishClose(error)
        case .closing:
            if error != nil { finishClose(error) }
        case .active:
            if let error {
                if let security { security.drainCiphertext { outbound.append($0) } }
                if !outbound.isEmpty {
                    _ = outbound.withUnreadBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                }
                finishClose(error)
                return
            }
            state = .closing
            if let security {
                security.shutdown()
                security.drainCiphertext { outbound.append($0) }
            }
            if closeTimeoutNanoseconds > 0 {
                closeTimer = loop.scheduleTimer(afterNanoseconds: closeTimeoutNanoseconds) { [self] in
                    closeTimer = nil
                    finishClose(nil)
                }
            }
            continueClosing()
        }
    }

    /// Sends what is queued, then shuts the write side and waits for the peer's end of input.
    private func continueClosing() {
        while !outbound.isEmpty {
            let sent = outbound.withUnreadBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                outbound.consume(sent)
                continue
            }
            if sent < 0 && errno == EINTR { continue }
            if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && closeTimeoutNanoseconds > 0 {
                watchWhileClosing()
                return
            }
            // The peer is gone (or we may not wait): nothing more can be delivered.
            finishClose(nil)
            return
        }
        if !writeShut {
            writeShut = true
            Glibc.shutdown(fd, Int32(SHUT_WR))
        }
        if peerClosed || closeTimeoutNanoseconds == 0 {
            finishClose(nil)
            return
        }
        watchWhileClosing()
        // Input may already be waiting (the level-triggered event would report it too; this saves a turn).
        discardInput()
    }

    private func watchWhileClosing() {
        // Once the peer's input has ended, reading would report that end again and again: only wait to write.
        var events: UInt32 = peerClosed ? 0 : EpollEvents.readable | EpollEvents.readHangUp
        if !outbound.isEmpty { events |= EpollEvents.writable }
        watchingWritable = !outbound.isEmpty
        readPaused = false
        loop.modify(key: key, fd: fd, events: events)
    }

    /// Reads and drops the peer's input while closing; its end (or a failure) finishes the close.
    private func discardInput() {
        let buffer = loop.readBuffer
        // Bounded per turn, so that a peer that keeps sending cannot hold the loop.
        for _ in 0..<16 {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count > 0 { continue }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            // End of input, or the connection failed (reset): nothing more will come either way.
            peerClosed = true
            if writeShut || count < 0 { finishClose(nil) } else { watchWhileClosing() }
            return
        }
    }

    private func finishClose(_ error: NetworkError?) {
        guard state != .closed else { return }
        state = .closed
        if let closeTimer { loop.cancelTimer(closeTimer) }
        closeTimer = nil
        outbound.removeAll()
        loop.deregister(key: key, fd: fd)
        Glibc.close(fd)
        let handler = self.handler
        self.handler = nil
        handler?.channelInactive(self, error: error)
    }

    /// Opens a client connection to `address` on `loop`; the handler is told when it is active or has failed.
    /// Must be called on `loop`'s thread.
    public static func connect(
        to address: SocketAddress, on loop: EventLoop, security: ChannelSecurity? = nil, handler: ChannelHandler
    ) throws -> Channel {
        let family = address.isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw NetworkError(.system, "socket failed", errno: errno) }
        let result = try address.withSockAddr { Glibc.connect(fd, $0, $1) }
        if result != 0 && errno != EINPROGRESS {
            let code = errno
            Glibc.close(fd)
            throw NetworkError(code == ECONNREFUSED ? .connectionRefused : .system, "connect failed", errno: code)
        }
        let channel = Channel(loop: loop, fd: fd, remoteAddress: address, security: security, connecting: true)
        channel.handler = handler
        do { try channel.start() } catch {
            Glibc.close(fd)
            throw error
        }
        return channel
    }
}
