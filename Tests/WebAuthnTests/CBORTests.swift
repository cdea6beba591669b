import WebAuthn
import XCTest

final class CBORTests: XCTestCase {
    func testDecodesEveryMajorType() throws {
        let value = CBORValue.map([
            CBORMapEntry(CBORValue(1), CBORValue(-7)),
            CBORMapEntry(.text("bytes"), .bytes([1, 2, 3])),
            CBORMapEntry(.text("array"), .array([.boolean(true), .boolean(false), .null, .undefined])),
            CBORMapEntry(.text("big"), .unsigned(UInt64.max)),
            CBORMapEntry(.text("tag"), .tagged(24, .bytes([0xA0]))),
            CBORMapEntry(.text("float"), .float(1.5)),
            CBORMapEntry(.text("ünïcode"), .text("✓")),
        ])
        let encoded = CBOREncoder.encode(value)
        XCTAssertEqual(try CBORDecoder.decode(encoded), value)
        XCTAssertEqual(try CBORDecoder.decode([0xF9, 0x3C, 0x00]), .float(1.0))  // half precision
        XCTAssertEqual(try CBORDecoder.decode([0xFA, 0x3F, 0xC0, 0x00, 0x00]), .float(1.5))
        XCTAssertEqual(try CBORDecoder.decode([0x3B] + Array(repeating: 0xFF, count: 8)), .negative(UInt64.max))
    }

    func testReportsBytesConsumed() throws {
        let (value, consumed) = try CBORDecoder.decodePrefix([0x00, 0x82, 0x01, 0x02, 0xFF], from: 1)
        XCTAssertEqual(value, .array([CBORValue(1), CBORValue(2)]))
        XCTAssertEqual(consumed, 3)
        XCTAssertThrowsError(try CBORDecoder.decode([0x01, 0x02])) {
            XCTAssertEqual($0 as? CBORDecoder.Failure, .trailingBytes)
        }
    }

    func testRejectsIndefiniteLengths() {
        for bytes: [UInt8] in [[0x5F, 0x41, 0x00, 0xFF], [0x7F, 0xFF], [0x9F, 0xFF], [0xBF, 0xFF], [0xFF]] {
            XCTAssertThrowsError(try CBORDecoder.decode(bytes)) {
                XCTAssertEqual($0 as? CBORDecoder.Failure, .indefiniteLength)
            }
        }
        XCTAssertThrowsError(try CBORDecoder.decode([0x1C])) {
            XCTAssertEqual($0 as? CBORDecoder.Failure, .reservedValue)
        }
    }

    func testRejectsDeepNestingWithoutRecursingFurther() {
        XCTAssertNoThrow(try CBORDecoder.decode(Array(repeating: UInt8(0x81), count: 16) + [0x00]))
        let deep: [UInt8] = Array(repeating: 0x81, count: 17) + [0x00]
        XCTAssertThrowsError(try CBORDecoder.decode(deep)) { XCTAssertEqual($0 as? CBORDecoder.Failure, .tooDeep) }
        let veryDeep = Array(repeating: UInt8(0x81), count: 100_000)
        XCTAssertThrowsError(try CBORDecoder.decode(veryDeep)) { XCTAssertEqual($0 as? CBORDecoder.Failure, .tooDeep) }
        let tags = Array(repeating: UInt8(0xC6), count: 1_000) + [0x00]
        XCTAssertThrowsError(try CBORDecoder.decode(tags)) { XCTAssertEqual($0 as? CBORDecoder.Failure, .tooDeep) }
    }

    func testHugeDeclaredLengthsAreRejectedBeforeAllocation() {
        let huge: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        for major: UInt8 in [0x5B, 0x7B, 0x9B, 0xBB] {
            XCTAssertThrowsError(try CBORDecoder.decode([major] + huge)) {
                XCTAssertEqual($0 as? CBORDecoder.Failure, .truncated)
            }
        }
        // A plausible length that still exceeds the input.
        XCTAssertThrowsError(try CBORDecoder.decode([0x5A, 0x00, 0x10, 0x00, 0x00, 1, 2, 3]))
        // A map claiming more entries than the bytes could hold.
        XCTAssertThrowsError(try CBORDecoder.decode([0xB9, 0x00, 0x04, 0x01, 0x02, 0x03, 0x04]))
        // Too many items in total.
        let many: [UInt8] = [0x99, 0x13, 0x88] + Array(repeating: UInt8(0), count: 5_000)
        XCTAssertThrowsError(try CBORDecoder.decode(many)) { XCTAssertEqual($0 as? CBORDecoder.Failure, .tooManyItems) }
    }

    func testRejectsInvalidUTF8DuplicateKeysAndBadSimpleValues() {
        XCTAssertThrowsError(try CBORDecoder.decode([0x62, 0xC3, 0x28])) {
            XCTAssertEqual($0 as? CBORDecoder.Failure, .invalidUTF8)
        }
        XCTAssertThrowsError(try CBORDecoder.decode([0xA2, 0x01, 0x00, 0x01, 0x00])) {
            XCTAssertEqual($0 as? CBORDecoder.Failure, .duplicateMapKey)
        }
        XCTAssertThrowsError(try CBORDecoder.decode([0xF8, 0x10])) {
            XCTAssertEqual($0 as? CBORDecoder.Failure, .reservedValue)
        }
    }

    func testTruncationAtEveryOffset() throws {
        let value = CBORValue.map([
            CBORMapEntry(.text("fmt"), .text("packed")),
            CBORMapEntry(
                .text("attStmt"), .map([CBORMapEntry(.text("x5c"), .array([.bytes(Array(repeating: 9, count: 300))]))])),
            CBORMapEntry(.text("authData"), .bytes(Array(repeating: 1, count: 3_000))),
            CBORMapEntry(.text("nested"), .array([.array([.tagged(1, .float(2.5)), .text("é"), .negative(500)])])),
            CBORMapEntry(CBORValue(-1), .unsigned(1 << 40)),
        ])
        let encoded = CBOREncoder.encode(value)
        for length in 0..<encoded.count {
            XCTAssertThrowsError(try CBORDecoder.decodePrefix(Array(encoded.prefix(length))), "prefix \(length)") {
                XCTAssertEqual($0 as? CBORDecoder.Failure, .truncated, "prefix \(length)")
            }
        }
        XCTAssertEqual(try CBORDecoder.decode(encoded), value)
    }
}
