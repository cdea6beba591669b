/// Who a service is, as its certificate says: a SPIFFE ID `spiffe://<trust domain>/<name>` in a URI SAN, or
/// (for certificates that cannot carry one) the DNS SAN `<name>.<trust domain>`.
public struct ServiceIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The trust domain, for example `passkey.internal`.
    public let trustDomain: String
    /// The service's name, for example `gateway`.
    public let name: String

    public init(_ name: String, in trustDomain: String) {
        self.name = name
        self.trustDomain = trustDomain
    }

    /// `spiffe://<trust domain>/<name>`.
    public var spiffeID: String { "spiffe://\(trustDomain)/\(name)" }
    /// `<name>.<trust domain>`, the DNS SAN form.
    public var dnsName: String { "\(name).\(trustDomain)" }
    public var description: String { spiffeID }

    /// The services of this product, each with the name its certificate carries.
    public enum Name {
        public static let gateway = "gateway"
        public static let challengeService = "challenge-service"
        public static let verificationService = "verification-service"
        public static let sessionService = "session-service"
    }
}

/// What a peer's certificate establishes about it, before any method is considered.
public enum PeerIdentification: Sendable, Equatable {
    /// The connection is not TLS: nothing is known (only when plaintext was configured).
    case plaintext
    /// TLS, but the peer presented no certificate.
    case noCertificate
    /// The peer's certificate did not verify against the trusted CAs (another CA, expired, ...). `claimed` is
    /// the identity it names, for the log only.
    case untrusted(claimed: String?, reason: String)
    /// A verified certificate that names no usable identity.
    case anonymous
    /// A verified certificate naming `identity`: a SPIFFE ID, or else a DNS name.
    case identified(String)

    /// Reads a peer's certificate: its first `spiffe://` URI SAN, else its first DNS SAN, is its identity, which
    /// counts only when the chain verified (`verificationFailure` nil).
    public init(uris: [String], dnsNames: [String], verificationFailure: String?) {
        let claimed = uris.first { $0.hasPrefix("spiffe://") } ?? dnsNames.first
        if let verificationFailure {
            self = .untrusted(claimed: claimed, reason: verificationFailure)
        } else if let claimed {
            self = .identified(claimed)
        } else {
            self = .anonymous
        }
    }

    /// The identity for logs: the verified one, the claimed one of an untrusted certificate, or a word.
    public var logValue: String {
        switch self {
        case .plaintext: return "plaintext"
        case .noCertificate: return "none"
        case .untrusted(let claimed, _): return "untrusted:\(claimed ?? "unnamed")"
        case .anonymous: return "anonymous"
        case .identified(let identity): return identity
        }
    }
}
