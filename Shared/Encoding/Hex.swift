/// Hexadecimal digits.
public enum Hex {
    /// The value of one hex digit, either case; nil for any other byte.
    @inline(__always)
    public static func value(of digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Hex {
    /// Lowercase hex digits of `bytes`, two per byte.
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: bytes.count * 2) { output in
            for (index, byte) in bytes.enumerated() {
                output[index * 2] = digits[Int(byte >> 4)]
                output[index * 2 + 1] = digits[Int(byte & 0x0F)]
            }
            return bytes.count * 2
        }
    }
}
