import Foundation
import PasskeyClient
import StubHTTPServer
import XCTest

/// The client over URLSession against a real socket: timeouts, cancellation, redirects and retries as an app meets
/// them.
final class URLSessionTransportTests: XCTestCase {
    func client(_ server: StubHTTPServer, timeout: Duration = .seconds(5), retry: PasskeyAPIClient.RetryPolicy = .none)
        -> PasskeyAPIClient
    {
        PasskeyAPIClient(
            baseURL: server.url(), configuration: .init(timeout: timeout, retryPolicy: retry),
            transport: URLSessionTransport())
    }

    func testAResponseArrivesWithItsHeadersAndBody() async throws {
        let server = try StubHTTPServer { head, _ in
            XCTAssertTrue(head.hasPrefix("GET /.well-known/webauthn HTTP/1.1"), head)
            return .respond(
                200, ["Content-Type": "application/json", "X-Request-ID": "abc"],
                #"{"origins":["https://example.com"]}"#)
        }
        defer { server.stop() }
        let response = try await client(server).send(RelatedOriginsOperation())
        XCTAssertEqual(response.value.origins, ["https://example.com"])
        XCTAssertEqual(response.requestID, "abc")
        XCTAssertEqual(response.headers["content-type"], "application/json")
    }

    func testNoAnswerTimesOut() async throws {
        let server = try StubHTTPServer { _, _ in .hang }
        defer { server.stop() }
        let started = ContinuousClock.now
        do {
            _ = try await client(server, timeout: .milliseconds(300)).execute(HealthOperation())
            XCTFail("answered")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(error.code, .timedOut, "\(error)")
            XCTAssertEqual(error.operation, "GET /healthz")
        }
        let elapsed = ContinuousClock.now - started
        XCTAssertTrue(elapsed >= .milliseconds(290) && elapsed < .seconds(5), "\(elapsed)")
    }

    func testCancellingTheTaskCancelsTheRequestAtOnce() async throws {
        // FoundationNetworking on Linux now and then leaves a fresh session's first request unsent; a try whose
        // request never reaches the server within 5 s is set up again (at most three times), so that what is
        // measured is the cancellation of a request in flight.
        for _ in 0..<3 {
            let server = try StubHTTPServer { _, _ in .hang }
            defer { server.stop() }
            let client = client(server, timeout: .seconds(30))
            // A GET: FoundationNetworking's POST body upload is what stalled, and the cancellation is the same.
            let task = Task { try await client.execute(HealthOperation()) }
            let deadline = ContinuousClock.now + .seconds(5)
            while server.requestCount == 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            guard server.requestCount > 0 else {
                task.cancel()
                continue
            }
            let started = ContinuousClock.now
            task.cancel()
            do {
                _ = try await task.value
                XCTFail("answered")
            } catch let error as PasskeyClientError {
                XCTAssertEqual(error.code, .cancelled, "\(error)")
            }
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
            XCTAssertEqual(server.requestCount, 1, "a cancelled request is not retried")
            return
        }
        XCTFail("in three tries, the request never reached the server")
    }

    func testRedirectsAreNotFollowed() async throws {
        let server = try StubHTTPServer { _, index in
            index == 0
                ? .respond(302, ["Location": "/elsewhere"], "")
                : .respond(200, ["Content-Type": "application/json"], "{}")
        }
        defer { server.stop() }
        do {
            _ = try await client(server).execute(AppleAppSiteAssociationOperation())
            XCTFail("followed")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(error.code, .unexpectedStatus)
            XCTAssertEqual(error.status, 302)
        }
        XCTAssertEqual(server.requestCount, 1)
    }

    func testAGETIsRetriedUntilTheServiceAnswers() async throws {
        let server = try StubHTTPServer { _, index in
            index < 2
                ? .respond(503, ["Content-Type": "application/problem+json"], #"{"status":503,"code":"unavailable"}"#)
                : .respond(200, ["Content-Type": "application/json"], #"{"status":"ok"}"#)
        }
        defer { server.stop() }
        let retrying = client(
            server,
            retry: .init(maximumAttempts: 3, initialBackoff: .milliseconds(10), maximumBackoff: .milliseconds(50)))
        let health = try await retrying.execute(HealthOperation())
        XCTAssertEqual(health.status, "ok")
        XCTAssertEqual(server.requestCount, 3)
    }

    func testNoServerIsANetworkFailure() async throws {
        let server = try StubHTTPServer { _, _ in .hang }
        let url = server.url()
        server.stop()
        let client = PasskeyAPIClient(baseURL: url, configuration: .init(retryPolicy: .none))
        do {
            _ = try await client.execute(HealthOperation())
            XCTFail("answered")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(error.code, .networkFailure, "\(error)")
            XCTAssertNil(error.status)
            XCTAssertTrue(error.isTransient)
        }
    }
}
