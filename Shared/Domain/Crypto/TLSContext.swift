import COpenSSL

/// A TLS 1.2+ configuration (an `SSL_CTX`) for one side: certificates, trust, ALPN `h2`, and for a server
/// optional client-certificate verification (mTLS). Immutable once made, so it may be shared across threads
/// (OpenSSL allows `SSL_new` on one context from many threads); that is why the `@unchecked Sendable` holds.
public final class TLSContext: @unchecked Sendable {
    /// Which side of a connection the context is for.
    public enum Role: Sendable { case server, client }

    let context: OpaquePointer
    /// The side this context serves.
    public let role: Role
    /// A server's ALPN preference: a flag byte (1 when a client offering none of the protocols may continue
    /// without ALPN), the protocols in wire format, and a zero byte. Owned by the context; the select callback
    /// reads it.
    private var alpnPreference: UnsafeMutableBufferPointer<UInt8>?

    /// The oldest protocol version a context accepts.
    public enum MinimumVersion: Sendable {
        case tls12, tls13

        var openSSLValue: Int32 { self == .tls12 ? TLS1_2_VERSION : TLS1_3_VERSION }
    }

    /// What a server asks of a client's certificate.
    public enum ClientCertificates: Sendable {
        /// None is asked for.
        case none
        /// One is required and must chain to the CA bundle at the path, or the handshake fails.
        case require(trustedCAPath: String)
        /// One is asked for and checked against the CA bundle at the path, but the handshake completes whatever
        /// the result: ``TLSConnection/peerCertificate`` tells the application, which refuses what it must with
        /// an error of its protocol (a gRPC status) instead of a bare handshake failure.
        case verifyAndRecord(trustedCAPath: String)
    }

    private init(role: Role, minimumVersion: MinimumVersion) throws {
        guard let method = role == .server ? TLS_server_method() : TLS_client_method(),
            let context = SSL_CTX_new(method)
        else { throw CryptoError("SSL_CTX_new") }
        self.context = context
        self.role = role
        _ = copenssl_SSL_CTX_set_min_proto_version(context, minimumVersion.openSSLValue)
    }

    deinit {
        SSL_CTX_free(context)
        alpnPreference?.deallocate()
    }

    /// A server context presenting `certificateChainPath` (PEM) with `privateKeyPath`; when `clientCAPath` is
    /// given, clients must present a certificate that chains to it. ALPN picks the first of `applicationProtocols`
    /// the client offers; a client offering none of them is refused, unless `http/1.1` is among them, in which case
    /// the connection continues without ALPN (HTTP/1.1).
    public static func server(
        certificateChainPath: String, privateKeyPath: String, clientCAPath: String? = nil,
        applicationProtocols: [String] = ["h2"]
    ) throws -> TLSContext {
        try server(
            certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath,
            clientCertificates: clientCAPath.map { .require(trustedCAPath: $0) } ?? .none,
            applicationProtocols: applicationProtocols)
    }

    /// A server context presenting `certificateChainPath` (PEM) with `privateKeyPath`, asking clients for
    /// certificates as `clientCertificates` says. Failures name the file that could not be used
    /// (``TLSSetupError``).
    public static func server(
        certificateChainPath: String, privateKeyPath: String, clientCertificates: ClientCertificates,
        minimumVersion: MinimumVersion = .tls12, applicationProtocols: [String] = ["h2"]
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .server, minimumVersion: minimumVersion)
        try tls.loadIdentity(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        switch clientCertificates {
        case .none:
            break
        case .require(let path):
            try tls.loadTrust(path)
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        case .verifyAndRecord(let path):
            try tls.loadTrust(path)
            copenssl_SSL_CTX_verify_peer_recording(tls.context)
        }
        var preference: [UInt8] = [applicationProtocols.contains("http/1.1") ? 1 : 0]
        for name in applicationProtocols {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count < 256 else { throw CryptoError("ALPN protocol name") }
            preference.append(UInt8(bytes.count))
            preference.append(contentsOf: bytes)
        }
        preference.append(0)
        let stored = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: preference.count)
        _ = stored.initialize(from: preference)
        tls.alpnPreference = stored
        SSL_CTX_set_alpn_select_cb(
            tls.context,
            { _, out, outLength, offered, offeredLength, argument in
                // `argument` is the preference buffer: the flag byte, then length-prefixed names. The offered list
                // is length-prefixed names too; choose our first protocol that the client offers.
                guard let offered, let out, let outLength, let argument else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                let ours = argument.assumingMemoryBound(to: UInt8.self)
                let allowsNone = ours[0] == 1
                var ourIndex = 1
                // Names are non-empty, so the zero length byte at the end of the buffer ends the walk.
                while true {
                    let length = Int(ours[ourIndex])
                    if length == 0 { break }
                    var index = 0
                    let count = Int(offeredLength)
                    while index < count {
                        let offeredLength = Int(offered[index])
                        if index + 1 + offeredLength > count { break }
                        if offeredLength == length
                            && (0..<length).allSatisfy({ offered[index + 1 + $0] == ours[ourIndex + 1 + $0] })
                        {
                            out.pointee = offered + index + 1
                            outLength.pointee = UInt8(length)
                            return SSL_TLSEXT_ERR_OK
                        }
                        index += 1 + offeredLength
                    }
                    ourIndex += 1 + length
                }
                return allowsNone ? SSL_TLSEXT_ERR_NOACK : SSL_TLSEXT_ERR_ALERT_FATAL
            }, UnsafeMutableRawPointer(stored.baseAddress))
        return tls
    }

    /// A client context trusting `trustedCAPath` (PEM; the system store when nil), offering ALPN `h2`, and
    /// presenting a client certificate when both paths are given.
    public static func client(
        trustedCAPath: String?, certificateChainPath: String? = nil, privateKeyPath: String? = nil,
        minimumVersion: MinimumVersion = .tls12
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .client, minimumVersion: minimumVersion)
        if let trustedCAPath {
            try tls.loadTrust(trustedCAPath)
        } else {
            SSL_CTX_set_default_verify_paths(tls.context)
        }
        SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, nil)
        if let certificateChainPath, let privateKeyPath {
            try tls.loadIdentity(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        }
        let protocols: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        guard SSL_CTX_set_alpn_protos(tls.context, protocols, UInt32(protocols.count)) == 0 else {
            throw CryptoError("SSL_CTX_set_alpn_protos")
        }
        return tls
    }

    private func loadIdentity(certificateChainPath: String, privateKeyPath: String) throws {
        guard SSL_CTX_use_certificate_chain_file(context, certificateChainPath) == 1 else {
            throw TLSSetupError(
                .certificateChain, path: certificateChainPath,
                CryptoError("SSL_CTX_use_certificate_chain_file").description)
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            throw TLSSetupError(
                .privateKey, path: privateKeyPath, CryptoError("SSL_CTX_use_PrivateKey_file").description)
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            _ = CryptoError.drainErrorQueue()
            throw TLSSetupError(
                .privateKey, path: privateKeyPath, "the key does not match the certificate \(certificateChainPath)")
        }
    }

    private func loadTrust(_ path: String) throws {
        guard SSL_CTX_load_verify_locations(context, path, nil) == 1 else {
            throw TLSSetupError(
                .trustedCertificates, path: path, CryptoError("SSL_CTX_load_verify_locations").description)
        }
    }
}

/// A TLS file that could not be used: which one, its path and why.
public struct TLSSetupError: Error, CustomStringConvertible, Sendable {
    /// The role of a file in a TLS configuration.
    public enum File: Sendable {
        case certificateChain, privateKey, trustedCertificates
    }

    public let file: File
    public let path: String
    public let reason: String

    public init(_ file: File, path: String, _ reason: String) {
        self.file = file
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
