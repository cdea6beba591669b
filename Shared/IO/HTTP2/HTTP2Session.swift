import CNGHTTP2
import NetworkIO

/// One HTTP/2 header field, as text (binary values are carried base64-encoded by the layer above).
public struct HTTP2Header: Sendable, Equatable {
    /// The lower-case field name, pseudo-headers included (`:path`).
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header field.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// Limits and protections for an HTTP/2 session; the defaults suit an RPC server.
public struct HTTP2Configuration: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS we announce.
    public var maxConcurrentStreams: UInt32 = 1024
    /// SETTINGS_INITIAL_WINDOW_SIZE we announce (per-stream receive window).
    public var initialWindowSize: UInt32 = 1 << 20
    /// The connection-level receive window.
    public var connectionWindowSize: Int32 = 16 << 20
    /// SETTINGS_MAX_HEADER_LIST_SIZE we announce.
    public var maxHeaderListSize: UInt32 = 16 * 1024
    /// RST_STREAM frames a peer may send in a burst, and per second after it, before the connection is dropped.
    public var streamResetBurst: UInt64 = 1000
    /// See ``streamResetBurst``.
    public var streamResetRatePerSecond: UInt64 = 33
    /// CONTINUATION frames allowed after one HEADERS frame.
    public var maxContinuations: Int = 8
    /// SETTINGS entries allowed in one frame.
    public var maxSettings: Int = 32
    /// Queued outbound control frames (PING/SETTINGS acks) before the peer is considered flooding.
    public var maxOutboundAcks: Int = 1000
    /// Response or request body bytes held for a peer that is not taking them (its flow-control window is
    /// closed); above this the connection stops reading new frames until the peer catches up.
    public var maxBufferedOutputBytes: Int = 8 * 1024 * 1024

    /// The defaults.
    public init() {}
}

/// Receives the events of an ``HTTP2Session``, on its loop.
public protocol HTTP2SessionDelegate: AnyObject {
    /// A complete header block (request, response or trailers) arrived on `streamID`.
    func http2Session(
        _ session: HTTP2Session, didReceiveHeaders headers: HTTP2HeaderBlock, streamID: Int32, endStream: Bool)
    /// Body bytes arrived on `streamID`; valid only during the call.
    func http2Session(_ session: HTTP2Session, didReceiveData bytes: UnsafeRawBufferPointer, streamID: Int32)
    /// The peer half-closed `streamID` after DATA.
    func http2Session(_ session: HTTP2Session, didReceiveEndStream streamID: Int32)
    /// `streamID` is closed; `errorCode` is the HTTP/2 error code (0 for a normal close).
    func http2Session(_ session: HTTP2Session, streamDidClose streamID: Int32, errorCode: UInt32)
    /// The peer sent GOAWAY: streams above `lastStreamID` were not processed.
    func http2Session(_ session: HTTP2Session, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32)
    /// The session started on its connection (our preface and SETTINGS are queued); the peer has said nothing yet.
    func http2SessionDidBecomeActive(_ session: HTTP2Session)
    /// The peer's first SETTINGS frame arrived: the peer speaks HTTP/2 on this connection and has taken it up (a
    /// server sends it only once it accepted the connection, after any TLS handshake), so streams opened now reach
    /// it. A client counts the connection ready only from here.
    func http2SessionDidReceivePeerSettings(_ session: HTTP2Session)
    /// The HEADERS that open the client stream `streamID` were handed to the connection: before this the request
    /// cannot have reached the server.
    func http2Session(_ session: HTTP2Session, didSendRequestHeaders streamID: Int32)
    /// The connection is gone.
    func http2SessionDidClose(_ session: HTTP2Session, error: NetworkError?)
}

extension HTTP2SessionDelegate {
    public func http2SessionDidReceivePeerSettings(_ session: HTTP2Session) {}
    public func http2Session(_ session: HTTP2Session, didSendRequestHeaders streamID: Int32) {}
}

/// HTTP/2 error codes used by the layers above.
public enum HTTP2ErrorCode {
    /// NO_ERROR.
    public static let noError: UInt32 = 0
    /// PROTOCOL_ERROR.
    public static let protocolError: UInt32 = 1
    /// INTERNAL_ERROR.
    public static let internalError: UInt32 = 2
    /// REFUSED_STREAM: the stream was not processed and may be retried.
    public static let refusedStream: UInt32 = 7
    /// CANCEL.
    public static let cancel: UInt32 = 8
    /// ENHANCE_YOUR_CALM.
    public static let enhanceYourCalm: UInt32 = 11
}

private let errDeferred: Int = -508
private let errCallbackFailure: Int32 = -902
private let errTemporalCallbackFailure: Int32 = -521
private let frameData: UInt8 = 0
private let frameHeaders: UInt8 = 1
private let frameSettings: UInt8 = 4
private let frameGoAway: UInt8 = 7
private let flagEndStream: UInt8 = 1
private let flagAck: UInt8 = 1
private let dataFlagEOF: UInt32 = 1
private let dataFlagNoEndStream: UInt32 = 2

/// An nghttp2 server or client session on a ``Channel``: input is fed to nghttp2 as it arrives, and output is
/// pulled from nghttp2 once per loop turn into a single socket write. Loop-confined, like its channel.
public final class HTTP2Session: ChannelHandler {
    /// Which side of the connection this session is.
    public enum Role: Sendable { case server, client }

    private final class StreamOutput {
        var data = ByteQueue()
        var ended = false
        var trailers: HTTP2HeaderList?
        var deferred = false
    }

    /// The session's side.
    public let role: Role
    /// The receiver of stream events; held strongly until the connection closes.
    public var delegate: HTTP2SessionDelegate?
    /// The channel, from `channelActive` until `channelInactive` (held strongly in between: a weak reference
    /// would put every retain of the channel on the runtime's slow path).
    public private(set) var channel: Channel?
    private var session: OpaquePointer?
    private let configuration: HTTP2Configuration
    private var outputs = StreamTable<StreamOutput>()
    // nghttp2 delivers one header block at a time (HEADERS and its CONTINUATIONs are never interleaved with
    // another stream's), so one buffer serves every stream.
    private var headerBlock = HTTP2HeaderBlock()
    private var headerBlockStream: Int32 = 0
    private var headerBlockSize = 0
    private var closeAfterFlush = false
    private var bufferedOutputBytes = 0
    /// True once the peer's first SETTINGS frame has arrived.
    public private(set) var peerSettingsReceived = false

    /// Creates a session; it starts when its channel becomes active.
    public init(role: Role, configuration: HTTP2Configuration = HTTP2Configuration()) {
        self.role = role
        self.configuration = configuration
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    // MARK: - ChannelHandler

    public func channelActive(_ channel: Channel) {
        self.channel = channel
        guard createSession() else {
            channel.close(error: NetworkError(.system, "nghttp2 session could not be created"))
            return
        }
        channel.scheduleFlush()
        delegate?.http2SessionDidBecomeActive(self)
    }

    public func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard let session, !closeAfterFlush else { return }
        let result = nghttp2_session_mem_recv(
            session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 {
            // A bad preface, a protocol violation or a flood: tell the peer (if a GOAWAY can still be framed)
            // and drop this connection only.
            nghttp2_session_terminate_session(session, HTTP2ErrorCode.protocolError)
            closeAfterFlush = true
        }
        channel.scheduleFlush()
    }

    public func channelWillFlush(_ channel: Channel) {
        guard let session else { return }
        while channel.isWritable && channel.isOpen {
            var pointer: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &pointer)
            if count < 0 {
                channel.close(error: NetworkError(.connectionClosed, "HTTP/2 send failed"))
                return
            }
            guard count > 0, let pointer else { break }
            channel.write(UnsafeRawBufferPointer(start: pointer, count: count))
        }
        if closeAfterFlush || (nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0) {
            if channel.isOpen {
                // close() writes what is queued (the final GOAWAY) before closing.
                channel.close()
            }
        }
    }

    public func channelInactive(_ channel: Channel, error: NetworkError?) {
        self.channel = nil
        outputs.removeAll()
        let delegate = self.delegate
        self.delegate = nil
        delegate?.http2SessionDidClose(self, error: error)
    }

    // MARK: - Submitting frames

    /// Sends response headers; with `endStream` the response is headers only (a gRPC trailers-only response).
    public func submitResponse(streamID: Int32, headers: [HTTP2Header], endStream: Bool) {
        submitResponse(streamID: streamID, headers: HTTP2HeaderList(headers), endStream: endStream)
    }

    /// Sends response headers prepared once (see ``HTTP2HeaderList``); otherwise as the array form.
    public func submitResponse(streamID: Int32, headers: HTTP2HeaderList, endStream: Bool) {
        guard let session else { return }
        let result: Int32 = headers.withNameValues { nva, count in
            if endStream {
                return nghttp2_submit_response(session, streamID, nva, count, nil)
            }
            outputs[streamID] = StreamOutput()
            var provider = dataProvider()
            return nghttp2_submit_response(session, streamID, nva, count, &provider)
        }
        if result != 0 { discardOutput(streamID) }
        channel?.scheduleFlush()
    }

    /// Opens a client stream with request headers and a body to be supplied by ``sendData(streamID:bytes:)``.
    /// Returns the stream ID, or nil when no stream can be opened (e.g. after GOAWAY, or once the connection is
    /// closing).
    public func submitRequest(headers: [HTTP2Header]) -> Int32? {
        guard let session, !closeAfterFlush, channel?.isOpen == true else { return nil }
        var provider = dataProvider()
        let streamID: Int32 = withNameValues(headers) { nva, count in
            nghttp2_submit_request(session, nil, nva, count, &provider, nil)
        }
        guard streamID > 0 else { return nil }
        outputs[streamID] = StreamOutput()
        channel?.scheduleFlush()
        return streamID
    }

    /// Queues body bytes on an open stream.
    public func sendData(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let output = outputs[streamID] else { return }
        output.data.append(bytes)
        bufferedOutputBytes += bytes.count
        applyOutputBudget()
        resume(streamID)
    }

    /// Queues body bytes on an open stream, taking the array over when nothing else is queued.
    public func sendData(streamID: Int32, bytes: consuming [UInt8]) {
        guard let output = outputs[streamID] else { return }
        bufferedOutputBytes += bytes.count
        output.data.append(bytes)
        applyOutputBudget()
        resume(streamID)
    }

    /// Ends the stream after the queued data, with trailers (server) or a bare END_STREAM (client when nil).
    public func finishStream(streamID: Int32, trailers: [HTTP2Header]?) {
        finishStream(streamID: streamID, trailers: trailers.map(HTTP2HeaderList.init))
    }

    /// Ends the stream after the queued data, with trailers prepared once.
    public func finishStream(streamID: Int32, trailers: HTTP2HeaderList?) {
        guard let output = outputs[streamID] else { return }
        output.ended = true
        output.trailers = trailers
        resume(streamID)
    }

    /// Resets a stream with an HTTP/2 error code.
    public func resetStream(streamID: Int32, errorCode: UInt32) {
        guard let session else { return }
        nghttp2_submit_rst_stream(session, 0, streamID, errorCode)
        channel?.scheduleFlush()
    }

    /// Announces a coming shutdown (a GOAWAY with the maximum stream ID) without refusing streams yet.
    public func submitShutdownNotice() {
        guard let session, role == .server else { return }
        nghttp2_submit_shutdown_notice(session)
        channel?.scheduleFlush()
    }

    /// Sends GOAWAY naming the last stream that will be processed; the connection closes once those finish.
    public func submitGoAway(errorCode: UInt32 = HTTP2ErrorCode.noError) {
        guard let session else { return }
        let last = nghttp2_session_get_last_proc_stream_id(session)
        nghttp2_submit_goaway(session, 0, last, errorCode, nil, 0)
        channel?.scheduleFlush()
    }

    /// Ends the connection: a GOAWAY (NO_ERROR, naming the last stream the peer opened that we processed) goes
    /// out after what is queued, nothing more is read or started, and the channel closes gracefully (its write
    /// side shut, the peer's input read to its end for a bounded time; see ``Channel/close(error:)``).
    public func close() {
        guard let channel, channel.isOpen else { return }
        if let session, !closeAfterFlush {
            nghttp2_session_terminate_session(session, HTTP2ErrorCode.noError)
            closeAfterFlush = true
        }
        guard channel.closeTimeoutNanoseconds > 0, channel.isWritable else {
            // No time to wait for the flush, or a peer that is not taking what it was sent: close now.
            channel.close()
            return
        }
        channel.scheduleFlush()
        // The flush that writes the GOAWAY and closes runs only while the peer takes output: bound the wait.
        channel.loop.scheduleTimer(afterNanoseconds: channel.closeTimeoutNanoseconds) { channel.close() }
    }

    // MARK: - nghttp2 plumbing

    private func applyOutputBudget() {
        channel?.pauseReading(bufferedOutputBytes > configuration.maxBufferedOutputBytes)
    }

    private func discardOutput(_ streamID: Int32) {
        if let output = outputs.removeValue(forKey: streamID) {
            bufferedOutputBytes -= output.data.count
            applyOutputBudget()
        }
    }

    private func resume(_ streamID: Int32) {
        guard let session, let output = outputs[streamID], output.deferred else {
            channel?.scheduleFlush()
            return
        }
        output.deferred = false
        nghttp2_session_resume_data(session, streamID)
        channel?.scheduleFlush()
    }

    private func dataProvider() -> nghttp2_data_provider {
        var provider = nghttp2_data_provider()
        provider.source.ptr = nil
        provider.read_callback = { session, streamID, buffer, length, flags, _, userData in
            guard let userData, let buffer, let flags else { return Int(errCallbackFailure) }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            return this.readOutput(streamID: streamID, into: buffer, length: length, flags: flags)
        }
        return provider
    }

    private func readOutput(
        streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let output = outputs[streamID] else {
            flags.pointee |= dataFlagEOF
            return 0
        }
        let count = min(length, output.data.count)
        if count > 0 {
            output.data.withUnreadBytes { bytes in
                buffer.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count)
            }
            output.data.consume(count)
            bufferedOutputBytes -= count
            applyOutputBudget()
        }
        if output.data.isEmpty {
            if output.ended {
                flags.pointee |= dataFlagEOF
                if let trailers = output.trailers, let session {
                    flags.pointee |= dataFlagNoEndStream
                    _ = trailers.withNameValues { nva, n in nghttp2_submit_trailer(session, streamID, nva, n) }
                }
                outputs[streamID] = nil
                return count
            }
            if count == 0 {
                output.deferred = true
                return errDeferred
            }
        }
        return count
    }

    private func createSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            this.headerBlock.removeAll()
            this.headerBlockStream = frame.pointee.hd.stream_id
            this.headerBlockSize = 0
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let userData, let name, let value else { return 0 }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            guard frame.pointee.hd.stream_id == this.headerBlockStream else { return errTemporalCallbackFailure }
            // Enforce our announced header list size (name + value + 32 per field, RFC 9113 sec. 6.5.2).
            this.headerBlockSize += nameLength + valueLength + 32
            if this.headerBlockSize > Int(this.configuration.maxHeaderListSize) { return errTemporalCallbackFailure }
            this.headerBlock.append(
                name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            this.frameReceived(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) {
            _, _, streamID, data, length, userData in
            guard let userData else { return 0 }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            this.delegate?.http2Session(
                this, didReceiveData: UnsafeRawBufferPointer(start: data, count: length), streamID: streamID)
            return 0
        }
        if role == .client {
            nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, userData in
                guard let frame, let userData, frame.pointee.hd.type == frameHeaders,
                    frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
                else { return 0 }
                let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
                this.delegate?.http2Session(this, didSendRequestHeaders: frame.pointee.hd.stream_id)
                return 0
            }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, userData in
            guard let userData else { return 0 }
            let this = Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
            this.discardOutput(streamID)
            this.delegate?.http2Session(this, streamDidClose: streamID, errorCode: errorCode)
            return 0
        }
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return false }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_max_continuations(option, configuration.maxContinuations)
        nghttp2_option_set_max_settings(option, configuration.maxSettings)
        nghttp2_option_set_max_outbound_ack(option, configuration.maxOutboundAcks)
        nghttp2_option_set_stream_reset_rate_limit(
            option, configuration.streamResetBurst, configuration.streamResetRatePerSecond)
        nghttp2_option_set_max_send_header_block_length(option, 64 * 1024)
        // RPC traffic has no use for RFC 7540 stream priorities; without them nghttp2 keeps no dependency tree
        // and no closed streams for it, which saves work on every stream.
        nghttp2_option_set_no_closed_streams(option, 1)

        let userData = Unmanaged.passUnretained(self).toOpaque()
        var created: OpaquePointer?
        let result =
            role == .server
            ? nghttp2_session_server_new2(&created, callbacks, userData, option)
            : nghttp2_session_client_new2(&created, callbacks, userData, option)
        guard result == 0, let created else { return false }
        session = created
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: configuration.maxConcurrentStreams),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                value: configuration.initialWindowSize),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: configuration.maxHeaderListSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        if role == .client {
            settings[0] = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)
        }
        nghttp2_submit_settings(created, 0, &settings, settings.count)
        nghttp2_session_set_local_window_size(created, 0, 0, configuration.connectionWindowSize)
        return true
    }

    private func frameReceived(_ frame: nghttp2_frame) {
        let streamID = frame.hd.stream_id
        let endStream = frame.hd.flags & flagEndStream != 0
        switch frame.hd.type {
        case frameHeaders:
            if streamID != headerBlockStream { headerBlock.removeAll() }
            // Lent to the delegate for the call; unless it keeps a copy, the buffer is reused for the next block.
            delegate?.http2Session(self, didReceiveHeaders: headerBlock, streamID: streamID, endStream: endStream)
            headerBlock.removeAll()
            headerBlockStream = 0
        case frameData:
            if endStream { delegate?.http2Session(self, didReceiveEndStream: streamID) }
        case frameSettings:
            if frame.hd.flags & flagAck == 0 && !peerSettingsReceived {
                peerSettingsReceived = true
                delegate?.http2SessionDidReceivePeerSettings(self)
            }
        case frameGoAway:
            delegate?.http2Session(
                self, didReceiveGoAway: frame.goaway.last_stream_id, errorCode: frame.goaway.error_code)
        default:
            break
        }
    }
}

/// A header list laid out once as an `nghttp2_nv` array, for headers sent again and again (a gRPC server's
/// `:status 200` response headers and `grpc-status: 0` trailers). Immutable after init, and the array points
/// only into memory the object owns and frees in `deinit`, so sharing it across threads is safe: that is why
/// the `@unchecked Sendable` holds.
public final class HTTP2HeaderList: @unchecked Sendable {
    private let storage: UnsafeMutableBufferPointer<UInt8>
    private let nameValues: UnsafeMutableBufferPointer<nghttp2_nv>

    /// Lays out `headers`.
    public init(_ headers: [HTTP2Header]) {
        let total = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        storage = .allocate(capacity: max(total, 1))
        nameValues = .allocate(capacity: max(headers.count, 1))
        var offset = 0
        for (index, header) in headers.enumerated() {
            let nameStart = offset
            offset = copyUTF8(header.name, into: storage, at: offset)
            let valueStart = offset
            offset = copyUTF8(header.value, into: storage, at: offset)
            nameValues[index] = nghttp2_nv(
                name: storage.baseAddress! + nameStart, value: storage.baseAddress! + valueStart,
                namelen: valueStart - nameStart, valuelen: offset - valueStart,
                flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
        count = headers.count
    }

    /// The number of fields.
    public let count: Int

    deinit {
        storage.deallocate()
        nameValues.deallocate()
    }

    func withNameValues<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        body(UnsafePointer(nameValues.baseAddress!), count)
    }
}

/// Calls `body` with an `nghttp2_nv` array pointing into one temporary buffer; nghttp2 copies the fields.
func withNameValues<R>(_ headers: [HTTP2Header], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
    var total = 0
    for header in headers { total += header.name.utf8.count + header.value.utf8.count }
    return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(total, 1)) { storage in
        withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(headers.count, 1)) { nva in
            var offset = 0
            for (index, header) in headers.enumerated() {
                let nameStart = offset
                offset = copyUTF8(header.name, into: storage, at: offset)
                let valueStart = offset
                offset = copyUTF8(header.value, into: storage, at: offset)
                nva[index] = nghttp2_nv(
                    name: storage.baseAddress! + nameStart, value: storage.baseAddress! + valueStart,
                    namelen: valueStart - nameStart, valuelen: offset - valueStart,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            return body(UnsafePointer(nva.baseAddress!), headers.count)
        }
    }
}

/// Copies `text`'s UTF-8 bytes into `storage` at `offset` (one `memcpy` for a native string); returns the end.
private func copyUTF8(_ text: String, into storage: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
    let copied = text.utf8.withContiguousStorageIfAvailable { bytes -> Int in
        guard let source = bytes.baseAddress, bytes.count > 0 else { return offset }
        (storage.baseAddress! + offset).initialize(from: source, count: bytes.count)
        return offset + bytes.count
    }
    if let copied { return copied }
    var end = offset
    for byte in text.utf8 {
        storage[end] = byte
        end += 1
    }
    return end
}
