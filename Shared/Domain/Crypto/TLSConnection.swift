import COpenSSL

/// One TLS connection driven through memory BIOs: the caller moves ciphertext between the socket and this
/// object, so it never blocks and works with any event loop. Not thread-safe: one owner (a loop) uses it.
public final class TLSConnection {
    private let ssl: OpaquePointer
    /// Kept alive while the connection is: the server's ALPN callback reads a buffer the context owns, and a
    /// reloaded configuration may drop its last other reference while this connection still runs.
    private let context: TLSContext
    private let networkIn: OpaquePointer
    private let networkOut: OpaquePointer
    private var pendingPlaintext: [UInt8] = []
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
    /// True once the handshake has completed.
    public private(set) var isHandshakeComplete = false
    private var shutdownQueued = false

    /// A connection for `context`'s side; a client verifies that the server's certificate names `serverName`
    /// (a DNS name or an IP address literal) and sends it as SNI when it is a DNS name.
    public init(context: TLSContext, serverName: String? = nil) throws {
        guard let ssl = SSL_new(context.context) else { throw CryptoError("SSL_new") }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw CryptoError("BIO_new")
        }
        self.ssl = ssl
        self.context = context
        networkIn = input
        networkOut = output
        SSL_set_bio(ssl, input, output)
        switch context.role {
        case .server:
            SSL_set_accept_state(ssl)
        case .client:
            SSL_set_connect_state(ssl)
            if let serverName {
                if serverName.contains(where: { $0.isLetter }) && !serverName.contains(":") {
                    _ = copenssl_SSL_set_tlsext_host_name(ssl, serverName)
                    SSL_set1_host(ssl, serverName)
                } else {
                    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                }
            }
        }
    }

    deinit {
        SSL_free(ssl)
        readBuffer.deallocate()
    }

    /// Starts (or continues) the handshake.
    public func startHandshake() throws {
        try advanceHandshake()
    }

    /// Feeds ciphertext from the peer and hands out the plaintext it yields.
    public func receiveCiphertext(_ bytes: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) throws {
        if bytes.count > 0 {
            guard BIO_write(networkIn, bytes.baseAddress, Int32(bytes.count)) == Int32(bytes.count) else {
                throw CryptoError("BIO_write")
            }
        }
        if !isHandshakeComplete {
            try advanceHandshake()
            if !isHandshakeComplete { return }
        }
        while true {
            let count = SSL_read(ssl, readBuffer.baseAddress, Int32(readBuffer.count))
            if count > 0 {
                deliver(UnsafeRawBufferPointer(rebasing: readBuffer[0..<Int(count)]))
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
            if error == SSL_ERROR_ZERO_RETURN { return }
            throw CryptoError("SSL_read")
        }
    }

    /// Encrypts plaintext for the peer, holding it until the handshake has completed.
    public func sendPlaintext(_ bytes: UnsafeRawBufferPointer) throws {
        guard isHandshakeComplete else {
            pendingPlaintext.append(contentsOf: bytes)
            return
        }
        try write(bytes)
    }

    /// Queues the close_notify alert that ends the session (once; only after the handshake has completed), to go
    /// out with ``drainCiphertext(_:)`` before the connection's write side is shut. The peer's own close_notify is
    /// not waited for.
    public func shutdown() {
        guard isHandshakeComplete, !shutdownQueued else { return }
        shutdownQueued = true
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    /// Hands out the ciphertext waiting to go to the peer.
    public func drainCiphertext(_ sink: (UnsafeRawBufferPointer) -> Void) {
        while BIO_ctrl_pending(networkOut) > 0 {
            let count = BIO_read(networkOut, readBuffer.baseAddress, Int32(readBuffer.count))
            guard count > 0 else { return }
            sink(UnsafeRawBufferPointer(rebasing: readBuffer[0..<Int(count)]))
        }
    }

    /// The certificate the peer presented, once the handshake is complete: its URI and DNS subject alternative
    /// names, why its chain did not verify against the context's trusted certificates (nil when it did), and its
    /// serial number in hex. Nil when it presented none.
    public var peerCertificate:
        (uris: [String], dnsNames: [String], verificationFailure: String?, serialNumber: String)?
    {
        guard isHandshakeComplete, let certificate = SSL_get0_peer_certificate(ssl) else { return nil }
        var uris: [String] = []
        var dnsNames: [String] = []
        if let names = copenssl_X509_subject_alt_names(certificate) {
            defer { copenssl_general_names_free(names) }
            // Bounded: a certificate naming more than this is not one of ours.
            let count = min(Int(copenssl_general_names_count(names)), 64)
            for index in 0..<count {
                var data: UnsafePointer<UInt8>?
                var length: Int32 = 0
                let type = copenssl_general_name_at(names, Int32(index), &data, &length)
                guard let data, length > 0, length <= 2048 else { continue }
                let value = String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
                if type == copenssl_GEN_URI() { uris.append(value) }
                if type == copenssl_GEN_DNS() { dnsNames.append(value) }
            }
        }
        let result = SSL_get_verify_result(ssl)
        let failure: String? =
            result == Int(X509_V_OK) ? nil : String(cString: X509_verify_cert_error_string(result))
        return (uris, dnsNames, failure, Certificate.serialNumberHex(certificate))
    }

    /// The ALPN protocol both sides agreed on.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    private func advanceHandshake() throws {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            isHandshakeComplete = true
            if !pendingPlaintext.isEmpty {
                let pending = pendingPlaintext
                pendingPlaintext = []
                try pending.withUnsafeBytes { try write($0) }
            }
            return
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
        throw CryptoError("SSL_do_handshake")
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let chunk = min(bytes.count - offset, Int(Int32.max))
            let written = SSL_write(ssl, bytes.baseAddress! + offset, Int32(chunk))
            guard written > 0 else { throw CryptoError("SSL_write") }
            offset += Int(written)
        }
    }
}
