import CurlTransport
import StubHTTPServer
import XCTest

/// `HTTPClient`'s body limit in its two forms: by default a body over the limit fails the request
/// (`responseTooLarge`); with `keepsStartOfLongerBody` (what `passkey-admin doctor` asks for, to report a
/// well-known file over its size as devices would see it) the response keeps the body's start and says it was cut.
final class HTTPClientBodyLimitTests: XCTestCase {
    func get(_ body: String, limit: Int, keepsStart: Bool, chunked: Bool = false) throws(HTTPTransportError)
        -> HTTPResponse
    {
        let framing = chunked ? "transfer-encoding: chunked" : "content-length: \(body.utf8.count)"
        let payload = chunked ? String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n" : body
        let bytes = Array("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\(framing)\r\n\r\n\(payload)".utf8)
        let server = try! StubHTTPServer { _, _ in .raw(bytes) }
        defer { server.stop() }
        return try HTTPClient().perform(
            HTTPRequest(
                method: "GET", url: "http://127.0.0.1:\(server.port)/.well-known/assetlinks.json", headers: [],
                userAgent: "test", connectTimeout: .seconds(5), timeout: .seconds(5), collectsCertificates: true,
                headLimit: 64 * 1024, bodyLimit: limit, keepsStartOfLongerBody: keepsStart))
    }

    func testALongerBodyKeepsItsStartAndSaysSoWhenAsked() throws {
        let body = String(repeating: "x", count: 100_000)
        for chunked in [false, true] {
            let response = try get(body, limit: 1000, keepsStart: true, chunked: chunked)
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("content-type"), "application/json")
            XCTAssertEqual(response.body, Array(repeating: UInt8(ascii: "x"), count: 1000), "chunked: \(chunked)")
            XCTAssertTrue(response.bodyExceededLimit)
            XCTAssertEqual(response.peerCertificates, [], "plain HTTP has none")
        }
    }

    func testABodyAtTheLimitIsWhole() throws {
        let response = try get(String(repeating: "y", count: 1000), limit: 1000, keepsStart: true)
        XCTAssertEqual(response.body.count, 1000)
        XCTAssertFalse(response.bodyExceededLimit)
    }

    func testALongerBodyFailsTheRequestByDefault() {
        for chunked in [false, true] {
            do {
                let response = try get(
                    String(repeating: "x", count: 5000), limit: 1000, keepsStart: false, chunked: chunked)
                XCTFail("answered \(response.status) with \(response.body.count) bytes")
            } catch {
                XCTAssertEqual(error.code, .responseTooLarge, "chunked: \(chunked)")
            }
        }
    }
}
