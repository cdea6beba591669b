import Crypto
import Domain
import Encoding
import Foundation

/// Refresh tokens: `prt_` then base64url of the session's ID (16 bytes), the token's generation (4 bytes, big
/// endian) and 256 random bits; 74 characters. Only the SHA-256 of the random part is stored.
///
/// A token is single-use: refreshing replaces it with the next generation. The successor is also kept sealed
/// (AES-256-GCM) under a key derived from the predecessor's secret, so that a repeat of the predecessor within the
/// reuse window gets the same successor, while the database alone cannot produce any usable token.
public enum RefreshTokens {
    /// What every refresh token starts with, so that one is told apart from an access token at a glance.
    public static let prefix = "prt_"
    static let secretByteCount = 32
    static let encodedLength = 4 + 70

    /// A presented token, decoded.
    public struct Presented: Sendable, Equatable {
        /// The session it names.
        public let sessionID: SessionID
        /// Its generation: 0 for the token issued at sign-in, one more at each refresh.
        public let generation: UInt32
        /// SHA-256 of its secret, to compare with the stored digest.
        public let digest: [UInt8]
        /// The key its successor is sealed under.
        public let successorKey: [UInt8]
    }

    /// A new token of `sessionID`'s `generation`, with the digest to store and the key to seal its successor under.
    public static func issue(for sessionID: SessionID, generation: UInt32, random: any RandomSource)
        -> (token: String, presented: Presented)
    {
        let secret = random.bytes(count: secretByteCount)
        let identifier = withUnsafeBytes(of: sessionID.rawValue.uuid) { Array($0) }
        let counter = withUnsafeBytes(of: generation.bigEndian) { Array($0) }
        let token = prefix + Base64URL.encode(identifier + counter + secret)
        return (token, presented(sessionID: sessionID, generation: generation, secret: secret))
    }

    /// The token's parts, or nil when `token` cannot be a refresh token (wrong prefix, length or encoding).
    public static func parse(_ token: String) -> Presented? {
        guard token.utf8.count == encodedLength, token.hasPrefix(prefix),
            let bytes = Base64URL.decodeUnpadded(token.dropFirst(prefix.count)), bytes.count == 16 + 4 + secretByteCount
        else { return nil }
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        let generation = bytes[16..<20].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return presented(sessionID: SessionID(uuid), generation: generation, secret: Array(bytes[20...]))
    }

    /// Whether a stored digest is the presented one, in time independent of where they differ.
    public static func matches(_ stored: [UInt8], _ presented: [UInt8]) -> Bool {
        constantTimeEquals(stored, presented)
    }

    /// `successor` sealed for the holder of `predecessor`, bound to its session and generation.
    public static func sealSuccessor(_ successor: String, for predecessor: Presented) throws -> [UInt8] {
        try SealedBox.seal(
            Array(successor.utf8), key: predecessor.successorKey, additionalData: binding(predecessor))
    }

    /// The successor sealed for `predecessor`, or nil when the box is not one (the wrong token, a changed box).
    public static func openSuccessor(_ box: [UInt8], for predecessor: Presented) -> String? {
        guard let bytes = SealedBox.open(box, key: predecessor.successorKey, additionalData: binding(predecessor)),
            let token = String(validating: bytes, as: UTF8.self), parse(token) != nil
        else { return nil }
        return token
    }

    private static func presented(sessionID: SessionID, generation: UInt32, secret: [UInt8]) -> Presented {
        Presented(
            sessionID: sessionID, generation: generation, digest: sha256(secret),
            successorKey: sha256(Array("passkey refresh successor".utf8) + secret))
    }

    private static func binding(_ token: Presented) -> [UInt8] {
        Array("\(token.sessionID) \(token.generation)".utf8)
    }
}
