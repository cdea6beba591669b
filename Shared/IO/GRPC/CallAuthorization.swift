import NetworkIO

/// The transport facts about a call's peer that authorization may use.
public struct GRPCCallPeer: Sendable {
    /// The peer's address.
    public let address: String
    /// Whether the connection is TLS.
    public let isSecure: Bool
    /// The certificate the peer presented over TLS, if any.
    public let certificate: PeerCertificate?

    public init(address: String, isSecure: Bool, certificate: PeerCertificate?) {
        self.address = address
        self.isSecure = isSecure
        self.certificate = certificate
    }
}

/// Decides, before a call's handler runs (before its request is even read), whether the peer may make it.
/// Called on the connection's event loop, once per call: it must be quick and must not block.
public protocol GRPCCallAuthorizer: Sendable {
    /// The status that refuses a call of `path` from `peer` (UNAUTHENTICATED, PERMISSION_DENIED), or nil to let
    /// it run.
    func refusal(path: String, peer: GRPCCallPeer) -> RPCError?
}
