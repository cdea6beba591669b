import XCTest

@testable import GRPC

final class WireTests: XCTestCase {
    func testDeframerByteAtATime() throws {
        let messages: [[UInt8]] = [[], [1], Array(repeating: 7, count: 300), [9, 8, 7]]
        var stream: [UInt8] = []
        for message in messages { GRPCMessageFramer.frame(message, into: &stream) }
        var deframer = GRPCMessageDeframer(maxMessageSize: 1024)
        var received: [[UInt8]] = []
        for byte in stream {
            deframer.append([byte])
            while let message = try deframer.next() { received.append(message) }
        }
        XCTAssertEqual(received, messages)
        XCTAssertEqual(deframer.bufferedByteCount, 0)
    }

    func testDeframerEverySplit() throws {
        let stream = GRPCMessageFramer.frame([1, 2, 3, 4]) + GRPCMessageFramer.frame([5])
        for split in 0...stream.count {
            var deframer = GRPCMessageDeframer(maxMessageSize: 16)
            var received: [[UInt8]] = []
            deframer.append(Array(stream[..<split]))
            while let message = try deframer.next() { received.append(message) }
            deframer.append(Array(stream[split...]))
            while let message = try deframer.next() { received.append(message) }
            XCTAssertEqual(received, [[1, 2, 3, 4], [5]], "split at \(split)")
        }
    }

    func testTruncatedFrameWaitsForMore() throws {
        let stream = GRPCMessageFramer.frame([1, 2, 3])
        for length in 0..<stream.count {
            var deframer = GRPCMessageDeframer(maxMessageSize: 16)
            deframer.append(Array(stream[..<length]))
            XCTAssertNil(try deframer.next())
            XCTAssertEqual(deframer.bufferedByteCount, length)
        }
    }

    func testOversizedMessageIsRefusedFromItsHeader() {
        var deframer = GRPCMessageDeframer(maxMessageSize: 4 * 1024 * 1024)
        deframer.append([0, 0x00, 0x40, 0x00, 0x01])  // 4 MiB + 1, no payload yet
        XCTAssertThrowsError(try deframer.next()) { error in
            XCTAssertEqual(
                error as? GRPCMessageDeframer.Failure,
                .messageTooLarge(declared: 4 * 1024 * 1024 + 1, limit: 4 * 1024 * 1024))
        }
    }

    func testCompressedAndInvalidFlags() {
        var compressed = GRPCMessageDeframer(maxMessageSize: 16)
        compressed.append([1, 0, 0, 0, 1, 0])
        XCTAssertThrowsError(try compressed.next()) {
            XCTAssertEqual($0 as? GRPCMessageDeframer.Failure, .compressionNotSupported)
        }
        var invalid = GRPCMessageDeframer(maxMessageSize: 16)
        invalid.append([2, 0, 0, 0, 0])
        XCTAssertThrowsError(try invalid.next()) { XCTAssertEqual($0 as? GRPCMessageDeframer.Failure, .invalidFlag) }
    }

    func testTimeoutParsing() {
        XCTAssertEqual(GRPCTimeout.parse("1S"), 1_000_000_000)
        XCTAssertEqual(GRPCTimeout.parse("100m"), 100_000_000)
        XCTAssertEqual(GRPCTimeout.parse("5u"), 5_000)
        XCTAssertEqual(GRPCTimeout.parse("7n"), 7)
        XCTAssertEqual(GRPCTimeout.parse("2M"), 120_000_000_000)
        XCTAssertEqual(GRPCTimeout.parse("1H"), 3_600_000_000_000)
        XCTAssertEqual(GRPCTimeout.parse("99999999H"), UInt64.max, "saturates")
        for bad in ["", "S", "1", "1x", "-1S", "123456789S", "1.5S", " 1S"] {
            XCTAssertNil(GRPCTimeout.parse(bad), bad)
        }
    }

    func testTimeoutEncodingNeverShortens() {
        for nanoseconds: UInt64 in [1, 999, 1_000_000, 123_456_789_123, 99_999_999_999_999] {
            let text = GRPCTimeout.encode(nanoseconds: nanoseconds)
            XCTAssertLessThanOrEqual(text.utf8.count, 9)
            XCTAssertGreaterThanOrEqual(GRPCTimeout.parse(text) ?? 0, nanoseconds, text)
        }
    }

    func testPercentEncoding() {
        XCTAssertEqual(GRPCPercentEncoding.encode("plain text"), "plain text")
        XCTAssertEqual(GRPCPercentEncoding.encode("50% off"), "50%25 off")
        XCTAssertEqual(GRPCPercentEncoding.encode("é\n"), "%C3%A9%0A")
        for text in ["", "a%b", "日本語 ✓", "\u{0}\u{7f}~"] {
            XCTAssertEqual(GRPCPercentEncoding.decode(GRPCPercentEncoding.encode(text)), text)
        }
        XCTAssertEqual(GRPCPercentEncoding.decode("bad %zz and %4"), "bad %zz and %4")
    }

    func testStatusMapping() {
        XCTAssertEqual(GRPCStatusCode(headerValue: "0"), .ok)
        XCTAssertEqual(GRPCStatusCode(headerValue: "16"), .unauthenticated)
        XCTAssertEqual(GRPCStatusCode(headerValue: "17"), .unknown)
        XCTAssertEqual(GRPCStatusCode(headerValue: "x"), .unknown)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(400), .internal)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(401), .unauthenticated)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(403), .permissionDenied)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(404), .unimplemented)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(503), .unavailable)
        XCTAssertEqual(GRPCStatusCode.fromHTTPStatus(500), .unknown)
        XCTAssertEqual(GRPCStatusCode.allCases.count, 17)
    }

    func testBinaryMetadataRoundTrip() {
        var metadata = Metadata()
        metadata.add("X-Trace", "abc")
        metadata.add("x-key-bin", bytes: [0, 1, 2, 250, 251, 252, 253])
        let fields = metadata.headerFields()
        XCTAssertEqual(fields.map(\.name), ["x-trace", "x-key-bin"])
        let decoded = Metadata(headers: fields + [(":path", "/a/b"), ("grpc-timeout", "1S"), ("te", "trailers")])
        XCTAssertEqual(decoded, metadata)
        XCTAssertEqual(decoded.bytes("x-key-bin"), [0, 1, 2, 250, 251, 252, 253])
        // Received -bin values may be padded; undecodable ones are dropped.
        XCTAssertEqual(
            Metadata(headers: [("x-b-bin", "AAEC+vv8/Q==")]).bytes("x-b-bin"), [0, 1, 2, 250, 251, 252, 253])
        XCTAssertNil(Metadata(headers: [("x-b-bin", "A")]).bytes("x-b-bin"))
        XCTAssertNil(Metadata(headers: [("x-b-bin", "**")]).bytes("x-b-bin"))
    }

    /// A fuzz entry point: random bodies, fed in random splits, never crash the deframer or exceed its limit.
    func testRandomBodiesNeverCrash() {
        var state: UInt64 = 7
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        for _ in 0..<2000 {
            var deframer = GRPCMessageDeframer(maxMessageSize: 64)
            let length = Int(next() % 200)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: next()) }
            if !bytes.isEmpty && next() % 2 == 0 { bytes[0] = 0 }
            var offset = 0
            loop: while offset < bytes.count {
                let take = min(bytes.count - offset, Int(next() % 17) + 1)
                deframer.append(Array(bytes[offset..<(offset + take)]))
                offset += take
                do {
                    while let message = try deframer.next() { XCTAssertLessThanOrEqual(message.count, 64) }
                } catch {
                    break loop
                }
            }
        }
    }
}
