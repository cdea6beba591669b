import Crypto
import Encoding
import Foundation

/// An endpoint's signing secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. It is
/// shown once, when the endpoint is registered; the receiver verifies each delivery's signature with it.
public struct WebhookSecret: Sendable, Equatable {
    public static let prefix = "whsec_"
    public static let byteCount = 32

    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(random: any RandomSource) { bytes = random.bytes(count: Self.byteCount) }

    /// `whsec_` and the standard base64 of the key, as receivers' libraries take it.
    public var text: String { Self.prefix + Base64URL.encodeStandard(bytes) }

    /// The secret sealed under the ring's current webhook key, bound to its endpoint: what the database keeps.
    public func sealed(for endpointID: UUID, with keys: SecretKeyRing) throws(CryptoError) -> SealedSecret {
        try keys.seal(bytes, for: .webhookSecret, context: Self.context(endpointID))
    }

    /// The secret of `endpointID` from its sealed form; nil when the ring does not hold its key, or it was sealed for
    /// another endpoint, or changed.
    public init?(opening sealed: SealedSecret, for endpointID: UUID, with keys: SecretKeyRing) {
        guard let bytes = keys.open(sealed, for: .webhookSecret, context: Self.context(endpointID)),
            bytes.count == Self.byteCount
        else { return nil }
        self.bytes = bytes
    }

    static func context(_ endpointID: UUID) -> [UInt8] { Array(endpointID.lowercaseText.utf8) }
}

/// An endpoint's signing secret as the database keeps it.
public enum StoredWebhookSecret: Sendable, Equatable {
    /// Sealed under a key of the secret key ring (``WebhookSecret/sealed(for:with:)``): the only form written.
    case sealed(SealedSecret)
    /// In clear: an endpoint registered before secrets were sealed (migration 0018), until session-service seals
    /// it (``WebhookSecretSealing``), which it does as it starts.
    case clear(WebhookSecret)

    /// The secret itself; nil when it is sealed under a key `keys` does not hold, or does not open.
    public func open(for endpointID: UUID, with keys: SecretKeyRing) -> WebhookSecret? {
        switch self {
        case .clear(let secret): return secret
        case .sealed(let sealed): return WebhookSecret(opening: sealed, for: endpointID, with: keys)
        }
    }

    /// The key it is sealed under; nil in clear.
    public var keyID: String? {
        if case .sealed(let sealed) = self { return sealed.keyID }
        return nil
    }
}

/// Standard Webhooks signatures (https://www.standardwebhooks.com): the receiver recomputes HMAC-SHA256 over
/// `id.timestamp.body` with the endpoint's secret and compares it with `webhook-signature`, and refuses a timestamp
/// too far from its clock, so a captured delivery cannot be replayed later.
public enum WebhookSignature {
    /// The three headers of one delivery attempt: `webhook-id` (the same on every attempt, for the receiver to drop
    /// repeats), `webhook-timestamp` (seconds since 1970, this attempt's) and `webhook-signature` (`v1,` and the
    /// base64 HMAC).
    public static func headers(
        messageID: String, timestamp: Int64, payload: [UInt8], secret: WebhookSecret
    ) -> [(name: String, value: String)] {
        [
            ("webhook-id", messageID), ("webhook-timestamp", String(timestamp)),
            (
                "webhook-signature",
                signature(messageID: messageID, timestamp: timestamp, payload: payload, secret: secret)
            ),
        ]
    }

    public static func signature(messageID: String, timestamp: Int64, payload: [UInt8], secret: WebhookSecret) -> String
    {
        let signed = Array("\(messageID).\(timestamp).".utf8) + payload
        return "v1," + Base64URL.encodeStandard(hmacSHA256(key: secret.bytes, data: signed))
    }
}
