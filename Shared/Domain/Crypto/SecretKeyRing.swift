/// HKDF-SHA256 (RFC 5869): `length` bytes (at most 8,160) of key material from the input key `key`, extracted with
/// `salt` and expanded for `info`, which names what the bytes are for.
public func hkdfSHA256(key: [UInt8], salt: [UInt8], info: [UInt8], length: Int) -> [UInt8] {
    precondition((0...255 * 32).contains(length), "HKDF-SHA256 gives at most 8160 bytes")
    let pseudorandomKey = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, data: key)
    var output: [UInt8] = []
    var block: [UInt8] = []
    var counter: UInt8 = 1
    while output.count < length {
        block = hmacSHA256(key: pseudorandomKey, data: block + info + [counter])
        output += block
        counter &+= 1
    }
    return Array(output.prefix(length))
}

/// A secret sealed under one key of a ``SecretKeyRing``: the ID of that key, stored beside the box, and the box
/// (AES-256-GCM, ``SealedBox``).
public struct SealedSecret: Sendable, Hashable {
    /// The ring key the box was sealed under (``SecretKeyRing/keyID(of:)``).
    public let keyID: String
    public let box: [UInt8]

    public init(keyID: String, box: [UInt8]) {
        self.keyID = keyID
        self.box = box
    }
}

/// The keys that keep secrets stored in the database unusable to someone who can only read it: one-time codes
/// waiting in the mail outbox, the digests of one-time codes, webhook signing secrets, access-token signing keys.
///
/// The ring holds the current key, which seals and digests everything new, and any previous keys, which still open
/// and check what was made under them, so that the key can be rotated without a moment in which stored secrets do
/// not open. A ring key is never used as it is: each purpose gets its own key derived from it with HKDF-SHA256,
/// so an AES key never doubles as an HMAC key, nor one purpose's key as another's. Each ring key is known by an ID
/// derived from it the same way (16 hex digits), which is stored with what it sealed and reveals nothing of it.
public struct SecretKeyRing: Sendable {
    /// What a derived key is for.
    public enum Purpose: String, Sendable, CaseIterable {
        /// AES-256-GCM of the one-time code a queued message carries (`email_outbox`).
        case outboxCode = "email-outbox-code"
        /// HMAC-SHA256 of a one-time code with its salt (`email_codes.code_digest`).
        case codeDigest = "email-code-digest"
        /// AES-256-GCM of a webhook endpoint's signing secret (`webhook_endpoints.secret`).
        case webhookSecret = "webhook-secret"
        /// AES-256-GCM of an access-token signing key's private half (`session_signing_keys.private_key_sealed`).
        case signingKey = "signing-key"
    }

    struct Key: Sendable {
        let id: String
        let derived: [Purpose: [UInt8]]
    }

    /// The most keys a ring holds: the current one and a few previous ones while a rotation settles.
    public static let capacity = 8
    static let salt = Array("passkey secret key ring".utf8)

    let keys: [Key]

    /// A ring of `keys` (32 bytes each), the first of which is current; nil when there is none, one has another
    /// length, or two are the same.
    public init?(keys: [[UInt8]]) {
        guard !keys.isEmpty, keys.count <= Self.capacity, keys.allSatisfy({ $0.count == SealedBox.keyLength }) else {
            return nil
        }
        let ring = keys.map { key in
            Key(
                id: Self.keyID(of: key),
                derived: Dictionary(
                    uniqueKeysWithValues: Purpose.allCases.map { purpose in
                        (purpose, hkdfSHA256(key: key, salt: Self.salt, info: Self.label(purpose), length: 32))
                    }))
        }
        guard Set(ring.map(\.id)).count == ring.count else { return nil }
        self.keys = ring
    }

    /// The ID of a ring key: 8 bytes of HKDF-SHA256 output, as 16 hex digits. It names the key in stored rows and
    /// logs; finding the key from it is as hard as inverting HMAC-SHA256.
    public static func keyID(of key: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        let bytes = hkdfSHA256(key: key, salt: salt, info: Array("passkey/key-id/v1".utf8), length: 8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] }, as: UTF8.self)
    }

    /// The ID of the current key, which seals and digests everything new.
    public var currentKeyID: String { keys[0].id }

    /// The IDs of every key, the current one first.
    public var keyIDs: [String] { keys.map(\.id) }

    /// Whether the ring holds the key `keyID` names.
    public func holds(_ keyID: String) -> Bool { keys.contains { $0.id == keyID } }

    /// `plaintext` sealed under the current key's `purpose` key, bound to `context` (the row it belongs to), so
    /// that a box copied to another row, or used for another purpose, does not open.
    public func seal(_ plaintext: [UInt8], for purpose: Purpose, context: [UInt8]) throws(CryptoError) -> SealedSecret {
        let key = keys[0]
        return SealedSecret(
            keyID: key.id,
            box: try SealedBox.seal(
                plaintext, key: key.derived[purpose] ?? [], additionalData: Self.additionalData(purpose, context)))
    }

    /// The plaintext of `sealed`, or nil when the ring does not hold its key, or it was sealed for another purpose
    /// or context, or it was changed.
    public func open(_ sealed: SealedSecret, for purpose: Purpose, context: [UInt8]) -> [UInt8]? {
        guard let key = keys.first(where: { $0.id == sealed.keyID }), let derived = key.derived[purpose] else {
            return nil
        }
        return SealedBox.open(sealed.box, key: derived, additionalData: Self.additionalData(purpose, context))
    }

    /// HMAC-SHA256 of `data` under the current key's `purpose` key, with that key's ID.
    public func authenticationCode(_ data: [UInt8], for purpose: Purpose) -> (keyID: String, code: [UInt8]) {
        (keys[0].id, hmacSHA256(key: keys[0].derived[purpose] ?? [], data: data))
    }

    /// HMAC-SHA256 of `data` under the `purpose` key of the key `keyID` names; nil when the ring does not hold it.
    public func authenticationCode(_ data: [UInt8], for purpose: Purpose, keyID: String) -> [UInt8]? {
        guard let key = keys.first(where: { $0.id == keyID }), let derived = key.derived[purpose] else { return nil }
        return hmacSHA256(key: derived, data: data)
    }

    /// The HKDF `info` of a purpose's key, and the start of its boxes' additional data.
    static func label(_ purpose: Purpose) -> [UInt8] { Array("passkey/\(purpose.rawValue)/v1".utf8) }

    static func additionalData(_ purpose: Purpose, _ context: [UInt8]) -> [UInt8] { label(purpose) + [0] + context }
}
