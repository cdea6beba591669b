import Protobuf
import XCTest

/// A message with one field of every wire type, nested messages and repeated strings.
private struct Sample: ProtobufMessage, Equatable {
    var number: UInt64 = 0
    var signed: Int32 = 0
    var zigzag: Int64 = 0
    var fixed32: UInt32 = 0
    var fixed64: UInt64 = 0
    var text = ""
    var blob: [UInt8] = []
    var flag = false
    var names: [String] = []
    var child: Box?

    final class Box: Equatable, @unchecked Sendable {
        // Immutable after init; a class only to allow recursion.
        let value: Sample
        init(_ value: Sample) { self.value = value }
        static func == (lhs: Box, rhs: Box) -> Bool { lhs.value == rhs.value }
    }

    mutating func decodeField(number: UInt32, wireType: WireType, from reader: inout ProtobufReader) throws -> Bool {
        switch (number, wireType) {
        case (1, .varint): self.number = try reader.readVarint()
        case (2, .varint): signed = try reader.readInt32()
        case (3, .varint): zigzag = try reader.readSInt64()
        case (4, .fixed32): fixed32 = try reader.readFixed32()
        case (5, .fixed64): fixed64 = try reader.readFixed64()
        case (6, .lengthDelimited): text = try reader.readString()
        case (7, .lengthDelimited): blob = try reader.readBytes()
        case (8, .varint): flag = try reader.readBool()
        case (9, .lengthDelimited): names.append(try reader.readString())
        case (10, .lengthDelimited): child = Box(try reader.readMessage(Sample.self))
        default: return false
        }
        return true
    }

    func encode(to writer: inout ProtobufWriter) {
        writer.writeVarintField(1, number)
        writer.writeInt32Field(2, signed)
        writer.writeSInt64Field(3, zigzag)
        writer.writeFixed32Field(4, fixed32)
        writer.writeFixed64Field(5, fixed64)
        writer.writeStringField(6, text)
        writer.writeBytesField(7, blob)
        writer.writeBoolField(8, flag)
        for name in names { writer.writeStringField(9, name) }
        if let child { writer.writeMessageField(10, child.value) }
    }
}

final class ProtobufCodecTests: XCTestCase {
    private func sample() -> Sample {
        var message = Sample()
        message.number = 300
        message.signed = -5
        message.zigzag = -123_456_789_012
        message.fixed32 = 0xdead_beef
        message.fixed64 = 0x0123_4567_89ab_cdef
        message.text = "héllo"
        message.blob = [0, 1, 2, 255]
        message.flag = true
        message.names = ["a", "bc"]
        var child = Sample()
        child.text = "child"
        child.number = 1
        message.child = Sample.Box(child)
        return message
    }

    func testRoundTrip() throws {
        let message = sample()
        let decoded = try Sample(serializedBytes: message.serializedBytes())
        XCTAssertEqual(decoded, message)
    }

    func testKnownEncodings() {
        var writer = ProtobufWriter()
        writer.writeVarintField(1, 150)
        XCTAssertEqual(writer.bytes, [0x08, 0x96, 0x01])
        var negative = ProtobufWriter()
        negative.writeInt32Field(1, -1)
        XCTAssertEqual(negative.bytes, [0x08] + Array(repeating: 0xff, count: 9) + [0x01])
        var text = ProtobufWriter()
        text.writeStringField(2, "testing")
        XCTAssertEqual(text.bytes, [0x12, 0x07] + Array("testing".utf8))
    }

    func testZigZag() {
        XCTAssertEqual(ZigZag.encode32(0), 0)
        XCTAssertEqual(ZigZag.encode32(-1), 1)
        XCTAssertEqual(ZigZag.encode32(1), 2)
        XCTAssertEqual(ZigZag.encode32(Int32.min), UInt32.max)
        for value: Int64 in [0, -1, 1, Int64.min, Int64.max, -123_456] {
            XCTAssertEqual(ZigZag.decode64(ZigZag.encode64(value)), value)
        }
        for value: Int32 in [0, -1, 1, Int32.min, Int32.max] {
            XCTAssertEqual(ZigZag.decode32(ZigZag.encode32(value)), value)
        }
    }

    func testTruncationAtEveryOffsetFailsOrDecodesAPrefix() {
        let bytes = sample().serializedBytes()
        for length in 0..<bytes.count {
            // A cut inside a field must be an error; a cut between fields is a valid shorter message.
            do {
                let decoded = try Sample(serializedBytes: bytes[0..<length])
                XCTAssertNotEqual(decoded, sample(), "prefix of \(length) bytes decoded as the whole message")
            } catch let error as ProtobufError {
                XCTAssertTrue([.truncated, .invalidUTF8].contains(error.code), "offset \(length): \(error)")
            } catch {
                XCTFail("unexpected error \(error)")
            }
        }
    }

    func testUnknownFieldsAreSkipped() throws {
        var writer = ProtobufWriter()
        writer.writeVarintField(100, 7)
        writer.writeFixed64Field(101, 9)
        writer.writeFixed32Field(102, 9)
        writer.writeBytesField(103, [1, 2, 3])
        // A group (wire type 3/4) with a nested group inside.
        writer.writeTag(104, .startGroup)
        writer.writeVarintField(1, 5)
        writer.writeTag(2, .startGroup)
        writer.writeTag(2, .endGroup)
        writer.writeTag(104, .endGroup)
        writer.writeStringField(6, "kept")
        let decoded = try Sample(serializedBytes: writer.bytes)
        XCTAssertEqual(decoded.text, "kept")
    }

    func testMalformedInputIsRejected() {
        let cases: [([UInt8], ProtobufError.Code)] = [
            ([0x08] + Array(repeating: 0xff, count: 10) + [0x01], .malformedVarint),
            ([0x0f], .invalidWireType),  // wire type 7
            ([0x00, 0x01], .invalidFieldNumber),  // field 0
            ([0x32, 0x05, 0x61], .truncated),  // length 5, one byte present
            ([0x32, 0xff, 0xff, 0xff, 0xff, 0x0f], .lengthTooLarge),
            ([0x32, 0x02, 0xc3, 0x28], .invalidUTF8),
            ([0xa3, 0x06], .truncated),  // unterminated group
            ([0x0c], .invalidWireType),  // stray end-group
        ]
        for (bytes, code) in cases {
            XCTAssertThrowsError(try Sample(serializedBytes: bytes), "\(bytes)") { error in
                XCTAssertEqual((error as? ProtobufError)?.code, code, "\(bytes)")
            }
        }
    }

    func testNestingDepthIsCapped() {
        var bytes: [UInt8] = []
        for _ in 0..<100 {
            var writer = ProtobufWriter()
            writer.writeTag(10, .lengthDelimited)
            writer.writeVarint(UInt64(bytes.count))
            bytes = writer.bytes + bytes
        }
        XCTAssertThrowsError(try Sample(serializedBytes: bytes)) { error in
            XCTAssertEqual((error as? ProtobufError)?.code, .tooDeep)
        }
        var groups: [UInt8] = []
        for _ in 0..<100 { groups += [0xa3, 0x06] }  // field 100, start group
        XCTAssertThrowsError(try Sample(serializedBytes: groups))
    }

    /// A fuzz entry point: random bytes never crash the decoder.
    func testRandomBytesNeverCrash() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<5000 {
            let length = Int(generator.next() % 64)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            _ = try? Sample(serializedBytes: bytes)
        }
    }
}

/// A deterministic generator so failures reproduce.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var value = state
        value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
        value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
        return value ^ (value >> 31)
    }
}
