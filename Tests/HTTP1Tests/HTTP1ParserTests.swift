import HTTP1
import HTTPMessages
import XCTest

final class HTTP1ParserTests: XCTestCase {
    func parseAll(_ text: String, limits: HTTP1Limits = HTTP1Limits(), byteAtATime: Bool = false) throws
        -> [HTTP1ParserEvent]
    {
        var parser = HTTP1RequestParser(limits: limits)
        var events: [HTTP1ParserEvent] = []
        let bytes = Array(text.utf8)
        let pieces: [[UInt8]] = byteAtATime ? bytes.map { [$0] } : [bytes]
        for piece in pieces {
            parser.append(piece)
            while let event = try parser.next() { events.append(event) }
        }
        return events
    }

    func requests(_ events: [HTTP1ParserEvent]) -> [HTTP1Request] {
        events.compactMap { if case .request(let request) = $0 { request } else { nil } }
    }

    let post =
        "POST /v1/sessions/password?x=1 HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + "Content-Length: 17\r\n\r\n{\"email\":\"a@b.c\"}"

    func testPostWithContentLengthWholeAndByteAtATime() throws {
        for byteAtATime in [false, true] {
            let parsed = requests(try parseAll(post, byteAtATime: byteAtATime))
            XCTAssertEqual(parsed.count, 1)
            XCTAssertEqual(parsed[0].method, "POST")
            XCTAssertEqual(parsed[0].target, "/v1/sessions/password?x=1")
            XCTAssertEqual(parsed[0].headers["content-type"], "application/json")
            XCTAssertEqual(parsed[0].headers["CONTENT-TYPE"], "application/json")
            XCTAssertEqual(String(decoding: parsed[0].body, as: UTF8.self), "{\"email\":\"a@b.c\"}")
            XCTAssertTrue(parsed[0].keepAlive)
        }
    }

    func testPipelinedRequestsAndKeepAliveRules() throws {
        let text =
            "GET /a HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /b HTTP/1.0\r\n\r\n"
            + "GET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            + "GET /d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let parsed = requests(try parseAll(text))
        XCTAssertEqual(parsed.map(\.target), ["/a", "/b", "/c", "/d"])
        XCTAssertEqual(parsed.map(\.keepAlive), [true, false, true, false])
    }

    func testChunkedBodyWholeAndByteAtATime() throws {
        let text =
            "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: yes\r\n\r\n"
        for byteAtATime in [false, true] {
            let parsed = requests(try parseAll(text, byteAtATime: byteAtATime))
            XCTAssertEqual(parsed.count, 1)
            XCTAssertEqual(String(decoding: parsed[0].body, as: UTF8.self), "hello, world")
        }
    }

    func testExpectContinueIsAnnouncedBeforeTheBody() throws {
        var parser = HTTP1RequestParser()
        parser.append(Array("POST /x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        XCTAssertEqual(try parser.next(), .expectContinue)
        XCTAssertNil(try parser.next())
        parser.append(Array("{}".utf8))
        guard case .request(let request) = try parser.next() else { return XCTFail("no request") }
        XCTAssertEqual(request.body, Array("{}".utf8))
    }

    func testErrorsAndTheirStatuses() {
        let cases: [(String, Int)] = [
            ("GET / HTTP/1.1\r\n\r\n", 400),  // no Host
            ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
            ("GET /  HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\rInjected: y\r\n\r\n", 400),
            ("GET / HTTP/1.1\nHost: x\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: x\r\nBad: a\u{1}b\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 65537\r\n\r\n", 413),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n", 413),
            ("GET /" + String(repeating: "a", count: 20_000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 431),
            ("GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-A: b\r\n", count: 101) + "\r\n", 431),
        ]
        for (text, status) in cases {
            XCTAssertThrowsError(try parseAll(text), text.debugDescription) { error in
                XCTAssertEqual((error as? HTTP1ParseError)?.status, status, text.debugDescription)
            }
        }
    }

    func testChunkSizesAreHexDigitsOnlyWithoutSignOrSpace() throws {
        let head = "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        for size in ["+2", "-1", "-0", "+0", " 2", "2 ", "0x2", "2_0", "\u{FF12}"] {
            for byteAtATime in [false, true] {
                XCTAssertThrowsError(
                    try parseAll(head + size + "\r\nab\r\n0\r\n\r\n", byteAtATime: byteAtATime), size.debugDescription
                ) { error in
                    XCTAssertEqual((error as? HTTP1ParseError)?.status, 400, size.debugDescription)
                }
            }
        }
        for (size, body) in [("2", "ab"), ("0A", "0123456789"), ("a", "0123456789"), ("00000002", "ab")] {
            let parsed = requests(try parseAll(head + size + "\r\n" + body + "\r\n0\r\n\r\n"))
            XCTAssertEqual(parsed.map { String(decoding: $0.body, as: UTF8.self) }, [body], size)
        }
    }

    func testAnOversizedHeadIsRefusedWithoutWaitingForItsEnd() {
        var parser = HTTP1RequestParser()
        parser.append(Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 17_000)).utf8))
        XCTAssertThrowsError(try parser.next()) { XCTAssertEqual(($0 as? HTTP1ParseError)?.status, 431) }
        // The parser stays failed.
        parser.append(Array("\r\n\r\n".utf8))
        XCTAssertThrowsError(try parser.next())
    }

    func testLimitsGiveTheSameAnswerWhicheverWayTheBytesArrive() throws {
        // Found by Tests/Fuzz/FuzzHTTP1Request: a head of exactly the limit was refused when its last bytes came
        // late, and accepted when the whole request came in one read; a chunk line the other way round.
        let limits = HTTP1Limits(maximumHeadBytes: 64, maximumHeaderCount: 8, maximumBodyBytes: 64)
        let start = "GET / HTTP/1.1\r\nHost: x\r\nX: "
        let exact = start + String(repeating: "a", count: 64 - start.utf8.count) + "\r\n\r\n"
        let over = start + String(repeating: "a", count: 65 - start.utf8.count) + "\r\n\r\n"
        let chunked = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        // Chunk lines may be 1024 bytes, trailer lines as long as the head limit.
        let longExtension = chunked + "1;" + String(repeating: "e", count: 1023) + "\r\na\r\n0\r\n\r\n"
        let longestExtension = chunked + "1;" + String(repeating: "e", count: 1022) + "\r\na\r\n0\r\n\r\n"
        let longTrailer = chunked + "0\r\nT: " + String(repeating: "t", count: 62) + "\r\n\r\n"
        let longestTrailer = chunked + "0\r\nT: " + String(repeating: "t", count: 61) + "\r\n\r\n"
        // A trailer line over the limit with a bare CR after it: too long, whether or not the CR has arrived.
        let longThenBareCR = chunked + "0\r\nT: " + String(repeating: "t", count: 70) + "\rx\n\r\n"
        for byteAtATime in [false, true] {
            XCTAssertThrowsError(try parseAll(longThenBareCR, limits: limits, byteAtATime: byteAtATime)) {
                XCTAssertEqual(($0 as? HTTP1ParseError)?.status, 431, "\(byteAtATime)")
            }
            XCTAssertEqual(requests(try parseAll(exact, limits: limits, byteAtATime: byteAtATime)).count, 1)
            XCTAssertEqual(requests(try parseAll(longestExtension, limits: limits, byteAtATime: byteAtATime)).count, 1)
            XCTAssertEqual(requests(try parseAll(longestTrailer, limits: limits, byteAtATime: byteAtATime)).count, 1)
            for text in [over, longExtension, longTrailer] {
                XCTAssertThrowsError(try parseAll(text, limits: limits, byteAtATime: byteAtATime)) {
                    XCTAssertEqual(($0 as? HTTP1ParseError)?.status, 431, "\(text.prefix(80)) \(byteAtATime)")
                }
            }
        }
    }

    func testTruncatedRequestsNeverProduceARequest() throws {
        let bytes = Array(post.utf8)
        for cut in 0..<bytes.count {
            var parser = HTTP1RequestParser()
            parser.append(bytes[0..<cut])
            XCTAssertNil(try parser.next(), "cut at \(cut)")
        }
    }

    func testResponseSerialization() {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("X-Evil", "a\r\nInjected: 1")
        let response = HTTPResponse(status: 201, headers: headers, body: Array("{}".utf8))
        XCTAssertEqual(
            String(decoding: HTTP1ResponseSerializer.serialize(response, keepAlive: false), as: UTF8.self),
            "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nx-evil: aInjected: 1\r\ncontent-length: 2\r\n"
                + "connection: close\r\n\r\n{}")
        XCTAssertEqual(
            String(
                decoding: HTTP1ResponseSerializer.serialize(HTTPResponse(status: 204), keepAlive: true), as: UTF8.self),
            "HTTP/1.1 204 No Content\r\n\r\n")
    }
}
