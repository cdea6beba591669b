/// A small strict JSON reader (RFC 8259) for clientDataJSON and similar short documents.
///
/// It rejects invalid UTF-8, unpaired surrogates, duplicate object members, control characters in strings,
/// numbers beyond the range of a Double, nesting deeper than 32 and trailing content. A leading UTF-8 byte order
/// mark is skipped.
public struct JSONReader: Sendable {
    /// The input was not valid JSON.
    public struct Failure: Error, Sendable {
        /// Byte offset where reading stopped.
        public let offset: Int
    }

    private let bytes: [UInt8]
    private var position = 0
    private static let maximumDepth = 32

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// Parses one JSON document filling `bytes`.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var reader = JSONReader(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.position = 3 }
        let value = try reader.parseValue(depth: 0)
        reader.skipWhitespace()
        guard reader.position == bytes.count else { throw Failure(offset: reader.position) }
        return value
    }

    /// Parses one JSON document that must be an object, handing each member to `member` with the reader positioned
    /// at its value; `member` must read that value with `readValue()`. Duplicate member names are rejected.
    /// This avoids building a dictionary for the common case of a few known members.
    public static func parseObject(
        _ bytes: [UInt8], member: (String, inout JSONReader) throws(Failure) -> Void
    ) throws(Failure) {
        var reader = JSONReader(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.position = 3 }
        reader.skipWhitespace()
        guard reader.position < bytes.count, bytes[reader.position] == UInt8(ascii: "{") else { throw reader.failure }
        reader.position += 1
        var seen: [String] = []
        seen.reserveCapacity(8)
        reader.skipWhitespace()
        if reader.position < bytes.count, bytes[reader.position] == UInt8(ascii: "}") {
            reader.position += 1
        } else {
            while true {
                reader.skipWhitespace()
                guard reader.position < bytes.count, bytes[reader.position] == UInt8(ascii: "\"") else {
                    throw reader.failure
                }
                let key = try reader.parseString()
                guard !seen.contains(key) else { throw reader.failure }
                seen.append(key)
                reader.skipWhitespace()
                guard reader.position < bytes.count, bytes[reader.position] == UInt8(ascii: ":") else {
                    throw reader.failure
                }
                reader.position += 1
                let before = reader.position
                try member(key, &reader)
                guard reader.position > before else { throw reader.failure }
                reader.skipWhitespace()
                guard reader.position < bytes.count else { throw reader.failure }
                if bytes[reader.position] == UInt8(ascii: ",") {
                    reader.position += 1
                    continue
                }
                guard bytes[reader.position] == UInt8(ascii: "}") else { throw reader.failure }
                reader.position += 1
                break
            }
        }
        reader.skipWhitespace()
        guard reader.position == bytes.count else { throw reader.failure }
    }

    /// Reads the value at the current position (for `parseObject` member handlers).
    public mutating func readValue() throws(Failure) -> JSONValue {
        try parseValue(depth: 1)
    }

    private var failure: Failure { Failure(offset: position) }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString) throws(Failure) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count else { throw failure }
        let matches = literal.withUTF8Buffer { buffer in
            buffer.elementsEqual(bytes[position..<position + count])
        }
        guard matches else { throw failure }
        position += count
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= JSONReader.maximumDepth else { throw failure }
        skipWhitespace()
        guard position < bytes.count else { throw failure }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .boolean(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .boolean(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        default: return .number(try parseNumber())
        }
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        position += 1
        var members = JSONObject()
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure }
            let key = try parseString()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure }
            position += 1
            let value = try parseValue(depth: depth + 1)
            guard members.insertNew(key, value) else { throw failure }
            skipWhitespace()
            guard position < bytes.count else { throw failure }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw failure }
            position += 1
            return .object(members)
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            items.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw failure }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw failure }
            position += 1
            return .array(items)
        }
    }

    /// UTF-8 validation over contiguous memory (the generic slice path is several times slower).
    private static func validatedString(_ bytes: [UInt8], _ range: Range<Int>) -> String? {
        bytes.withUnsafeBufferPointer { buffer in
            String(validating: UnsafeBufferPointer(rebasing: buffer[range]), as: UTF8.self)
        }
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        guard bytes.count - position >= 4 else { throw failure }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let char = bytes[position]
            let digit: UInt32
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(char - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(char - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(char - UInt8(ascii: "A") + 10)
            default: throw failure
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private mutating func parseString() throws(Failure) -> String {
        position += 1
        let start = position
        // Fast path: no escapes.
        while position < bytes.count {
            let char = bytes[position]
            if char == UInt8(ascii: "\"") {
                guard let text = JSONReader.validatedString(bytes, start..<position) else { throw failure }
                position += 1
                return text
            }
            if char == UInt8(ascii: "\\") { break }
            guard char >= 0x20 else { throw failure }
            position += 1
        }
        var output = Array(bytes[start..<position])
        while position < bytes.count {
            let char = bytes[position]
            position += 1
            switch char {
            case UInt8(ascii: "\""):
                guard let text = String(validating: output, as: UTF8.self) else { throw failure }
                return text
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw failure }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                case UInt8(ascii: "b"): output.append(0x08)
                case UInt8(ascii: "f"): output.append(0x0C)
                case UInt8(ascii: "n"): output.append(0x0A)
                case UInt8(ascii: "r"): output.append(0x0D)
                case UInt8(ascii: "t"): output.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        try expect("\\u")
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure }
                    output += Array(String(Character(unicode)).utf8)
                default: throw failure
                }
            default:
                guard char >= 0x20 else { throw failure }
                output.append(char)
            }
        }
        throw failure
    }

    private mutating func parseNumber() throws(Failure) -> Double {
        let start = position
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let digitsStart = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
            position += 1
        }
        let integerDigits = position - digitsStart
        guard integerDigits > 0 else { throw failure }
        guard integerDigits == 1 || bytes[digitsStart] != UInt8(ascii: "0") else { throw failure }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            let fractionStart = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            guard position > fractionStart else { throw failure }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            let exponentStart = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            guard position > exponentStart else { throw failure }
        }
        // A number too large for a Double would read as infinity, which JSON cannot express: refuse it.
        guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)), value.isFinite else {
            throw failure
        }
        return value
    }
}
