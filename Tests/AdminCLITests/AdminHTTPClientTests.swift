import XCTest

@testable import passkey_admin

/// The CLI's HTTP/1.1 response reader and its address parsing, without a server: a response cut at every offset is
/// incomplete (never a wrong response), and what is over a bound or malformed is refused.
final class AdminHTTPClientTests: XCTestCase {
    let whole = Array(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"a\":\"bcd\"}".utf8)

    func testAResponseCutAtEveryOffsetWaitsForTheRest() throws {
        for end in 0..<whole.count {
            XCTAssertNil(try AdminHTTPClient.parse(Array(whole[..<end]), complete: false), "cut at \(end)")
            XCTAssertThrowsError(try AdminHTTPClient.parse(Array(whole[..<end]), complete: true), "closed at \(end)")
        }
        let response = try XCTUnwrap(AdminHTTPClient.parse(whole, complete: false))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "application/json")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"a\":\"bcd\"}")
    }

    func testChunkedNoContentAndReadToTheEnd() throws {
        let chunked = Array(
            "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2;x=y\r\nef\r\n0\r\n\r\n".utf8)
        for end in 0..<(chunked.count - 4) {
            XCTAssertNil(try AdminHTTPClient.parse(Array(chunked[..<end]), complete: false), "cut at \(end)")
        }
        let response = try XCTUnwrap(AdminHTTPClient.parse(chunked, complete: false))
        XCTAssertEqual(response.status, 404)
        XCTAssertEqual(response.body, Array("abcdef".utf8))
        let empty = try XCTUnwrap(AdminHTTPClient.parse(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8), complete: false))
        XCTAssertEqual(empty.status, 204)
        XCTAssertEqual(empty.body, [])
        let unbounded = Array("HTTP/1.1 200 OK\r\n\r\nabc".utf8)
        XCTAssertNil(try AdminHTTPClient.parse(unbounded, complete: false))
        XCTAssertEqual(try AdminHTTPClient.parse(unbounded, complete: true)?.body, Array("abc".utf8))
        let interim = Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n".utf8)
        XCTAssertEqual(try AdminHTTPClient.parse(interim, complete: false)?.status, 201)
    }

    func testWhatIsMalformedOrOverItsBoundIsRefused() {
        for text in [
            "SMTP 220 hello\r\n\r\n", "HTTP/1.1 99 Low\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\ncontent-length: 9999999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nFFFFFFF\r\n",
        ] {
            XCTAssertThrowsError(try AdminHTTPClient.parse(Array(text.utf8), complete: true), text)
        }
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000)
        XCTAssertThrowsError(try AdminHTTPClient.parse(endless, complete: false))
    }

    func testAddresses() throws {
        let loopback = try AdminAPIAddress(url: "http://127.0.0.1:8081")
        XCTAssertEqual(loopback.host, "127.0.0.1")
        XCTAssertEqual(loopback.port, 8081)
        XCTAssertEqual(try AdminAPIAddress(url: "HTTP://admin.internal/").authority, "admin.internal:80")
        XCTAssertEqual(try AdminAPIAddress(url: "http://[::1]:9000").authority, "[::1]:9000")
        for bad in [
            "https://127.0.0.1:8081", "ftp://x", "http://", "http://u:p@host", "http://host/path", "http://host?x=1",
            "http://host:0", "http://host:65536", "http://host:80:80", "http://[::1", "http://[zz]:1", "http://a b",
            "http://host#f", "http://" + String(repeating: "a", count: 2100),
        ] {
            XCTAssertThrowsError(try AdminAPIAddress(url: bad), bad)
        }
        do {
            _ = try AdminAPIAddress(url: "https://admin.example")
        } catch {
            XCTAssertTrue(error.reason.contains("https is not supported"))
        }
    }

    func testQueryValuesArePercentEncoded() {
        XCTAssertEqual(AdminAPI.escaped("ada+1@example.com"), "ada%2B1%40example.com")
        XCTAssertEqual(AdminAPI.escaped("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9")
        XCTAssertEqual(AdminAPI.escaped("Az09-._~"), "Az09-._~")
    }

    func testPrintableTextHidesControlsAndBidiOverrides() {
        XCTAssertEqual(Printable.text("Ada\u{1B}[31m\u{202E}x\n"), "Ada?[31m?x?")
        XCTAssertEqual(Printable.clip("abcdef", 3), "abc…")
    }
}
