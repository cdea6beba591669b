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

    /// The server side of mutual TLS 1.3 with `credentials`, reloaded as their files change: every client is
    /// asked for a certificate, whose names and verification result reach the application
    /// (``NetworkIO/ChannelSecurity/peerCertificate``) to authorize each call.
    public static func mutualServerSecurity(_ credentials: ReloadingTLSCredentials)
        -> @Sendable () throws -> ChannelSecurity
    {
        { TLSChannelSecurity(try TLSConnection(context: credentials.server)) }
    }

    /// The client side of mutual TLS 1.3 with `credentials`: the server's chain must verify against the CA
    /// bundle, and `acceptServer` must accept the certificate it presented (a service identity, in place of a
    /// host name), or the connection fails.
    public static func mutualClientSecurity(
        _ credentials: ReloadingTLSCredentials, acceptServer: @escaping @Sendable (PeerCertificate) -> Bool
    ) -> @Sendable (SocketAddress) throws -> ChannelSecurity {
        { _ in TLSChannelSecurity(try TLSConnection(context: credentials.client), acceptPeer: acceptServer) }
    }
}

/// Adapts a ``Crypto/TLSConnection`` to the channel's security interface.
final class TLSChannelSecurity: ChannelSecurity {
    private let connection: TLSConnection
    private let acceptPeer: (@Sendable (PeerCertificate) -> Bool)?
    /// True once the server's certificate was accepted (from the start when nothing is checked).
    private var peerAccepted: Bool

    init(_ connection: TLSConnection, acceptPeer: (@Sendable (PeerCertificate) -> Bool)? = nil) {
        self.connection = connection
        self.acceptPeer = acceptPeer
        self.peerAccepted = acceptPeer == nil
    }

    func startHandshake() throws { try connection.startHandshake() }

    func receiveCiphertext(_ bytes: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) throws {
        var refusal: TLSPeerRefused?
        try connection.receiveCiphertext(bytes) { plaintext in
            // Nothing is handed on before the peer is accepted; application data can arrive in the same read as
            // the end of the handshake, so the check runs here too.
            if !peerAccepted, refusal == nil { refusal = checkPeer() }
            if peerAccepted { deliver(plaintext) }
        }
        if !peerAccepted, refusal == nil, connection.isHandshakeComplete { refusal = checkPeer() }
        if let refusal { throw refusal }
    }

    private func checkPeer() -> TLSPeerRefused? {
        guard let acceptPeer else { return nil }
        let certificate = peerCertificate
        guard let certificate, acceptPeer(certificate) else { return TLSPeerRefused(certificate: certificate) }
        peerAccepted = true
        return nil
    }

    func sendPlaintext(_ bytes: UnsafeRawBufferPointer) throws { try connection.sendPlaintext(bytes) }

    func drainCiphertext(_ sink: (UnsafeRawBufferPointer) -> Void) { connection.drainCiphertext(sink) }

    func shutdown() { connection.shutdown() }

    var negotiatedProtocol: String? { connection.negotiatedProtocol }

    var peerCertificate: PeerCertificate? {
        connection.peerCertificate.map {
            PeerCertificate(
                uris: $0.uris, dnsNames: $0.dnsNames, verificationFailure: $0.verificationFailure,
                serialNumber: $0.serialNumber)
        }
    }
}

/// The server a client reached presented a certificate that is not the one it expected.
struct TLSPeerRefused: Error, CustomStringConvertible {
    let certificate: PeerCertificate?

    var description: String {
        guard let certificate else { return "the server presented no certificate" }
        return
            "the server's certificate (\((certificate.uris + certificate.dnsNames).joined(separator: ", "))) is not the expected service"
    }
}
