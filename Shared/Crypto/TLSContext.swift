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

    private init(role: Role) throws {
        guard let method = role == .server ? TLS_server_method() : TLS_client_method(),
            let context = SSL_CTX_new(method)
        else { throw CryptoError("SSL_CTX_new") }
        self.context = context
        self.role = role
        _ = copenssl_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION)
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
        let tls = try TLSContext(role: .server)
        try tls.loadIdentity(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        if let clientCAPath {
            guard SSL_CTX_load_verify_locations(tls.context, clientCAPath, nil) == 1 else {
                throw CryptoError("SSL_CTX_load_verify_locations")
            }
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
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
        trustedCAPath: String?, certificateChainPath: String? = nil, privateKeyPath: String? = nil
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .client)
        if let trustedCAPath {
            guard SSL_CTX_load_verify_locations(tls.context, trustedCAPath, nil) == 1 else {
                throw CryptoError("SSL_CTX_load_verify_locations")
            }
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
            throw CryptoError("SSL_CTX_use_certificate_chain_file")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKeyPath, SSL_FILETYPE_PEM) == 1 else {
            throw CryptoError("SSL_CTX_use_PrivateKey_file")
        }
        guard SSL_CTX_check_private_key(context) == 1 else { throw CryptoError("SSL_CTX_check_private_key") }
    }
}
