/// Which callers may call which methods of one service: the service declares, per method path, the services
/// allowed to call it; a few paths (health) are open to every caller. Anything not declared is refused, so a
/// method added without a rule cannot be called.
public struct CallerPolicy: Sendable {
    /// A method and the services that may call it.
    public struct Rule: Sendable {
        public let paths: [String]
        public let callers: Set<String>

        /// `paths` may be called by the services named in `callers` (``ServiceIdentity/Name``).
        public init(_ paths: [String], callers: Set<String>) {
            self.paths = paths
            self.callers = callers
        }
    }

    /// What to do with one call.
    public enum Decision: Sendable, Equatable {
        case allow
        /// The caller is not known: no certificate, or one that did not verify (gRPC UNAUTHENTICATED).
        case unauthenticated(reason: String)
        /// The caller is known but may not call this method (gRPC PERMISSION_DENIED).
        case permissionDenied(reason: String)
    }

    /// The trust domain the identities must be in.
    public let trustDomain: String
    private let allowed: [String: Set<String>]
    private let openPaths: Set<String>

    /// A policy for identities in `trustDomain`: `rules` per method, and `openPaths` that anyone may call.
    public init(trustDomain: String, rules: [Rule], openPaths: Set<String> = []) {
        self.trustDomain = trustDomain
        var allowed: [String: Set<String>] = [:]
        for rule in rules {
            for path in rule.paths {
                allowed[path, default: []].formUnion(
                    rule.callers.flatMap { name in
                        let identity = ServiceIdentity(name, in: trustDomain)
                        return [identity.spiffeID, identity.dnsName]
                    })
            }
        }
        self.allowed = allowed
        self.openPaths = openPaths
    }

    /// The paths that have a rule or are open.
    public var coveredPaths: Set<String> { openPaths.union(allowed.keys) }

    /// Decides a call of `path` from `peer`. A plaintext peer is allowed: plaintext is only ever configured on
    /// purpose, and then nothing can be known of a caller.
    public func decide(path: String, peer: PeerIdentification) -> Decision {
        if openPaths.contains(path) { return .allow }
        switch peer {
        case .plaintext:
            return .allow
        case .noCertificate:
            return .unauthenticated(reason: "a client certificate is required")
        case .untrusted(_, let reason):
            return .unauthenticated(reason: "the client certificate is not trusted: \(reason)")
        case .anonymous:
            return .unauthenticated(reason: "the client certificate names no identity")
        case .identified(let identity):
            guard let callers = allowed[path] else {
                return .permissionDenied(reason: "no caller may call \(path)")
            }
            return callers.contains(identity)
                ? .allow : .permissionDenied(reason: "\(identity) may not call \(path)")
        }
    }

    /// Whether `peer` is the service `expected` (a client checking the server it reached).
    public static func peer(_ peer: PeerIdentification, is expected: ServiceIdentity) -> Bool {
        guard case .identified(let identity) = peer else { return false }
        return identity == expected.spiffeID || identity == expected.dnsName
    }
}
