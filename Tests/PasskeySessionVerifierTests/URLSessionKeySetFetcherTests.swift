import AccessTokenSigning
import AccessTokens
import Foundation
import JSON
import PasskeySessionVerifier
import Synchronization
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The URLSession fetcher against a real socket: what it delivers, the body limit, the timeout, and a verifier
/// that uses it.
final class URLSessionKeySetFetcherTests: XCTestCase {
    func testItDeliversStatusHeadersAndBody() async throws {
        let server = try KeySetServer { _ in
            .respond(200, ["Content-Type": "application/jwk-set+json", "Cache-Control": "max-age=60"], #"{"keys":[]}"#)
        }
        defer { server.stop() }
        let response = try await URLSessionKeySetFetcher().get(server.url)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["cache-control"], "max-age=60")
        XCTAssertEqual(response.body, Array(#"{"keys":[]}"#.utf8))
        XCTAssertTrue(server.lastRequestHead.hasPrefix("GET /.well-known/jwks.json HTTP/1.1"), server.lastRequestHead)
    }

    func testABodyOverTheLimitFails() async throws {
        let server = try KeySetServer { _ in .respond(200, [:], String(repeating: " ", count: 5000)) }
        defer { server.stop() }
        do {
            let response = try await URLSessionKeySetFetcher(maximumBodySize: 4096).get(server.url)
            XCTFail("read \(response.body.count) bytes")
        } catch let error as KeySetFetchError {
            XCTAssertEqual(error, .bodyTooLarge(limit: 4096))
        }
        let atTheLimit = try await URLSessionKeySetFetcher(maximumBodySize: 5000).get(server.url)
        XCTAssertEqual(atTheLimit.body.count, 5000)
    }

    func testABodyOfNoDeclaredLengthIsCutOffAtTheLimit() async throws {
        let server = try KeySetServer { _ in .stream(String(repeating: " ", count: 200_000)) }
        defer { server.stop() }
        do {
            let response = try await URLSessionKeySetFetcher(maximumBodySize: 4096).get(server.url)
            XCTFail("read \(response.body.count) bytes")
        } catch let error as KeySetFetchError {
            XCTAssertEqual(error, .bodyTooLarge(limit: 4096))
        }
    }

    func testNoAnswerTimesOut() async throws {
        let server = try KeySetServer { _ in .hang }
        defer { server.stop() }
        let started = ContinuousClock.now
        do {
            _ = try await URLSessionKeySetFetcher(timeout: .milliseconds(300)).get(server.url)
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
        let server = try KeySetServer { _ in .respond(200, ["Cache-Control": "public, max-age=300"], jwks) }
        defer { server.stop() }
        let issuer = "http://127.0.0.1:\(server.port)"
        let verifier = PasskeySessionVerifier(
            configuration: .init(issuer: issuer, audience: issuer, keySetURL: server.url))
        try await verifier.loadKeys()
        let now = Int64(Date().timeIntervalSince1970)
        let session = try await verifier.verify(
            key.token(TestSigningKey.claims(issuer: issuer, audience: issuer, now: now)))
        XCTAssertEqual(session.accountID, "acc_01")
        XCTAssertEqual(server.requestCount, 1)
    }

    func testAnUnreachableKeySetURLMakesTheKeySetUnavailable() async throws {
        let server = try KeySetServer { _ in .hang }
        let url = server.url
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

/// A tiny HTTP/1.1 server on 127.0.0.1 serving `/.well-known/jwks.json`: each connection gets one answer from the
/// script and is closed, or is held open without one until the server stops.
final class KeySetServer: Sendable {
    enum Reply: Sendable {
        /// Answers with a status, header fields and a body.
        case respond(Int, [String: String], String)
        /// Answers 200 with a body whose end is the end of the connection (no length declared).
        case stream(String)
        /// Reads the request and never answers.
        case hang
    }

    let port: Int
    private let listener: Int32
    private let handler: @Sendable (_ head: String) -> Reply
    private let state = Mutex<(count: Int, head: String, open: [Int32], stopped: Bool)>((0, "", [], false))

    init(_ handler: @escaping @Sendable (_ head: String) -> Reply) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound, listen(fd, 64) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/.well-known/jwks.json")! }
    var requestCount: Int { state.withLock { $0.count } }
    var lastRequestHead: String { state.withLock { $0.head } }

    /// Closes the listener and every connection held open.
    func stop() {
        let sockets = state.withLock { state -> [Int32] in
            state.stopped = true
            defer { state.open = [] }
            return state.open
        }
        for socket in sockets { close(socket) }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            guard state.withLock({ !$0.stopped }) else {
                close(connection)
                return
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < 4 || Array(head.suffix(4)) != Array("\r\n\r\n".utf8) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else {
                close(connection)
                return
            }
            head += buffer[0..<count]
        }
        let text = String(decoding: head, as: UTF8.self)
        state.withLock {
            $0.count += 1
            $0.head = text
        }
        switch handler(text) {
        case .hang:
            state.withLock { $0.open.append(connection) }
        case .respond(let status, let headers, let body):
            var response = "HTTP/1.1 \(status) Reply\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
            for (name, value) in headers { response += "\(name): \(value)\r\n" }
            reply(response + "\r\n" + body, on: connection)
        case .stream(let body):
            reply("HTTP/1.1 200 Reply\r\nConnection: close\r\n\r\n" + body, on: connection)
        }
    }

    private func reply(_ response: String, on connection: Int32) {
        let bytes = Array(response.utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { break }
            written += count
        }
        close(connection)
    }
}
