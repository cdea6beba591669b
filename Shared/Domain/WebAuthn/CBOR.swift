/// A decoded CBOR data item (RFC 8949), limited to definite lengths.
public enum CBORValue: Sendable, Hashable {
    case unsigned(UInt64)
    /// A negative integer: the value is `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBORValue])
    /// Map entries in the order they were encoded; keys are unique.
    case map([CBORMapEntry])
    indirect case tagged(UInt64, CBORValue)
    case boolean(Bool)
    case null
    case undefined
    case simple(UInt8)
    case float(Double)

    /// The value as a signed integer, when it is an integer that fits.
    public var integer: Int? {
        switch self {
        case .unsigned(let value): return Int(exactly: value)
        case .negative(let value): return Int(exactly: value).map { -1 - $0 }
        default: return nil
        }
    }

    /// The bytes of a byte string.
    public var byteString: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    /// The text of a text string.
    public var textString: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The items of an array.
    public var arrayItems: [CBORValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The entries of a map.
    public var mapEntries: [CBORMapEntry]? {
        if case .map(let value) = self { return value }
        return nil
    }

    /// Looks up a map entry by key (nil when this is not a map or the key is absent).
    public subscript(key: CBORValue) -> CBORValue? {
        mapEntries?.first { $0.key == key }?.value
    }

    /// Looks up a map entry by text key.
    public subscript(text key: String) -> CBORValue? { self[.text(key)] }

    /// Looks up a map entry by integer key.
    public subscript(int key: Int) -> CBORValue? { self[CBORValue(key)] }

    /// An integer as CBOR.
    public init(_ value: Int) {
        self = value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-1 - value))
    }
}

/// One key/value pair of a CBOR map.
public struct CBORMapEntry: Sendable, Hashable {
    /// The key.
    public let key: CBORValue
    /// The value.
    public let value: CBORValue

    /// A map entry.
    public init(_ key: CBORValue, _ value: CBORValue) {
        self.key = key
        self.value = value
    }
}

/// A strict decoder for the CBOR that WebAuthn uses.
///
/// - Only definite lengths; indefinite-length items and reserved additional-information values are rejected.
/// - Nesting depth is capped (16 by default) and the total number of items is capped.
/// - Every declared length and count is checked against the bytes that remain before anything is allocated
///   (each item needs at least one byte, each map entry two).
/// - Text strings must be valid UTF-8; map keys must be unique.
/// - Non-minimal ("non-canonical") integer and length encodings and unsorted map keys are accepted, because
///   authenticators in the field emit them and the signatures cover the raw bytes, not a re-encoding.
public struct CBORDecoder {
    /// Limits applied while decoding.
    public struct Limits: Sendable {
        /// Maximum nesting of arrays, maps and tags.
        public var maximumDepth: Int
        /// Maximum number of data items in one top-level item.
        public var maximumItems: Int

        /// Limits; the defaults suit attestation objects (depth 16, 4096 items).
        public init(maximumDepth: Int = 16, maximumItems: Int = 4096) {
            self.maximumDepth = maximumDepth
            self.maximumItems = maximumItems
        }
    }

    /// Why decoding stopped.
    public enum Failure: Error, Sendable, Equatable {
        case truncated
        case indefiniteLength
        case reservedValue
        case tooDeep
        case tooManyItems
        case invalidUTF8
        case duplicateMapKey
        case trailingBytes
    }

    private let bytes: [UInt8]
    private var position: Int
    private let limits: Limits
    private var itemCount = 0

    /// Decodes one item starting at `offset` and returns it with the number of bytes it occupied.
    public static func decodePrefix(
        _ bytes: [UInt8], from offset: Int = 0, limits: Limits = Limits()
    ) throws(Failure) -> (value: CBORValue, consumed: Int) {
        var decoder = CBORDecoder(bytes: bytes, position: offset, limits: limits)
        let value = try decoder.decodeItem(depth: 0)
        return (value, decoder.position - offset)
    }

    /// Decodes exactly one item that must fill `bytes`.
    public static func decode(_ bytes: [UInt8], limits: Limits = Limits()) throws(Failure) -> CBORValue {
        let (value, consumed) = try decodePrefix(bytes, limits: limits)
        guard consumed == bytes.count else { throw .trailingBytes }
        return value
    }

    private var remaining: Int { bytes.count - position }

    private mutating func readByte() throws(Failure) -> UInt8 {
        guard position < bytes.count else { throw .truncated }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func readUInt(byteCount: Int) throws(Failure) -> UInt64 {
        guard remaining >= byteCount else { throw .truncated }
        var value: UInt64 = 0
        for index in 0..<byteCount { value = value << 8 | UInt64(bytes[position + index]) }
        position += byteCount
        return value
    }

    private mutating func readArgument(_ info: UInt8) throws(Failure) -> UInt64 {
        switch info {
        case 0..<24: return UInt64(info)
        case 24: return try readUInt(byteCount: 1)
        case 25: return try readUInt(byteCount: 2)
        case 26: return try readUInt(byteCount: 4)
        case 27: return try readUInt(byteCount: 8)
        case 31: throw .indefiniteLength
        default: throw .reservedValue
        }
    }

    /// Reads a length or count argument that must fit in what is left, `unitSize` bytes per unit at least.
    /// (Reading the argument here, rather than passing it in, keeps the check on the position after the head.)
    private mutating func checkedLength(_ info: UInt8, unitSize: Int) throws(Failure) -> Int {
        let declared = try readArgument(info)
        guard let length = Int(exactly: declared), length <= remaining / unitSize else { throw .truncated }
        return length
    }

    private mutating func countItem() throws(Failure) {
        itemCount += 1
        guard itemCount <= limits.maximumItems else { throw .tooManyItems }
    }

    private mutating func decodeItem(depth: Int) throws(Failure) -> CBORValue {
        guard depth <= limits.maximumDepth else { throw .tooDeep }
        try countItem()
        let initial = try readByte()
        let major = initial >> 5
        let info = initial & 0x1F
        switch major {
        case 0:
            return .unsigned(try readArgument(info))
        case 1:
            return .negative(try readArgument(info))
        case 2:
            let length = try checkedLength(info, unitSize: 1)
            defer { position += length }
            return .bytes(Array(bytes[position..<position + length]))
        case 3:
            let length = try checkedLength(info, unitSize: 1)
            guard let text = String(validating: bytes[position..<position + length], as: UTF8.self) else {
                throw .invalidUTF8
            }
            position += length
            return .text(text)
        case 4:
            let count = try checkedLength(info, unitSize: 1)
            var items: [CBORValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try decodeItem(depth: depth + 1)) }
            return .array(items)
        case 5:
            let count = try checkedLength(info, unitSize: 2)
            var entries: [CBORMapEntry] = []
            entries.reserveCapacity(count)
            var keys = Set<CBORValue>()
            for _ in 0..<count {
                let key = try decodeItem(depth: depth + 1)
                guard keys.insert(key).inserted else { throw .duplicateMapKey }
                entries.append(CBORMapEntry(key, try decodeItem(depth: depth + 1)))
            }
            return .map(entries)
        case 6:
            let tag = try readArgument(info)
            return .tagged(tag, try decodeItem(depth: depth + 1))
        default:
            return try decodeSimple(info)
        }
    }

    private mutating func decodeSimple(_ info: UInt8) throws(Failure) -> CBORValue {
        switch info {
        case 20: return .boolean(false)
        case 21: return .boolean(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(info)
        case 24:
            let value = try readByte()
            // RFC 8949 §3.3: simple values below 32 must use the one-byte form.
            guard value >= 32 else { throw .reservedValue }
            return .simple(value)
        case 25:
            return .float(Double(Float16Bits.decode(UInt16(try readUInt(byteCount: 2)))))
        case 26:
            return .float(Double(Float(bitPattern: UInt32(try readUInt(byteCount: 4)))))
        case 27:
            return .float(Double(bitPattern: try readUInt(byteCount: 8)))
        case 31: throw .indefiniteLength
        default: throw .reservedValue
        }
    }
}

/// IEEE 754 half precision, decoded without relying on the platform's `Float16`.
enum Float16Bits {
    static func decode(_ bits: UInt16) -> Float {
        let sign: Float = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1F)
        let fraction = Float(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
