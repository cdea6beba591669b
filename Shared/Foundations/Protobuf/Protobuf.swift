/// A protobuf decoding failure: a stable code, a reason and where it was raised.
public struct ProtobufError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong with the bytes.
    public enum Code: Sendable, Equatable {
        case truncated
        case malformedVarint
        case invalidWireType
        case invalidFieldNumber
        case lengthTooLarge
        case invalidUTF8
        case tooDeep
    }

    /// The stable code.
    public let code: Code
    /// Where the error was raised.
    public let location: String

    /// Creates an error.
    public init(_ code: Code, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.location = "\(file):\(line)"
    }

    public static func == (lhs: ProtobufError, rhs: ProtobufError) -> Bool { lhs.code == rhs.code }

    public var description: String { "protobuf \(code) at \(location)" }
}

/// Protobuf wire types.
public enum WireType: UInt8, Sendable {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case startGroup = 3
    case endGroup = 4
    case fixed32 = 5
}

/// A proto3 enum: a closed set whose wire form is a number. Zero is each enum's unspecified value, and it and
/// numbers the program does not know read as nil.
public protocol ProtobufEnum: Sendable {
    init?(protobufValue: Int32)
    var protobufValue: Int32 { get }
}

/// A message that can be written to and read from the protobuf wire format.
public protocol ProtobufMessage: Sendable {
    /// An empty message (every field at its default).
    init()
    /// Reads one field whose tag has already been read; unknown fields are left to the reader to skip.
    /// Returns false when the field number is not one of this message's fields.
    mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws -> Bool
    /// Writes every non-default field in field-number order.
    func encode(to writer: inout ProtobufWriter)
}

extension ProtobufMessage {
    /// Decodes a message from bytes; unknown fields are skipped.
    public init(serializedBytes bytes: [UInt8]) throws {
        self.init()
        try bytes.withUnsafeBytes { buffer in
            var reader = ProtobufReader(buffer)
            try self.decode(from: &reader)
        }
    }

    /// Decodes a message from bytes; unknown fields are skipped.
    public init(serializedBytes bytes: some Collection<UInt8>) throws {
        self.init()
        let array = Array(bytes)
        try array.withUnsafeBytes { buffer in
            var reader = ProtobufReader(buffer)
            try self.decode(from: &reader)
        }
    }

    /// Decodes fields until the reader is exhausted.
    public mutating func decode(from reader: inout ProtobufReader) throws {
        while let (number, wireType) = try reader.readTag() {
            if try !decodeField(number: number, wireType: wireType, from: &reader) {
                try reader.skipField(wireType: wireType, number: number)
            }
        }
    }

    /// The message's wire bytes.
    public func serializedBytes() -> [UInt8] {
        var writer = ProtobufWriter()
        encode(to: &writer)
        return writer.bytes
    }
}

/// A bounds-checked cursor over protobuf bytes. Every read fails with an error on short or malformed input.
public struct ProtobufReader {
    private let bytes: UnsafeRawBufferPointer
    private var offset: Int
    private let end: Int
    /// How many nested messages deep this reader is; capped by ``maxDepth``.
    public let depth: Int
    /// The deepest nesting accepted.
    public static let maxDepth = 64

    /// Creates a reader over `bytes`, which must outlive it.
    public init(_ bytes: UnsafeRawBufferPointer, depth: Int = 0) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
        self.depth = depth
    }

    /// True when every byte has been read.
    public var isAtEnd: Bool { offset >= end }

    /// Reads the next field tag, or nil at the end of input.
    public mutating func readTag() throws -> (UInt32, WireType)? {
        if isAtEnd { return nil }
        let key = try readVarint()
        guard let wireType = WireType(rawValue: UInt8(key & 7)) else { throw ProtobufError(.invalidWireType) }
        let number = key >> 3
        guard number >= 1, number <= 536_870_911 else { throw ProtobufError(.invalidFieldNumber) }
        return (UInt32(number), wireType)
    }

    /// Reads a base-128 varint of at most 10 bytes.
    public mutating func readVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < end else { throw ProtobufError(.truncated) }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw ProtobufError(.malformedVarint) }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw ProtobufError(.malformedVarint) }
        }
    }

    /// Reads 4 little-endian bytes.
    public mutating func readFixed32() throws -> UInt32 {
        guard end - offset >= 4 else { throw ProtobufError(.truncated) }
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
        offset += 4
        return value
    }

    /// Reads 8 little-endian bytes.
    public mutating func readFixed64() throws -> UInt64 {
        guard end - offset >= 8 else { throw ProtobufError(.truncated) }
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += 8
        return value
    }

    /// Reads a length prefix and returns the bytes it covers, checked against what remains.
    public mutating func readLengthDelimited() throws -> UnsafeRawBufferPointer {
        let declared = try readVarint()
        guard let length = Int(exactly: declared), length <= end - offset else {
            throw ProtobufError(declared > UInt64(Int32.max) ? .lengthTooLarge : .truncated)
        }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
        offset += length
        return slice
    }

    /// Reads a `bytes` field.
    public mutating func readBytes() throws -> [UInt8] { Array(try readLengthDelimited()) }

    /// Reads a `string` field, rejecting invalid UTF-8.
    public mutating func readString() throws -> String {
        let raw = try readLengthDelimited()
        guard let text = String(validating: raw, as: UTF8.self) else { throw ProtobufError(.invalidUTF8) }
        return text
    }

    /// Reads a nested message.
    public mutating func readMessage<M: ProtobufMessage>(_ type: M.Type = M.self) throws -> M {
        guard depth < Self.maxDepth else { throw ProtobufError(.tooDeep) }
        let raw = try readLengthDelimited()
        var nested = ProtobufReader(raw, depth: depth + 1)
        var message = M()
        try message.decode(from: &nested)
        return message
    }

    /// Reads an `int32` (sign-extended varint) field.
    public mutating func readInt32() throws -> Int32 { Int32(truncatingIfNeeded: try readVarint()) }
    /// Reads an `int64` field.
    public mutating func readInt64() throws -> Int64 { Int64(bitPattern: try readVarint()) }
    /// Reads a `uint32` field.
    public mutating func readUInt32() throws -> UInt32 { UInt32(truncatingIfNeeded: try readVarint()) }
    /// Reads a `bool` field.
    public mutating func readBool() throws -> Bool { try readVarint() != 0 }
    /// Reads a `sint32` (zigzag) field.
    public mutating func readSInt32() throws -> Int32 { ZigZag.decode32(UInt32(truncatingIfNeeded: try readVarint())) }
    /// Reads a `sint64` (zigzag) field.
    public mutating func readSInt64() throws -> Int64 { ZigZag.decode64(try readVarint()) }

    /// Skips a field of an unknown number, groups included (bounded by ``maxDepth``).
    public mutating func skipField(wireType: WireType, number: UInt32) throws {
        switch wireType {
        case .varint: _ = try readVarint()
        case .fixed64: _ = try readFixed64()
        case .fixed32: _ = try readFixed32()
        case .lengthDelimited: _ = try readLengthDelimited()
        case .startGroup: try skipGroup(number: number, depth: depth + 1)
        case .endGroup: throw ProtobufError(.invalidWireType)
        }
    }

    private mutating func skipGroup(number: UInt32, depth: Int) throws {
        guard depth <= Self.maxDepth else { throw ProtobufError(.tooDeep) }
        while true {
            guard let (inner, wireType) = try readTag() else { throw ProtobufError(.truncated) }
            if wireType == .endGroup {
                guard inner == number else { throw ProtobufError(.invalidWireType) }
                return
            }
            if wireType == .startGroup {
                try skipGroup(number: inner, depth: depth + 1)
            } else {
                try skipField(wireType: wireType, number: inner)
            }
        }
    }
}

/// Zigzag mapping of signed integers for `sint32`/`sint64`.
public enum ZigZag {
    /// Maps a signed 32-bit value to its zigzag form.
    public static func encode32(_ value: Int32) -> UInt32 { UInt32(bitPattern: (value << 1) ^ (value >> 31)) }
    /// Inverse of ``encode32(_:)``.
    public static func decode32(_ value: UInt32) -> Int32 {
        Int32(bitPattern: value >> 1) ^ -Int32(bitPattern: value & 1)
    }
    /// Maps a signed 64-bit value to its zigzag form.
    public static func encode64(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }
    /// Inverse of ``encode64(_:)``.
    public static func decode64(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}

/// Appends protobuf fields to a byte array. Default values (0, empty) are skipped, as proto3 requires.
public struct ProtobufWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    /// Creates an empty writer.
    public init() {}

    /// Writes a raw varint.
    public mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Writes a field tag.
    public mutating func writeTag(_ number: UInt32, _ wireType: WireType) {
        writeVarint(UInt64(number) << 3 | UInt64(wireType.rawValue))
    }

    /// Writes a `uint64`/`uint32`/enum field unless zero.
    public mutating func writeVarintField(_ number: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        writeTag(number, .varint)
        writeVarint(value)
    }

    /// Writes an `int32` or enum field unless zero (negative values take 10 bytes, as the spec says).
    public mutating func writeInt32Field(_ number: UInt32, _ value: Int32) {
        writeVarintField(number, UInt64(bitPattern: Int64(value)))
    }

    /// Writes an `int64` field unless zero.
    public mutating func writeInt64Field(_ number: UInt32, _ value: Int64) {
        writeVarintField(number, UInt64(bitPattern: value))
    }

    /// Writes a `bool` field unless false.
    public mutating func writeBoolField(_ number: UInt32, _ value: Bool) {
        writeVarintField(number, value ? 1 : 0)
    }

    /// Writes a `sint32` field unless zero.
    public mutating func writeSInt32Field(_ number: UInt32, _ value: Int32) {
        writeVarintField(number, UInt64(ZigZag.encode32(value)))
    }

    /// Writes a `sint64` field unless zero.
    public mutating func writeSInt64Field(_ number: UInt32, _ value: Int64) {
        writeVarintField(number, ZigZag.encode64(value))
    }

    /// Writes a `fixed32` field unless zero.
    public mutating func writeFixed32Field(_ number: UInt32, _ value: UInt32) {
        guard value != 0 else { return }
        writeTag(number, .fixed32)
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    /// Writes a `fixed64` field unless zero.
    public mutating func writeFixed64Field(_ number: UInt32, _ value: UInt64) {
        guard value != 0 else { return }
        writeTag(number, .fixed64)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// Writes a `bytes` field unless empty.
    public mutating func writeBytesField(_ number: UInt32, _ value: some Collection<UInt8>) {
        guard !value.isEmpty else { return }
        writeTag(number, .lengthDelimited)
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Writes a `string` field unless empty.
    public mutating func writeStringField(_ number: UInt32, _ value: String) {
        writeBytesField(number, value.utf8)
    }

    /// Writes one element of a repeated `string` or `bytes` field; unlike a singular field it is written even when
    /// empty, so the element count is kept.
    public mutating func writeLengthDelimitedElement(_ number: UInt32, _ value: some Collection<UInt8>) {
        writeTag(number, .lengthDelimited)
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Writes a nested message field (always, even when empty, so that presence is kept).
    public mutating func writeMessageField(_ number: UInt32, _ message: some ProtobufMessage) {
        var nested = ProtobufWriter()
        message.encode(to: &nested)
        writeTag(number, .lengthDelimited)
        writeVarint(UInt64(nested.bytes.count))
        bytes.append(contentsOf: nested.bytes)
    }
}
