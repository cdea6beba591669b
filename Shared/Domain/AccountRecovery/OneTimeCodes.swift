import Crypto
import Domain
import Encoding
import Foundation

/// The rules of one-time email codes: eight random digits, ten minutes to use, five attempts, used once (the last
/// two enforced by the store's atomic statements).
///
/// Nothing stored lets someone who can only read the database learn a code: the store keeps an HMAC-SHA256 of the
/// code under a key of the secret key ring (SHA-256 alone would give the code back after 10^8 guesses), and the
/// message that carries the code keeps it sealed under another, until the outbox worker opens it to send it.
public enum OneTimeCodes {
    /// Digits in a code.
    public static let digits = 8
    /// How long a code can be used.
    public static let lifetime: TimeInterval = 600
    /// Attempts allowed per code, right or wrong.
    public static let maximumAttempts = 5
    static let saltLength = 16

    /// A new code, uniformly distributed over the `digits`-digit strings (rejection sampling: no modulo bias).
    public static func generate(random: any RandomSource) -> String {
        let range: UInt32 = 100_000_000
        // The largest multiple of `range` that fits in a UInt32: values at or above it are drawn again.
        let limit = UInt32.max - UInt32.max % range
        while true {
            let bytes = random.bytes(count: 4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard value < limit else { continue }
            let text = String(value % range)
            return String(repeating: "0", count: digits - text.count) + text
        }
    }

    /// Whether `text` has the shape of a code: exactly `digits` ASCII digits.
    public static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == digits && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The digest stored for `code` with `salt`: HMAC-SHA256 under the ring's current digest key, and that key's ID.
    public static func digest(_ code: String, salt: [UInt8], keys: SecretKeyRing) -> (keyID: String, digest: [UInt8]) {
        let (keyID, digest) = keys.authenticationCode(salt + Array(code.utf8), for: .codeDigest)
        return (keyID, digest)
    }

    /// The unkeyed digest of a code stored before digests were keyed: SHA-256 of the salt and the code. Only checked,
    /// never made.
    static func unkeyedDigest(_ code: String, salt: [UInt8]) -> [UInt8] { sha256(salt + Array(code.utf8)) }

    /// Whether `code` is the one `stored` was made for, in time independent of where they differ. A digest made
    /// under a key the ring no longer holds matches nothing.
    public static func matches(_ code: String, _ stored: EmailCode, keys: SecretKeyRing) -> Bool {
        let expected: [UInt8]
        if let keyID = stored.digestKeyID {
            guard let keyed = keys.authenticationCode(stored.salt + Array(code.utf8), for: .codeDigest, keyID: keyID)
            else { return false }
            expected = keyed
        } else {
            expected = unkeyedDigest(code, salt: stored.salt)
        }
        return constantTimeEquals(expected, stored.codeDigest)
    }

    /// The outbox message's code sealed under the ring's current outbox key, bound to the message.
    static func sealed(_ code: String, messageID: UUID, keys: SecretKeyRing) throws(CryptoError) -> OutboxCode {
        let sealed = try keys.seal(Array(code.utf8), for: .outboxCode, context: Array(messageID.lowercaseText.utf8))
        return .sealed(keyID: sealed.keyID, box: sealed.box)
    }

    /// What the outbox worker finds in a message's code.
    public enum Opened: Hashable, Sendable {
        /// The code, to be put in the message.
        case code(String)
        /// The message carries none.
        case none
        /// Sealed under a key this process's ring does not hold (a replica started before the ring gained it).
        case keyNotHeld(String)
        /// Sealed under a key the ring holds, and it does not open: changed, or moved from another message.
        case unreadable
    }

    /// The code `message` carries, opened with `keys`.
    public static func open(_ message: OutboxMessage, keys: SecretKeyRing) -> Opened {
        switch message.code {
        case nil: return .none
        case .clear(let code): return .code(code)
        case .sealed(let keyID, let box):
            guard keys.holds(keyID) else { return .keyNotHeld(keyID) }
            let context = Array(message.id.lowercaseText.utf8)
            guard
                let bytes = keys.open(SealedSecret(keyID: keyID, box: box), for: .outboxCode, context: context),
                let code = String(validating: bytes, as: UTF8.self), isWellFormed(code)
            else { return .unreadable }
            return .code(code)
        }
    }

    /// A new code for `target` and the message that carries it, made at `now`. The code itself is in neither: the
    /// code's row keeps its keyed digest and the message keeps it sealed.
    public static func delivery(
        for target: RecoveryTarget, purpose: EmailCodePurpose, random: any RandomSource, keys: SecretKeyRing, now: Date
    ) throws -> EmailCodeDelivery {
        try delivery(
            accountID: target.accountID, emailID: target.emailID, address: target.address, purpose: purpose,
            random: random, keys: keys, now: now)
    }

    /// A new code for the email row `emailID` of `accountID` at `address`, and its message.
    public static func delivery(
        accountID: AccountID, emailID: UUID, address: String, purpose: EmailCodePurpose, random: any RandomSource,
        keys: SecretKeyRing, now: Date
    ) throws -> EmailCodeDelivery {
        let code = generate(random: random)
        let salt = random.bytes(count: saltLength)
        let expiresAt = now.addingTimeInterval(lifetime)
        let (keyID, codeDigest) = digest(code, salt: salt, keys: keys)
        let messageID = UUID.randomV4()
        return EmailCodeDelivery(
            code: EmailCode(
                id: UUID.randomV4(), accountID: accountID, emailID: emailID, purpose: purpose, salt: salt,
                codeDigest: codeDigest, digestKeyID: keyID, attempts: 0, createdAt: now, expiresAt: expiresAt),
            message: OutboxMessage(
                id: messageID, recipient: address,
                template: purpose == .verification ? .emailVerification : .recoveryCode,
                code: try sealed(code, messageID: messageID, keys: keys), expiresAt: expiresAt, createdAt: now))
    }
}
