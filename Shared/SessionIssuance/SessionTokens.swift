import Encoding
import Crypto

/// Bearer tokens: 256 random bits, sent as base64url; only their SHA-256 digest is ever stored.
public enum SessionTokens {
    static let byteCount = 32

    /// A new token and the digest to store for it.
    public static func issue(random: any RandomSource) -> (token: String, digest: [UInt8]) {
        let bytes = random.bytes(count: byteCount)
        return (Base64URL.encode(bytes), sha256(bytes))
    }

    /// The digest of a presented token, or nil when it cannot be one of ours (so no lookup is made).
    public static func digest(of token: String) -> [UInt8]? {
        guard token.utf8.count == 43, let bytes = Base64URL.decode(token), bytes.count == byteCount else { return nil }
        return sha256(bytes)
    }
}
