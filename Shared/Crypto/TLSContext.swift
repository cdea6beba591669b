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
    }

    /// A server context presenting `certificateChainPath` (PEM) with `privateKeyPath`; when `clientCAPath` is
    /// given, clients must present a certificate that chains to it. Only ALPN `h2` is accepted.
    public static func server(
        certificateChainPath: String, privateKeyPath: String, clientCAPath: String? = nil
    ) throws -> TLSContext {
        let tls = try TLSContext(role: .server)
        try tls.loadIdentity(certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        if let clientCAPath {
            guard SSL_CTX_load_verify_locations(tls.context, clientCAPath, nil) == 1 else {
                throw CryptoError("SSL_CTX_load_verify_locations")
            }
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
        SSL_CTX_set_alpn_select_cb(
            tls.context,
            { _, out, outLength, offered, offeredLength, _ in
                // The offered list is length-prefixed protocol names; choose h2 or refuse the handshake.
                guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                var index = 0
                let count = Int(offeredLength)
                while index < count {
                    let length = Int(offered[index])
                    if index + 1 + length > count { break }
                    if length == 2 && offered[index + 1] == UInt8(ascii: "h") && offered[index + 2] == UInt8(ascii: "2")
                    {
                        out.pointee = offered + index + 1
                        outLength.pointee = 2
                        return SSL_TLSEXT_ERR_OK
                    }
                    index += 1 + length
                }
                return SSL_TLSEXT_ERR_ALERT_FATAL
            }, nil)
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
