import Crypto
import Domain
import Encoding
import Foundation

/// The rules of one-time email codes: eight random digits, only a salted SHA-256 stored, ten minutes to use, five
/// attempts, used once (the last two enforced by the store's atomic statements).
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

    /// The digest stored for `code` with `salt`.
    public static func digest(_ code: String, salt: [UInt8]) -> [UInt8] { sha256(salt + Array(code.utf8)) }

    /// Whether `code` is the one `stored` was made for, in time independent of where they differ.
    public static func matches(_ code: String, _ stored: EmailCode) -> Bool {
        constantTimeEquals(digest(code, salt: stored.salt), stored.codeDigest)
    }

    /// A new code for `target` and the message that carries it, made at `now`. The code itself exists only in the
    /// returned message.
    public static func delivery(
        for target: RecoveryTarget, purpose: EmailCodePurpose, random: any RandomSource, now: Date
    ) -> EmailCodeDelivery {
        delivery(
            accountID: target.accountID, emailID: target.emailID, address: target.address, purpose: purpose,
            random: random, now: now)
    }

    /// A new code for the email row `emailID` of `accountID` at `address`, and its message.
    public static func delivery(
        accountID: AccountID, emailID: UUID, address: String, purpose: EmailCodePurpose, random: any RandomSource,
        now: Date
    ) -> EmailCodeDelivery {
        let code = generate(random: random)
        let salt = random.bytes(count: saltLength)
        let expiresAt = now.addingTimeInterval(lifetime)
        return EmailCodeDelivery(
            code: EmailCode(
                id: UUID.randomV4(), accountID: accountID, emailID: emailID, purpose: purpose, salt: salt,
                codeDigest: digest(code, salt: salt), attempts: 0, createdAt: now, expiresAt: expiresAt),
            message: OutboxMessage(
                id: UUID.randomV4(), recipient: address,
                template: purpose == .verification ? .emailVerification : .recoveryCode, code: code,
                expiresAt: expiresAt, createdAt: now))
    }
}
