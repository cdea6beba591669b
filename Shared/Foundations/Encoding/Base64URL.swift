/// base64url (RFC 4648 §5) as WebAuthn's JSON uses it.
public enum Base64URL {
    private static let encodeTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The base64url alphabet alone ('=' and every other byte map to 0xFF).
    private static let unpaddedDecodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, char) in encodeTable.enumerated() { table[Int(char)] = UInt8(index) }
        return table
    }()

    private static let decodeTable: [UInt8] = {
        var table = unpaddedDecodeTable
        // The standard alphabet is accepted too: some published responses use it.
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Decodes base64url or standard base64, with or without padding. Returns nil on any other character,
    /// misplaced padding, an impossible length, or non-zero unused bits.
    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(bytes: $0, strict: false) }) {
            return decoded
        }
        return Array(text.utf8).withUnsafeBufferPointer { decode(bytes: $0, strict: false) }
    }

    /// Decodes exactly unpadded base64url: nil for padding, the standard alphabet's `+` and `/`, or anything
    /// `decode` refuses. Each byte string has one such spelling (unused bits must be zero).
    public static func decodeUnpadded<S: StringProtocol>(_ text: S) -> [UInt8]? {
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ decode(bytes: $0, strict: true) }) {
            return decoded
        }
        return Array(text.utf8).withUnsafeBufferPointer { decode(bytes: $0, strict: true) }
    }

    /// `strict`: the unpadded base64url alphabet only (padding is then a bad character).
    private static func decode(bytes input: UnsafeBufferPointer<UInt8>, strict: Bool) -> [UInt8]? {
        var count = input.count
        if !strict, count % 4 == 0, count > 0, input[count - 1] == UInt8(ascii: "=") {
            count -= 1
            if input[count - 1] == UInt8(ascii: "=") { count -= 1 }
        }
        if count % 4 == 1 { return nil }
        var valid = true
        let output = [UInt8](unsafeUninitializedCapacity: count * 3 / 4) { output, written in
            (strict ? unpaddedDecodeTable : decodeTable).withUnsafeBufferPointer { table in
                // Whole quanta first: four characters give three bytes; 0xFF in any slot marks a bad character.
                var index = 0
                while index + 4 <= count {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    let d = table[Int(input[index + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    let block = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    output[written] = UInt8(truncatingIfNeeded: block >> 16)
                    output[written + 1] = UInt8(truncatingIfNeeded: block >> 8)
                    output[written + 2] = UInt8(truncatingIfNeeded: block)
                    written += 3
                    index += 4
                }
                // Then the two or three characters of a final partial quantum.
                var accumulator: UInt32 = 0
                var bits = 0
                while index < count {
                    let value = table[Int(input[index])]
                    if value == 0xFF {
                        valid = false
                        return
                    }
                    accumulator = (accumulator << 6) | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        output[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        written += 1
                    }
                    index += 1
                }
                // Bits left over must be zero (a canonical encoding).
                if bits > 0, accumulator & ((1 << UInt32(bits)) - 1) != 0 { valid = false }
            }
        }
        return valid ? output : nil
    }

    /// Encodes as base64url without padding.
    public static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let block = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            output.append(encodeTable[Int(block >> 18 & 63)])
            output.append(encodeTable[Int(block >> 12 & 63)])
            if second != nil { output.append(encodeTable[Int(block >> 6 & 63)]) }
            if third != nil { output.append(encodeTable[Int(block & 63)]) }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Encodes as standard base64 with padding (the form SafetyNet's nonce uses).
    public static func encodeStandard<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var text = Array(encode(bytes).utf8).map { char -> UInt8 in
            switch char {
            case UInt8(ascii: "-"): return UInt8(ascii: "+")
            case UInt8(ascii: "_"): return UInt8(ascii: "/")
            default: return char
            }
        }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return String(decoding: text, as: UTF8.self)
    }
}
