/// How the services' gRPC connections are secured (`GRPC_*`): mutual TLS 1.3 by default, with each process's
/// certificate, key and CA bundle; plaintext only when `GRPC_PLAINTEXT=true` says so.
public enum GRPCTransportConfiguration: Sendable, Equatable {
    case plaintext
    case mutualTLS(MutualTLS)

    /// The files and names of mutual TLS.
    public struct MutualTLS: Sendable, Equatable {
        /// This process's certificate chain (PEM), `GRPC_TLS_CERTIFICATE`.
        public var certificatePath: String
        /// Its private key (PEM), `GRPC_TLS_KEY`.
        public var keyPath: String
        /// The CA bundle peers' certificates must chain to (PEM), `GRPC_TLS_CA`.
        public var trustedCAPath: String
        /// The SPIFFE trust domain of the services' identities, `GRPC_TRUST_DOMAIN`.
        public var trustDomain: String
        /// Seconds between checks of the three files for a rotation, `GRPC_TLS_RELOAD_INTERVAL`.
        public var reloadInterval: Double
    }

    /// The variables naming the three files, in the order they are reported.
    public static let fileVariables = ["GRPC_TLS_CERTIFICATE", "GRPC_TLS_KEY", "GRPC_TLS_CA"]

    /// Reads the `GRPC_*` variables: nil when none of the three files is set and plaintext is not asked for,
    /// which ``ServerConfiguration/requireGRPCTransport()`` refuses for the executables that speak gRPC.
    static func read(_ env: EnvironmentReader) throws -> GRPCTransportConfiguration? {
        if files(env).allSatisfy({ $0 == nil }) && env.raw("GRPC_PLAINTEXT") == nil {
            // Still validate what is set.
            _ = try env.duration("GRPC_TLS_RELOAD_INTERVAL", default: "10s")
            let trustDomain = env.string("GRPC_TRUST_DOMAIN", default: "passkey.internal")
            guard isValidTrustDomain(trustDomain) else { throw invalidTrustDomain(trustDomain) }
            return nil
        }
        return try GRPCTransportConfiguration(env)
    }

    /// The values of ``fileVariables``, in order.
    static func files(_ env: EnvironmentReader) -> [String?] {
        [env.raw("GRPC_TLS_CERTIFICATE"), env.raw("GRPC_TLS_KEY"), env.raw("GRPC_TLS_CA")]
    }

    static let missingProblem =
        "is required: gRPC between the services is mutual TLS (GRPC_TLS_CERTIFICATE, GRPC_TLS_KEY and GRPC_TLS_CA); set GRPC_PLAINTEXT=true to run without it"

    static func invalidTrustDomain(_ trustDomain: String) -> ConfigurationError {
        ConfigurationError(
            variable: "GRPC_TRUST_DOMAIN",
            problem: "expected a SPIFFE trust domain (lowercase letters, digits, '.', '-', '_'), got \(trustDomain)")
    }

    init(_ env: EnvironmentReader) throws {
        let plaintextValue = env.raw("GRPC_PLAINTEXT")?.lowercased() ?? "false"
        guard plaintextValue == "true" || plaintextValue == "false" else {
            throw ConfigurationError(variable: "GRPC_PLAINTEXT", problem: "expected true or false, got \(plaintextValue)")
        }
        let files = Self.files(env)
        let trustDomain = env.string("GRPC_TRUST_DOMAIN", default: "passkey.internal")
        guard Self.isValidTrustDomain(trustDomain) else { throw Self.invalidTrustDomain(trustDomain) }
        let reloadInterval = try env.duration("GRPC_TLS_RELOAD_INTERVAL", default: "10s")
        if plaintextValue == "true" {
            if let set = zip(Self.fileVariables, files).first(where: { $0.1 != nil }) {
                throw ConfigurationError(
                    variable: "GRPC_PLAINTEXT", problem: "is true, but \(set.0) is set: choose mutual TLS or plaintext")
            }
            self = .plaintext
            return
        }
        if let missing = zip(Self.fileVariables, files).first(where: { $0.1 == nil }) {
            throw ConfigurationError(variable: missing.0, problem: Self.missingProblem)
        }
        self = .mutualTLS(
            MutualTLS(
                certificatePath: files[0]!, keyPath: files[1]!, trustedCAPath: files[2]!, trustDomain: trustDomain,
                reloadInterval: reloadInterval))
    }

    /// A SPIFFE trust domain: 1–255 characters of lowercase letters, digits, `.`, `-` and `_`.
    static func isValidTrustDomain(_ trustDomain: String) -> Bool {
        !trustDomain.isEmpty && trustDomain.utf8.count <= 255
            && trustDomain.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2E || byte == 0x2D
                    || byte == 0x5F
            }
    }
}
