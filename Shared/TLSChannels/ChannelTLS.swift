import Crypto
import NetworkIO

/// TLS for the event loop's channels (gRPC, and the gateway's HTTP/1.1 and HTTP/2): ALPN on both sides, optional
/// client certificates (mTLS), over ``Crypto/TLSContext`` and ``Crypto/TLSConnection``.
public enum ChannelTLS {
    /// The security factory for a server presenting a certificate chain and key; with `clientCAPath`, clients
    /// must present a certificate issued by that CA.
    public static func serverSecurity(
        certificateChainPath: String, privateKeyPath: String, clientCAPath: String? = nil,
        applicationProtocols: [String] = ["h2"]
    ) throws -> @Sendable () throws -> ChannelSecurity {
        let context = try TLSContext.server(
            certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath, clientCAPath: clientCAPath,
            applicationProtocols: applicationProtocols)
        return { TLSChannelSecurity(try TLSConnection(context: context)) }
    }

    /// The security factory for a client trusting `trustedCAPath`, optionally presenting a client certificate.
    /// The server's certificate must name `serverName`, or the address's host when nil.
    public static func clientSecurity(
        trustedCAPath: String?, certificateChainPath: String? = nil, privateKeyPath: String? = nil,
        serverName: String? = nil
    ) throws -> @Sendable (SocketAddress) throws -> ChannelSecurity {
        let context = try TLSContext.client(
            trustedCAPath: trustedCAPath, certificateChainPath: certificateChainPath, privateKeyPath: privateKeyPath)
        return { address in
            TLSChannelSecurity(try TLSConnection(context: context, serverName: serverName ?? address.host))
        }
    }
}

/// Adapts a ``Crypto/TLSConnection`` to the channel's security interface.
final class TLSChannelSecurity: ChannelSecurity {
    private let connection: TLSConnection

    init(_ connection: TLSConnection) { self.connection = connection }

    func startHandshake() throws { try connection.startHandshake() }

    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) throws {
        try connection.receiveCiphertext(bytes, deliver: deliver)
    }

    func sendPlaintext(_ bytes: UnsafeRawBufferPointer) throws { try connection.sendPlaintext(bytes) }

    func drainCiphertext(_ sink: (UnsafeRawBufferPointer) -> Void) { connection.drainCiphertext(sink) }

    var negotiatedProtocol: String? { connection.negotiatedProtocol }
}
