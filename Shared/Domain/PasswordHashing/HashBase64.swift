import Encoding

/// The base64 dialects that password hash strings use for their salts and digests.
enum HashBase64 {
    /// RFC 4648 standard alphabet without padding, as PHC strings (argon2, passlib's scrypt) write it.
    case phc
    /// passlib's "adapted base64": the standard alphabet with `.` for `+`, no padding (its pbkdf2 hashes).
    case passlibAdapted
    /// RFC 4648 standard alphabet with `=` padding, as Django writes its digests.
    case paddedStandard

    /// The decoded bytes, or nil when `text` is not canonical text of this dialect (wrong characters, wrong padding,
    /// a length no encoding produces, or unused trailing bits set).
    func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        var characters = Array(text.utf8)
        if self == .paddedStandard {
            guard characters.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
        }
        // Spelled in base64url's alphabet, whose unpadded decoder then checks the length and the unused bits.
        for index in characters.indices {
            guard let spelled = urlCharacter(characters[index]) else { return nil }
            characters[index] = spelled
        }
        return Base64URL.decodeUnpadded(String(decoding: characters, as: UTF8.self))
    }

    /// The base64url character with this dialect character's value; nil for a character the dialect lacks
    /// (base64url's own `-` and `_` among them).
    private func urlCharacter(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return character
        case UInt8(ascii: "+"): return self == .passlibAdapted ? nil : UInt8(ascii: "-")
        case UInt8(ascii: "."): return self == .passlibAdapted ? UInt8(ascii: "-") : nil
        case UInt8(ascii: "/"): return UInt8(ascii: "_")
        default: return nil
        }
    }
}
