import GRPC
import NetworkIO
import Observability
import ServiceIdentity

/// Enforces a service's ``ServiceIdentity/CallerPolicy`` on every call: a refused call ends with UNAUTHENTICATED
/// or PERMISSION_DENIED before its request is read, is logged with the peer's identity (at most one line per peer
/// and reason a second) and is counted in `grpc_server_refused_calls_total`.
public struct ServiceCallAuthorizer: GRPCCallAuthorizer {
    private let policy: CallerPolicy
    private let service: String
    private let logger: Logger
    private let metrics: MetricsRegistry
    private let throttle = LogThrottle(interval: 1)

    public init(policy: CallerPolicy, service: String, logger: Logger, metrics: MetricsRegistry) {
        self.policy = policy
        self.service = service
        self.logger = logger
        self.metrics = metrics
    }

    public func refusal(path: String, peer: GRPCCallPeer) -> RPCError? {
        let identification = Self.identify(peer)
        let error: RPCError
        let reason: String
        switch policy.decide(path: path, peer: identification) {
        case .allow:
            return nil
        case .unauthenticated(let detail):
            error = RPCError(code: .unauthenticated, message: detail)
            reason = Self.reasonLabel(identification)
        case .permissionDenied(let detail):
            error = RPCError(code: .permissionDenied, message: detail)
            reason = "not_allowed"
        }
        metrics.increment(
            "grpc_server_refused_calls_total", help: "gRPC calls refused by the caller policy, before they ran.",
            labels: [
                "service": service, "method": path,
                "code": error.code == .unauthenticated ? "UNAUTHENTICATED" : "PERMISSION_DENIED", "reason": reason,
            ])
        let key = "\(identification.logValue) \(reason)"
        if let suppressed = throttle.admit(key, at: Double(monotonicNanoseconds()) / 1e9) {
            logger.warning(
                "grpc.call_refused",
                [
                    "method": path, "peer": peer.address, "identity": identification.logValue, "reason": reason,
                    "detail": error.message, "suppressed": String(suppressed),
                ])
        }
        return error
    }

    /// What the transport says about the peer.
    public static func identify(_ peer: GRPCCallPeer) -> PeerIdentification {
        guard peer.isSecure else { return .plaintext }
        guard let certificate = peer.certificate else { return .noCertificate }
        return PeerIdentification(certificate)
    }

    static func reasonLabel(_ identification: PeerIdentification) -> String {
        switch identification {
        case .noCertificate: return "no_certificate"
        case .untrusted: return "untrusted_certificate"
        case .anonymous: return "no_identity"
        case .plaintext, .identified: return "not_allowed"
        }
    }
}

extension PeerIdentification {
    /// What a TLS peer's certificate establishes about it.
    init(_ certificate: PeerCertificate) {
        self.init(
            uris: certificate.uris, dnsNames: certificate.dnsNames, verificationFailure: certificate.verificationFailure
        )
    }
}
