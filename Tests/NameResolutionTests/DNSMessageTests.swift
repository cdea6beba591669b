import XCTest

@testable import NameResolution

/// The DNS codec on hand-built messages: queries byte for byte, answers with and without compression, the
/// response codes, and every malformed or cut-short response.
final class DNSMessageTests: XCTestCase {
    func testQueryBytes() throws {
        let query = try DNSMessage.query(id: 0xBEEF, name: "verification-service.passkeys.svc.", type: .a)
        let expectedName: [UInt8] =
            [20] + Array("verification-service".utf8) + [8] + Array("passkeys".utf8) + [3] + Array("svc".utf8) + [0]
        XCTAssertEqual(Array(query[0..<12]), [0xBE, 0xEF, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(Array(query[12..<(12 + expectedName.count)]), expectedName)
        XCTAssertEqual(
            Array(query[(12 + expectedName.count)...]), [0, 1, 0, 1, 0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0])
        let v6 = try DNSMessage.query(id: 1, name: "a.b", type: .aaaa)
        XCTAssertEqual(Array(v6[12..<22]), [1, 97, 1, 98, 0, 0, 28, 0, 1, 0])
    }

    func testInvalidNamesAreRefused() {
        let label63 = String(repeating: "a", count: 63)
        for name in [
            "", ".", "a..b", String(repeating: "a", count: 64), "bad name", "ünicode.test", "a/b",
            Array(repeating: label63, count: 4).joined(separator: "."),
        ] {
            XCTAssertThrowsError(try DNSMessage.query(id: 1, name: name, type: .a), name) {
                XCTAssertEqual(($0 as? DNSError)?.code, .invalidName, name)
            }
        }
        XCTAssertNoThrow(try DNSMessage.query(id: 1, name: "_grpc._tcp.\(label63)", type: .a))
    }

    func testAnswersWithCompressedAndFullNames() throws {
        let response = Self.response(
            id: 7,
            answers: [
                Self.record(name: [0xC0, 12], type: 5, data: [3] + Array("alt".utf8) + [0xC0, 12]),  // a CNAME: skipped
                Self.record(name: [0xC0, 12], type: 1, data: [10, 0, 0, 7]),
                Self.record(
                    name: [4] + Array("echo".utf8) + [4] + Array("test".utf8) + [0], type: 1, data: [10, 0, 0, 8]),
                Self.record(name: [0xC0, 12], type: 1, recordClass: 3, data: [10, 0, 0, 9]),  // not class IN
                Self.record(name: [0xC0, 12], type: 28, data: Array(repeating: 0xFD, count: 16)),
            ])
        XCTAssertEqual(
            try DNSMessage.addresses(inResponse: response, id: 7, type: .a), [[10, 0, 0, 7], [10, 0, 0, 8]])
        XCTAssertEqual(
            try DNSMessage.addresses(inResponse: response, id: 7, type: .aaaa), [Array(repeating: 0xFD, count: 16)])
    }

    func testResponseCodes() throws {
        XCTAssertEqual(
            try DNSMessage.addresses(inResponse: Self.response(id: 3, rcode: 3, answers: []), id: 3, type: .a), [])
        for rcode: UInt8 in [1, 2, 5] {
            XCTAssertThrowsError(
                try DNSMessage.addresses(inResponse: Self.response(id: 3, rcode: rcode, answers: []), id: 3, type: .a)
            ) { XCTAssertEqual(($0 as? DNSError)?.code, .serverFailure) }
        }
        var truncated = Self.response(id: 3, answers: [])
        truncated[2] |= 0x02
        XCTAssertThrowsError(try DNSMessage.addresses(inResponse: truncated, id: 3, type: .a)) {
            XCTAssertEqual(($0 as? DNSError)?.code, .truncated)
        }
    }

    func testResponsesThatAreNotAnswersToTheQuery() {
        let good = Self.response(id: 9, answers: [Self.record(name: [0xC0, 12], type: 1, data: [1, 2, 3, 4])])
        XCTAssertFalse(DNSMessage.isResponse(good, to: 8))
        var query = good
        query[2] &= 0x7F
        XCTAssertFalse(DNSMessage.isResponse(query, to: 9))
        XCTAssertTrue(DNSMessage.isResponse(good, to: 9))
        for bad in [
            Self.response(id: 9, answers: [Self.record(name: [0xC0, 12], type: 1, data: [1, 2, 3])]),  // short A
            Self.response(id: 9, answers: [Self.record(name: [0x80, 12], type: 1, data: [1, 2, 3, 4])]),  // label kind
            Self.response(id: 9, answers: [Self.record(name: Array(repeating: 1, count: 300), type: 1, data: [])]),
        ] {
            XCTAssertThrowsError(try DNSMessage.addresses(inResponse: bad, id: 9, type: .a)) {
                XCTAssertEqual(($0 as? DNSError)?.code, .malformedResponse)
            }
        }
        var tooMany = good
        tooMany[6] = 0xFF
        XCTAssertThrowsError(try DNSMessage.addresses(inResponse: tooMany, id: 9, type: .a))
    }

    func testEveryTruncationIsRefusedAndNoneCrashes() {
        let response = Self.response(
            id: 5,
            answers: [
                Self.record(name: [0xC0, 12], type: 1, data: [10, 0, 0, 1]),
                Self.record(name: [0xC0, 12], type: 28, data: Array(repeating: 1, count: 16)),
            ])
        XCTAssertEqual(try DNSMessage.addresses(inResponse: response, id: 5, type: .a).count, 1)
        for length in 0..<response.count {
            XCTAssertThrowsError(try DNSMessage.addresses(inResponse: Array(response[0..<length]), id: 5, type: .a))
        }
        var flipped = response
        for index in 0..<flipped.count {
            for bit in 0..<8 {
                flipped[index] ^= 1 << bit
                _ = try? DNSMessage.addresses(inResponse: flipped, id: 5, type: .a)
                flipped[index] ^= 1 << bit
            }
        }
    }

    /// A response to a query for echo.test (the question at offset 12, which answers may point back to).
    static func response(id: UInt16, rcode: UInt8 = 0, answers: [[UInt8]]) -> [UInt8] {
        var bytes: [UInt8] = [
            UInt8(id >> 8), UInt8(id & 0xFF), 0x81, 0x80 | rcode, 0, 1, 0, UInt8(answers.count), 0, 0, 0, 0,
        ]
        bytes += [4] + Array("echo".utf8) + [4] + Array("test".utf8) + [0, 0, 1, 0, 1]
        for answer in answers { bytes += answer }
        return bytes
    }

    static func record(name: [UInt8], type: UInt16, recordClass: UInt16 = 1, data: [UInt8]) -> [UInt8] {
        name + [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(recordClass >> 8), UInt8(recordClass & 0xFF), 0, 0, 0, 30]
            + [UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
    }
}
