import CurlTransport
import StubHTTPServer
import XCTest

@testable import passkey_admin

/// The CLI's HTTP/1.1 client (libcurl) against a server that answers exact bytes, and its address parsing: a
/// response cut at any offset is a failure (never a wrong response), what is over a bound or malformed is refused,
/// and a failure's message names the address but never the token.
final class AdminHTTPClientTests: XCTestCase {
    let whole = Array(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"a\":\"bcd\"}".utf8)
    let token = "pkadm_0123456789abcdef_" + String(repeating: "A", count: 43)

    /// The response of a server that answers `bytes` and closes.
    func exchange(_ bytes: [UInt8], method: String = "GET", timeoutSeconds: Int = 5) throws(AdminHTTPFailure)
        -> HTTPResponse
    {
        let server = try! StubHTTPServer { _, _ in .raw(bytes) }
        defer { server.stop() }
        return try AdminHTTPClient.send(
            method: method, target: "/admin/v1/accounts?limit=1", bearer: token,
            to: try! AdminAPIAddress(url: "http://127.0.0.1:\(server.port)"), timeoutSeconds: timeoutSeconds)
    }

    func assertRefused(_ bytes: [UInt8], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        do {
            let response = try exchange(bytes)
            XCTFail("\(message): answered \(response.status)", file: file, line: line)
        } catch {
            XCTAssertFalse(error.description.contains(token), file: file, line: line)
        }
    }

    func testAResponseCutAtAnyOffsetIsAFailure() throws {
        for end in 0..<whole.count { assertRefused(Array(whole[..<end]), "cut at \(end)") }
        let response = try exchange(whole)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "application/json")
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "{\"a\":\"bcd\"}")
    }

    func testChunkedNoContentReadToTheEndAndInterimResponses() throws {
        let chunked = try exchange(
            Array(
                "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n2;x=y\r\nef\r\n0\r\n\r\n".utf8
            ))
        XCTAssertEqual(chunked.status, 404)
        XCTAssertEqual(chunked.body, Array("abcdef".utf8))
        assertRefused(
            Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n".utf8), "a chunked body cut short"
        )
        let empty = try exchange(Array("HTTP/1.1 204 No Content\r\n\r\n".utf8), method: "DELETE")
        XCTAssertEqual(empty.status, 204)
        XCTAssertEqual(empty.body, [])
        XCTAssertEqual(try exchange(Array("HTTP/1.1 200 OK\r\n\r\nabc".utf8)).body, Array("abc".utf8))
        let interim = try exchange(
            Array("HTTP/1.1 100 Continue\r\nx-interim: 1\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n".utf8)
        )
        XCTAssertEqual(interim.status, 201)
        XCTAssertNil(interim.headers["x-interim"], "an interim response's fields are not the answer's")
    }

    func testWhatIsMalformedOrOverItsBoundIsRefused() {
        for text in [
            "SMTP 220 hello\r\n\r\n", "HTTP/1.1 99 Low\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\ncontent-length: 99999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nFFFFFFF\r\n",
        ] {
            assertRefused(Array(text.utf8), text)
        }
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000)
        assertRefused(endless, "a head over 64 KiB")
        let large =
            Array("HTTP/1.1 200 OK\r\n\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 8 * 1024 * 1024 + 1)
        do {
            _ = try exchange(large)
            XCTFail("a body over 8 MiB was taken")
        } catch {
            XCTAssertTrue(error.description.contains("8 MiB"), error.description)
        }
    }

    func testTheRequestCarriesTheTokenOnlyInItsHeader() throws {
        let server = try StubHTTPServer { _, _ in .respond(200, [:], "{}") }
        defer { server.stop() }
        let address = try AdminAPIAddress(url: "http://127.0.0.1:\(server.port)")
        _ = try AdminHTTPClient.send(method: "DELETE", target: "/admin/v1/webhooks/x", bearer: token, to: address)
        let head = server.lastRequestHead
        XCTAssertTrue(head.hasPrefix("DELETE /admin/v1/webhooks/x HTTP/1.1\r\n"), head)
        XCTAssertTrue(head.contains("\r\nHost: 127.0.0.1:\(server.port)\r\n"), head)
        XCTAssertTrue(head.contains("\r\nAuthorization: Bearer \(token)\r\n"), head)
        XCTAssertTrue(head.contains("\r\nUser-Agent: passkey-admin\r\n"), head)
        XCTAssertTrue(head.contains("\r\nAccept: application/json\r\n"), head)
        XCTAssertTrue(head.contains("\r\nConnection: close\r\n"), head)
        XCTAssertTrue(head.contains("\r\nContent-Length: 0\r\n"), head)
        XCTAssertFalse(head.lowercased().contains("content-type"), "no body, no type: \(head)")
        XCTAssertFalse(head.lowercased().contains("expect:"), head)
    }

    func testNoListenerAndNoAnswerAreFailuresNamingTheAddress() throws {
        let server = try StubHTTPServer { _, _ in .hang }
        let port = server.port
        let address = try AdminAPIAddress(url: "http://127.0.0.1:\(port)")
        let started = ContinuousClock.now
        do {
            _ = try AdminHTTPClient.send(method: "GET", target: "/", bearer: token, to: address, timeoutSeconds: 1)
            XCTFail("a server that never answered answered")
        } catch {
            XCTAssertEqual(error.description, "no response from 127.0.0.1:\(port) within 1 s")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3))
        server.stop()
        do {
            _ = try AdminHTTPClient.send(method: "GET", target: "/", bearer: token, to: address, timeoutSeconds: 1)
            XCTFail("nobody listening answered")
        } catch {
            XCTAssertTrue(error.description.hasPrefix("cannot connect to 127.0.0.1:\(port): "), error.description)
            XCTAssertFalse(error.description.contains(token))
        }
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
