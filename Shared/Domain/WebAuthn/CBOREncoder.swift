/// Encodes CBOR values with the shortest argument forms (deterministic for a given value and map order).
///
/// Used to build attestation objects and COSE keys in tests and tools; the verifier itself never re-encodes.
public enum CBOREncoder {
    /// The encoding of `value`.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var output: [UInt8] = []
        append(value, to: &output)
        return output
    }

    private static func appendHead(_ major: UInt8, _ argument: UInt64, to output: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: output.append(type | UInt8(argument))
        case 24...0xFF: output += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: output += [type | 25] + bigEndian(argument, 2)
        case 0x1_0000...0xFFFF_FFFF: output += [type | 26] + bigEndian(argument, 4)
        default: output += [type | 27] + bigEndian(argument, 8)
        }
    }

    private static func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private static func append(_ value: CBORValue, to output: inout [UInt8]) {
        switch value {
        case .unsigned(let number): appendHead(0, number, to: &output)
        case .negative(let number): appendHead(1, number, to: &output)
        case .bytes(let bytes):
            appendHead(2, UInt64(bytes.count), to: &output)
            output += bytes
        case .text(let text):
            appendHead(3, UInt64(text.utf8.count), to: &output)
            output += Array(text.utf8)
        case .array(let items):
            appendHead(4, UInt64(items.count), to: &output)
            for item in items { append(item, to: &output) }
        case .map(let entries):
            appendHead(5, UInt64(entries.count), to: &output)
            for entry in entries {
                append(entry.key, to: &output)
                append(entry.value, to: &output)
            }
        case .tagged(let tag, let item):
            appendHead(6, tag, to: &output)
            append(item, to: &output)
        case .boolean(let flag): output.append(flag ? 0xF5 : 0xF4)
        case .null: output.append(0xF6)
        case .undefined: output.append(0xF7)
        case .simple(let number):
            if number < 24 { output.append(0xE0 | number) } else { output += [0xF8, number] }
        case .float(let number):
            output.append(0xFB)
            output += bigEndian(number.bitPattern, 8)
        }
    }
}
