import Configuration
import Crypto
import Foundation
import GRPC
import NetworkIO
import Observability
import ServiceIdentity
import TLSChannels

/// How one process secures its gRPC connections, built from `GRPC_*`: mutual TLS 1.3 with its certificate (a
/// SPIFFE ID naming the process), the peers' certificates checked against the CA bundle, and the files watched
/// for a rotation; or plaintext, when configured on purpose (with a warning in the log).
public final class GRPCTransportSecurity: Sendable {
    /// The process's credentials; nil for plaintext.
    public let credentials: ReloadingTLSCredentials?
    /// The trust domain of the services' identities.
    public let trustDomain: String
    private let reloadInterval: Double
    private let logger: Logger

    /// Loads the files of `transport` (the `GRPC_*` variables as read; nil, when none was configured, is refused).
    /// A missing, unreadable or unusable file (a key that does not match its certificate, a CA bundle that does not
    /// parse) throws a ``ConfigurationError`` naming its variable and path.
    public init(transport: GRPCTransportConfiguration?, logger: Logger) throws {
        self.logger = logger
        switch try GRPCTransportConfiguration.require(transport) {
        case .plaintext:
            credentials = nil
            trustDomain = ""
            reloadInterval = 0
            logger.warning(
                "grpc.plaintext",
                [
                    "detail":
                        "GRPC_PLAINTEXT=true: gRPC calls are neither encrypted nor authenticated, and every caller may call every method"
                ])
        case .mutualTLS(let tls):
            let files = MutualTLSFiles(
                certificateChainPath: tls.certificatePath, privateKeyPath: tls.keyPath, trustedCAPath: tls.trustedCAPath
            )
            do {
                credentials = try ReloadingTLSCredentials(files: files)
            } catch let error as TLSSetupError {
                throw Self.configurationError(error)
            }
            trustDomain = tls.trustDomain
            reloadInterval = tls.reloadInterval
            logger.info(
                "grpc.mutual_tls",
                ["trust_domain": tls.trustDomain, "certificate_serial": credentials?.serialNumber ?? ""])
        }
    }

    /// The server side's TLS factory, nil for plaintext.
    public var serverTLS: (@Sendable () throws -> ChannelSecurity)? {
        credentials.map { ChannelTLS.mutualServerSecurity($0) }
    }

    /// The client side's TLS factory for connections to `service` (``ServiceIdentity/Name``): the server must
    /// present that service's identity. Nil for plaintext.
    public func clientTLS(to service: String) -> (@Sendable (SocketAddress) throws -> ChannelSecurity)? {
        guard let credentials else { return nil }
        let expected = ServiceIdentity(service, in: trustDomain)
        return ChannelTLS.mutualClientSecurity(credentials) { certificate in
            CallerPolicy.peer(PeerIdentification(certificate), is: expected)
        }
    }

    /// Checks the files every `GRPC_TLS_RELOAD_INTERVAL` until the task is cancelled, putting changed ones in
    /// force for new connections; a change that cannot be loaded is logged and the last good files stay. The
    /// certificates in force are exported as `grpc_certificate_not_after_seconds{service, certificate}`
    /// (`identity` for the process's own, `trust` for the earliest-expiring CA), for expiry alerts.
    public func watchForRotation(metrics: MetricsRegistry, service: String) async {
        guard let credentials else { return }
        while !Task.isCancelled {
            Self.exportExpiry(credentials.expiry, metrics: metrics, service: service)
            try? await Task.sleep(for: .milliseconds(Int64(reloadInterval * 1000)))
            if Task.isCancelled { return }
            switch credentials.reloadIfChanged() {
            case .unchanged:
                break
            case .reloaded(let serialNumber):
                logger.info("grpc.tls_reloaded", ["certificate_serial": serialNumber])
            case .failed(let error):
                logger.error(
                    "grpc.tls_reload_failed",
                    ["variable": Self.variable(error.file), "file": error.path, "reason": error.reason])
            }
        }
    }

    static func exportExpiry(
        _ expiry: ReloadingTLSCredentials.CertificateExpiry, metrics: MetricsRegistry, service: String
    ) {
        for (certificate, notAfter) in [("identity", expiry.identity), ("trust", expiry.trust)] {
            guard let notAfter else { continue }
            metrics.set(
                "grpc_certificate_not_after_seconds",
                help: "When a gRPC TLS certificate in force expires (seconds since 1970).",
                labels: ["service": service, "certificate": certificate], to: Double(notAfter))
        }
    }

    static func variable(_ file: TLSSetupError.File) -> String {
        switch file {
        case .certificateChain: return "GRPC_TLS_CERTIFICATE"
        case .privateKey: return "GRPC_TLS_KEY"
        case .trustedCertificates: return "GRPC_TLS_CA"
        }
    }

    static func configurationError(_ error: TLSSetupError) -> ConfigurationError {
        ConfigurationError(variable: variable(error.file), problem: "\(error.path): \(error.reason)")
    }
}
