import AccessTokenSigning
import AccessTokens
import Foundation
import JSON
import PasskeySessionVerifier
import StubHTTPServer
import Synchronization
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The URLSession fetcher against a real socket: what it delivers, the body limit, the timeout, and a verifier
/// that uses it.
final class URLSessionKeySetFetcherTests: XCTestCase {
    func testItDeliversStatusHeadersAndBody() async throws {
        let server = try StubHTTPServer { _, _ in
            .respond(200, ["Content-Type": "application/jwk-set+json", "Cache-Control": "max-age=60"], #"{"keys":[]}"#)
        }
        defer { server.stop() }
        let response = try await URLSessionKeySetFetcher().get(server.keySetURL)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["cache-control"], "max-age=60")
        XCTAssertEqual(response.body, Array(#"{"keys":[]}"#.utf8))
        XCTAssertTrue(server.lastRequestHead.hasPrefix("GET /.well-known/jwks.json HTTP/1.1"), server.lastRequestHead)
    }

    func testABodyOverTheLimitFails() async throws {
        let server = try StubHTTPServer { _, _ in .respond(200, [:], String(repeating: " ", count: 5000)) }
        defer { server.stop() }
        do {
            let response = try await URLSessionKeySetFetcher(maximumBodySize: 4096).get(server.keySetURL)
            XCTFail("read \(response.body.count) bytes")
        } catch let error as KeySetFetchError {
            XCTAssertEqual(error, .bodyTooLarge(limit: 4096))
        }
        let atTheLimit = try await URLSessionKeySetFetcher(maximumBodySize: 5000).get(server.keySetURL)
        XCTAssertEqual(atTheLimit.body.count, 5000)
    }

    func testABodyOfNoDeclaredLengthIsCutOffAtTheLimit() async throws {
        let server = try StubHTTPServer { _, _ in .stream(String(repeating: " ", count: 200_000)) }
        defer { server.stop() }
        do {
            let response = try await URLSessionKeySetFetcher(maximumBodySize: 4096).get(server.keySetURL)
            XCTFail("read \(response.body.count) bytes")
        } catch let error as KeySetFetchError {
            XCTAssertEqual(error, .bodyTooLarge(limit: 4096))
        }
    }

    func testNoAnswerTimesOut() async throws {
        let server = try StubHTTPServer { _, _ in .hang }
        defer { server.stop() }
        let started = ContinuousClock.now
        do {
            _ = try await URLSessionKeySetFetcher(timeout: .milliseconds(300)).get(server.keySetURL)
            XCTFail("answered")
        } catch let error as KeySetFetchError {
            XCTAssertEqual(error, .timedOut(after: .milliseconds(300)))
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertTrue(elapsed >= .milliseconds(250) && elapsed < .seconds(5), "\(elapsed)")
    }

    func testAVerifierFetchesItsKeysOverHTTP() async throws {
        let key = TestSigningKey(.es256)
        let jwks = JSONWriter.string(JSONWebKey.keySet([key.publicKey]))
        let server = try StubHTTPServer { _, _ in .respond(200, ["Cache-Control": "public, max-age=300"], jwks) }
        defer { server.stop() }
        let issuer = "http://127.0.0.1:\(server.port)"
        let verifier = PasskeySessionVerifier(
            configuration: .init(issuer: issuer, audience: issuer, keySetURL: server.keySetURL))
        try await verifier.loadKeys()
        let now = Int64(Date().timeIntervalSince1970)
        let session = try await verifier.verify(
            key.token(TestSigningKey.claims(issuer: issuer, audience: issuer, now: now)))
        XCTAssertEqual(session.accountID, "acc_01")
        XCTAssertEqual(server.requestCount, 1)
    }

    func testAnUnreachableKeySetURLMakesTheKeySetUnavailable() async throws {
        let server = try StubHTTPServer { _, _ in .hang }
        let url = server.keySetURL
        server.stop()
        let verifier = PasskeySessionVerifier(
            configuration: .init(issuer: "http://127.0.0.1", audience: "http://127.0.0.1", keySetURL: url))
        do {
            try await verifier.loadKeys()
            XCTFail("loaded")
        } catch {
            XCTAssertEqual(error.code, .keySetUnavailable, "\(error)")
        }
    }
}

extension StubHTTPServer {
    /// The key set's URL on this server.
    var keySetURL: URL { url(path: "/.well-known/jwks.json") }
}
