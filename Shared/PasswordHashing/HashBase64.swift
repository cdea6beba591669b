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
        guard characters.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            guard let value = sextet(character) else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero, so each byte string has exactly one spelling.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }

    private func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return self == .passlibAdapted ? nil : 62
        case UInt8(ascii: "."): return self == .passlibAdapted ? 62 : nil
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}

/// Lower-case or upper-case hexadecimal digests (Werkzeug writes lower case).
enum HashHex {
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = nibble(characters[index]), let low = nibble(characters[index + 1]) else { return nil }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return character - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
