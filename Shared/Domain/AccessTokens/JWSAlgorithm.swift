/// The signature algorithms access tokens are signed with. Only asymmetric ones exist here: no `HS*` and no
/// `none` can be named, issued or accepted.
public enum JWSAlgorithm: String, Sendable, CaseIterable, Hashable {
    /// ECDSA on P-256 with SHA-256; the signature is `r ‖ s`, 32 bytes each (RFC 7518 §3.4). The default.
    case es256 = "ES256"
    /// Ed25519 (RFC 8037).
    case edDSA = "EdDSA"

    /// The algorithm a configuration value names (`ES256`, `EdDSA`, case-insensitive), or nil.
    public init?(configurationValue: String) {
        switch configurationValue.lowercased() {
        case "es256": self = .es256
        case "eddsa", "ed25519": self = .edDSA
        default: return nil
        }
    }

    /// The length of a signature in bytes.
    public var signatureLength: Int { 64 }
}
