/// Decimal digits as bytes, both ways: zero-padded digits written straight into a byte buffer (timestamps are
/// formatted on every log line and every bound `timestamptz`, where `String(format:)` would go through Foundation's
/// formatter each time), and plain digits read from received bytes without making a `String`.
public enum DecimalText {
    /// Appends `value` with at least `width` digits, zero-padded on the left (after a `-` when negative).
    public static func append(_ value: Int64, width: Int, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var digitCount = 1
        var scan = magnitude
        while scan >= 10 {
            scan /= 10
            digitCount += 1
        }
        if digitCount < width { output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digitCount)) }
        // Written in place from the last digit back, without a scratch array.
        let start = output.count
        output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digitCount))
        var remaining = magnitude
        var index = start + digitCount - 1
        while remaining > 0 {
            output[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
            remaining /= 10
            index -= 1
        }
    }

    /// The value of 1 to 18 ASCII digits (no sign, no spaces); nil for anything else.
    public static func parse<Digits: Collection<UInt8>>(_ digits: Digits) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
