import Crypto
import Domain
import Encoding
import Foundation

/// Bearer tokens: the session's ID followed by 256 random bits, sent as base64url (64 characters); only the
/// SHA-256 of the random part is stored.
///
/// The ID names the row, so validating a token is a primary-key lookup followed by a constant-time comparison of
/// digests, and issuing one inserts into no index keyed by random bytes: session IDs are time-ordered (UUIDv7), so
/// every sign-in's insert lands at the right edge of the primary key, however many sessions are stored.
public enum SessionTokens {
    static let secretByteCount = 32
    static let tokenByteCount = 16 + secretByteCount
    static let tokenLength = 64

    /// A new token for the session `id` and the digest to store for it.
    public static func issue(for id: SessionID, random: any RandomSource) -> (token: String, digest: [UInt8]) {
        let secret = random.bytes(count: secretByteCount)
        let identifier = withUnsafeBytes(of: id.rawValue.uuid) { Array($0) }
        return (Base64URL.encode(identifier + secret), sha256(secret))
    }

    /// The session a presented token names and the digest its row must hold, or nil when the token cannot be one
    /// of ours (so no lookup is made).
    public static func parse(_ token: String) -> (id: SessionID, digest: [UInt8])? {
        guard token.utf8.count == tokenLength, let bytes = Base64URL.decode(token), bytes.count == tokenByteCount
        else { return nil }
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return (SessionID(uuid), sha256(Array(bytes[16...])))
    }

    /// Whether a stored digest is the presented one, in time independent of where they differ.
    public static func matches(_ stored: [UInt8], _ presented: [UInt8]) -> Bool {
        constantTimeEquals(stored, presented)
    }
}
