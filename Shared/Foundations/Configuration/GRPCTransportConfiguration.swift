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

    /// Reads and validates the `GRPC_*` variables: nil when none of the three files is set and plaintext is not
    /// asked for, which ``require(_:)`` refuses for the executables that speak gRPC.
    public static func read(_ env: EnvironmentReader) throws -> GRPCTransportConfiguration? {
        let plaintextValue = env.raw("GRPC_PLAINTEXT")?.lowercased()
        guard plaintextValue == nil || plaintextValue == "true" || plaintextValue == "false" else {
            throw ConfigurationError(
                variable: "GRPC_PLAINTEXT", problem: "expected true or false, got \(plaintextValue ?? "")")
        }
        let files = [env.raw("GRPC_TLS_CERTIFICATE"), env.raw("GRPC_TLS_KEY"), env.raw("GRPC_TLS_CA")]
        let trustDomain = env.string("GRPC_TRUST_DOMAIN", default: "passkey.internal")
        guard isValidTrustDomain(trustDomain) else {
            throw ConfigurationError(
                variable: "GRPC_TRUST_DOMAIN",
                problem: "expected a SPIFFE trust domain (lowercase letters, digits, '.', '-', '_'), got \(trustDomain)"
            )
        }
        let reloadInterval = try env.duration("GRPC_TLS_RELOAD_INTERVAL", default: "10s")
        let set = zip(fileVariables, files).filter { $0.1 != nil }.map(\.0)
        switch plaintextValue {
        case "true":
            if let first = set.first {
                throw ConfigurationError(
                    variable: "GRPC_PLAINTEXT", problem: "is true, but \(first) is set: choose mutual TLS or plaintext")
            }
            return .plaintext
        case nil where set.isEmpty:
            return nil
        default:
            if let missing = zip(fileVariables, files).first(where: { $0.1 == nil }) {
                throw ConfigurationError(variable: missing.0, problem: missingProblem)
            }
            return .mutualTLS(
                MutualTLS(
                    certificatePath: files[0]!, keyPath: files[1]!, trustedCAPath: files[2]!,
                    trustDomain: trustDomain, reloadInterval: reloadInterval))
        }
    }

    /// The transport that was read, or the error every executable that speaks gRPC stops with when none was.
    public static func require(_ transport: GRPCTransportConfiguration?) throws -> GRPCTransportConfiguration {
        guard let transport else {
            throw ConfigurationError(variable: "GRPC_TLS_CERTIFICATE", problem: missingProblem)
        }
        return transport
    }

    static let missingProblem =
        "is required: gRPC between the services is mutual TLS (GRPC_TLS_CERTIFICATE, GRPC_TLS_KEY and GRPC_TLS_CA); set GRPC_PLAINTEXT=true to run without it"

    /// A SPIFFE trust domain: 1–255 characters of lowercase letters, digits, `.`, `-` and `_`.
    static func isValidTrustDomain(_ trustDomain: String) -> Bool {
        !trustDomain.isEmpty && trustDomain.utf8.count <= 255
            && trustDomain.utf8.allSatisfy { byte in
                (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2E || byte == 0x2D
                    || byte == 0x5F
            }
    }
}
