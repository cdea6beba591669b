/// Zero-padded decimal digits written straight into a byte buffer: timestamps are formatted on every log line and
/// every bound `timestamptz`, where `String(format:)` would go through Foundation's formatter each time.
public enum DecimalText {
    /// Appends `value` with at least `width` digits, zero-padded on the left (after a `-` when negative).
    public static func append(_ value: Int64, width: Int, to output: inout [UInt8]) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        var digits: [UInt8] = []
        var remaining = value.magnitude
        repeat {
            digits.append(UInt8(ascii: "0") + UInt8(remaining % 10))
            remaining /= 10
        } while remaining > 0
        if digits.count < width { output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
        output.append(contentsOf: digits.reversed())
    }
}
