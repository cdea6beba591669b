import Crypto
import Domain
import Foundation

/// Recovery codes: ten at a time, each sixteen characters of Crockford's base32 (80 random bits) shown as four
/// groups of four, only their SHA-256 (bound to the account) stored, each usable once.
public enum RecoveryCodes {
    /// Codes in a set.
    public static let count = 10
    static let length = 16
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A new set of codes, as shown to the user.
    public static func generate(random: any RandomSource) -> [String] {
        (0..<count).map { _ in
            // 32 symbols: each random byte's low five bits pick one, without bias.
            let symbols = random.bytes(count: length).map { alphabet[Int($0 & 0x1F)] }
            let text = String(decoding: symbols, as: UTF8.self)
            return stride(from: 0, to: length, by: 4).map { start in
                String(text.dropFirst(start).prefix(4))
            }.joined(separator: "-")
        }
    }

    /// The canonical form of a code as typed: case, dashes and spaces ignored, and the letters Crockford's base32
    /// leaves out read as the digits they look like (O as 0, I and L as 1). nil when it cannot be a code.
    public static func normalized(_ text: String) -> String? {
        guard text.utf8.count <= 64 else { return nil }
        var symbols: [UInt8] = []
        for character in text.utf8 {
            // ASCII only, uppercased by hand: no letter elsewhere may turn into one of ours (ß, ı).
            let byte = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(character) ? character - 32 : character
            switch byte {
            case UInt8(ascii: "-"), UInt8(ascii: " "): continue
            case UInt8(ascii: "O"): symbols.append(UInt8(ascii: "0"))
            case UInt8(ascii: "I"), UInt8(ascii: "L"): symbols.append(UInt8(ascii: "1"))
            default:
                guard alphabet.contains(byte) else { return nil }
                symbols.append(byte)
            }
        }
        guard symbols.count == length else { return nil }
        return String(decoding: symbols, as: UTF8.self)
    }

    /// The digest stored for a (normalized) code of `accountID`: the same code means nothing for another account.
    public static func digest(_ normalizedCode: String, accountID: AccountID) -> [UInt8] {
        sha256(Array("\(accountID.description):\(normalizedCode)".utf8))
    }

    /// The unused code among `records` that `text` is, compared in constant time against every one; nil for none.
    public static func match(_ text: String, accountID: AccountID, among records: [RecoveryCodeRecord])
        -> RecoveryCodeRecord?
    {
        guard let normalized = normalized(text) else { return nil }
        let presented = digest(normalized, accountID: accountID)
        var found: RecoveryCodeRecord?
        for record in records where constantTimeEquals(record.codeDigest, presented) { found = record }
        return found
    }
}

/// What proves a recovery's finish: exactly one of the email code and a recovery code (an empty one counts as
/// absent). The gateway checks a body by this rule and the use case applies it again.
public enum RecoveryProofText: Sendable, Equatable {
    case emailCode(String)
    case recoveryCode(String)

    /// Nil unless exactly one of the two is given.
    public init?(code: String?, recoveryCode: String?) {
        let code = code.flatMap { $0.isEmpty ? nil : $0 }
        let recoveryCode = recoveryCode.flatMap { $0.isEmpty ? nil : $0 }
        switch (code, recoveryCode) {
        case (let code?, nil): self = .emailCode(code)
        case (nil, let recoveryCode?): self = .recoveryCode(recoveryCode)
        default: return nil
        }
    }
}
