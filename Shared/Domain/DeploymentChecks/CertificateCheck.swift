/// The server's TLS certificate as the platforms see it: a chain to a trusted root, a name matching the host, and
/// time left before it expires (a certificate that lapses takes every association file down with it).
public struct ServedCertificate: Sendable, Equatable {
    /// Why the TLS handshake refused the certificate, in the transport's words; nil when it was accepted.
    public var rejection: String?
    /// The leaf's `notAfter`, seconds since 1970, when it could be read.
    public var notAfterUnixSeconds: Int64?

    public init(rejection: String? = nil, notAfterUnixSeconds: Int64? = nil) {
        self.rejection = rejection
        self.notAfterUnixSeconds = notAfterUnixSeconds
    }
}

enum CertificateCheck {
    static let name = "tls"
    /// Less time left than this is a warning.
    static let renewalWindow: Int64 = 14 * 86_400

    /// `connectionFailure` is why no file could be fetched at all, when none could.
    static func findings(_ certificate: ServedCertificate, host: String, connectionFailure: String?, now: Int64)
        -> [DeploymentFinding]
    {
        if certificate.rejection == nil, let connectionFailure {
            return [
                .failure(
                    name, .unreachable,
                    "no HTTPS connection to \(host) could be made: \(WellKnownFile.clip(connectionFailure, 200))",
                    fix:
                        "check the name resolves to the deployment, port 443 is open to the internet and TLS is served there"
                )
            ]
        }
        if let rejection = certificate.rejection {
            return [
                .failure(
                    name, .certificateRejected,
                    "the certificate of \(host) is refused: \(WellKnownFile.clip(rejection, 200)); devices fetch nothing from it",
                    fix:
                        "serve a certificate for \(host) from a publicly trusted CA, with its intermediate certificates, not expired"
                )
            ]
        }
        guard let notAfter = certificate.notAfterUnixSeconds else {
            return [.passed(name, "the certificate of \(host) is trusted and names it")]
        }
        let days = (notAfter - now) / 86_400
        if notAfter - now < renewalWindow {
            return [
                .warning(
                    name, .certificateExpiresSoon, "the certificate of \(host) expires in \(max(days, 0)) days",
                    fix: "renew it (check the ACME client or cert-manager)")
            ]
        }
        return [.passed(name, "the certificate of \(host) is trusted, names it and has \(days) days left")]
    }
}
