import Configuration
import Crypto

extension SecretKeyRing {
    /// The ring of `PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE`, which every process that issues one-time codes or keeps
    /// webhook secrets needs, whatever `PASSKEY_SESSION_TOKENS` says; throws a `ConfigurationError` naming the
    /// variable when it is unset or its keys do not make a ring.
    public static func required(by configuration: SessionTokenConfiguration) throws -> SecretKeyRing {
        guard let ring = SecretKeyRing(keys: try configuration.requireKeyEncryptionKeys()) else {
            throw ConfigurationError(
                variable: "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE", problem: "must hold different keys of 32 bytes")
        }
        return ring
    }
}
