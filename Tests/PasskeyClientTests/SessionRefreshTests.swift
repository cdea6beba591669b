import Foundation
import PasskeyClient
import Synchronization
import XCTest

/// How the client keeps a session alive with refresh tokens: before the access token expires, once for all the
/// calls that need it, after a refused access token, and what it does when the gateway says the session is over.
final class SessionRefreshTests: XCTestCase {
    let currentSession = ScriptedTransport.json(
        200,
        #"{"sessionID":"s1","accountID":"a1","displayName":"Ada","authenticationMethod":"passkey","createdAt":"2026-11-29T18:30:00Z","expiresAt":"2026-12-29T18:30:00Z"}"#
    )

    // MARK: - Keeping the tokens

    func testASignInKeepsBothTokensWithTheExpiryCountedOnTheDevicesClock() async throws {
        let clock = ManualClock()
        let transport = RoutingTransport { _ in ScriptedTransport.signedSession(1, expiresIn: 600) }
        let client = makeClient(transport, clock: clock)
        let session = try await client.execute(PasswordSignInOperation(email: "ada@example.com", password: "p"))
        XCTAssertEqual(session.refreshToken, "prt_1")
        XCTAssertEqual(session.expiresIn, 600)
        XCTAssertEqual(session.sessionID, "s1")

        let stored = try await unwrap(try await client.accessToken())
        XCTAssertEqual(stored.value, "access-1")
        XCTAssertEqual(stored.refreshToken, "prt_1")
        XCTAssertEqual(stored.sessionID, "s1")
        XCTAssertEqual(stored.lifetime, .seconds(600))
        // The gateway's expiresAt is a year off this device's clock; expiresIn is what counts.
        XCTAssertEqual(stored.expiresAt, clock.now.addingTimeInterval(600))
        XCTAssertEqual(stored.refreshTokenExpiresAt, JSONDate.parse("2026-12-06T18:30:00Z"))

        for value in [stored as Any, session as Any, SessionRefreshOperation(refreshToken: "prt_1") as Any] {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped] {
                XCTAssertFalse(text.contains("prt_1") || text.contains("access-1"), text)
            }
        }
    }

    func testTokensStoredBeforeRefreshTokensStillDecode() throws {
        let old = Data(#"{"value":"opaque-1","expiresAt":786297600,"accountID":"a1"}"#.utf8)
        let token = try JSONDecoder().decode(AccessToken.self, from: old)
        XCTAssertEqual(token.value, "opaque-1")
        XCTAssertEqual(token.accountID, "a1")
        XCTAssertEqual(token.expiresAt, Date(timeIntervalSinceReferenceDate: 786_297_600))
        XCTAssertNil(token.refreshToken)
        XCTAssertNil(token.lifetime)
        XCTAssertFalse(token.needsRefresh(at: .distantFuture, leeway: .seconds(60)), "nothing to refresh it with")

        let full = AccessToken(
            value: "access-1", expiresAt: Date(timeIntervalSince1970: 1_000), accountID: "a1", refreshToken: "prt_1",
            refreshTokenExpiresAt: Date(timeIntervalSince1970: 2_000), sessionID: "s1", lifetime: .seconds(30))
        XCTAssertEqual(try JSONDecoder().decode(AccessToken.self, from: try JSONEncoder().encode(full)), full)
    }

    func testCreatingAnAccountWithAPasskeySignsIn() async throws {
        let transport = RoutingTransport { _ in ScriptedTransport.signedSession(1, status: 201) }
        let client = makeClient(transport)
        let session = try await client.execute(
            PasskeyAccountCreationFinishOperation(registrationID: "r", credential: SampleOperations.registration))
        XCTAssertEqual(session.accountID, "a1")
        let stored = try await client.accessToken()
        XCTAssertEqual(stored?.value, "access-1")
        XCTAssertEqual(stored?.refreshToken, "prt_1")
    }

    // MARK: - Refreshing before expiry

    func testTheAccessTokenIsRefreshedShortlyBeforeItExpiresAndNotBefore() async throws {
        let clock = ManualClock()
        let transport = gateway(accepting: ["access-1", "access-2", "access-3"])
        let client = makeClient(transport, clock: clock)
        let events = client.sessionEvents()
        try await signIn(client)

        _ = try await client.execute(CurrentSessionOperation())
        clock.advance(by: .seconds(539))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 0, "61 s left: not yet")

        clock.advance(by: .seconds(2))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 1)
        let refresh = try XCTUnwrap(transport.requests.first { $0.url.path == "/v1/session/refresh" })
        XCTAssertNil(refresh.headers["authorization"], "a refresh carries no access token")
        let body = try JSONSerialization.jsonObject(with: refresh.body ?? Data()) as? [String: String]
        XCTAssertEqual(body, ["refreshToken": "prt_1"])
        XCTAssertEqual(transport.requests.last?.headers["authorization"], "Bearer access-2")
        let stored = try await client.accessToken()
        XCTAssertEqual(stored?.refreshToken, "prt_2")
        XCTAssertEqual(stored?.expiresAt, clock.now.addingTimeInterval(600))

        // An expired one is refreshed too.
        clock.advance(by: .seconds(3600))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.requests.last?.headers["authorization"], "Bearer access-3")
        let observed = try await recorded(events, of: client)
        XCTAssertEqual(observed, [.refreshed, .refreshed])
    }

    func testAShortLivedTokenIsRefreshedInTheSecondHalfOfItsLife() async throws {
        let clock = ManualClock()
        let transport = gateway(accepting: ["access-1", "access-2"], expiresIn: 30)
        let client = makeClient(transport, clock: clock)
        try await signIn(client)
        clock.advance(by: .seconds(14))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 0, "16 s of 30 left")
        clock.advance(by: .seconds(2))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 1)
    }

    func testConcurrentCallsAcrossTheExpiryShareOneRefresh() async throws {
        let clock = ManualClock()
        let transport = gateway(accepting: ["access-1", "access-2"], refreshDelay: .milliseconds(100))
        let client = makeClient(transport, clock: clock)
        try await signIn(client)
        clock.advance(by: .seconds(600))

        let sessions = try await withThrowingTaskGroup(of: CurrentSession.self) { group in
            for _ in 0..<50 { group.addTask { try await client.execute(CurrentSessionOperation()) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(sessions.count, 50)
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 1)
        let calls = transport.requests.filter { $0.url.path == "/v1/session" }
        XCTAssertEqual(calls.count, 50)
        XCTAssertTrue(calls.allSatisfy { $0.headers["authorization"] == "Bearer access-2" })

        // Explicit refreshes at the same time share one too.
        async let first = client.refreshSession()
        async let second = client.refreshSession()
        let (a, b) = try await (first, second)
        XCTAssertEqual(a?.refreshToken, "prt_3")
        XCTAssertEqual(b?.refreshToken, "prt_3")
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 2)
    }

    // MARK: - Refreshing after a refusal

    func testARefusedAccessTokenLeadsToOneRefreshAndOneRetry() async throws {
        // The gateway no longer takes access-1 (its signing key was rotated out, say) though the clock says it lives.
        let transport = gateway(accepting: ["access-2"])
        let client = makeClient(transport)
        let events = client.sessionEvents()
        try await signIn(client)
        let session = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(session.sessionID, "s1")
        XCTAssertEqual(
            transport.requests.dropFirst().map { "\($0.method) \($0.url.path) \($0.headers["authorization"] ?? "-")" },
            ["GET /v1/session Bearer access-1", "POST /v1/session/refresh -", "GET /v1/session Bearer access-2"])
        let observed = try await recorded(events, of: client)
        XCTAssertEqual(observed, [.refreshed])
    }

    func testANewTokenThatIsRefusedTooEndsTheSessionWithoutAnotherRefresh() async throws {
        let transport = gateway(accepting: [])
        let client = makeClient(transport)
        let events = client.sessionEvents()
        try await signIn(client)
        let error = await failure(of: client, CurrentSessionOperation())
        XCTAssertEqual(error?.code, .unauthenticated)
        XCTAssertEqual(error?.operation, "GET /v1/session")
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 1)
        XCTAssertEqual(transport.count(.get, "/v1/session"), 2)
        let stored = try await client.accessToken()
        XCTAssertNil(stored)
        let observed = try await recorded(events, of: client)
        XCTAssertEqual(observed, [.refreshed, .signedOut(reason: .accessTokenRefused)])
    }

    // MARK: - The end of the session

    func testAReusedRefreshTokenRemovesTheTokensAndSaysSignedOut() async throws {
        let cases: [(reason: String?, expected: SignedOutReason)] = [
            ("refresh_token_reused", .refreshTokenReused), ("session_ended", .sessionEnded),
            ("refresh_token_invalid", .refreshTokenInvalid), (nil, .sessionEnded),
        ]
        for (reason, expected) in cases {
            // Refused access token first, then an expired one: both lead to the refusal of the refresh.
            for expired in [false, true] {
                let clock = ManualClock()
                let transport = gateway(
                    accepting: [], refresh: { _ in ScriptedTransport.problem(401, "unauthenticated", reason: reason) })
                let client = makeClient(transport, clock: clock)
                let events = client.sessionEvents()
                try await signIn(client)
                if expired { clock.advance(by: .seconds(601)) }
                let error = await failure(of: client, CurrentSessionOperation())
                XCTAssertEqual(error?.code, .unauthenticated)
                XCTAssertEqual(error?.status, 401)
                XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 1)
                XCTAssertEqual(transport.count(.get, "/v1/session"), expired ? 0 : 1, "no retry")
                let stored = try await client.accessToken()
                XCTAssertNil(stored, "\(reason ?? "no reason")")
                let observed = try await recorded(events, of: client)
                XCTAssertEqual(observed, [.signedOut(reason: expected)], "\(reason ?? "no reason"), expired \(expired)")
            }
        }
    }

    func testARefreshWithoutAnAnswerKeepsTheTokens() async throws {
        let clock = ManualClock()
        let transport = gateway(accepting: ["access-1"], refresh: { _ in throw URLError(.notConnectedToInternet) })
        let client = makeClient(transport, clock: clock)
        let events = client.sessionEvents()
        try await signIn(client)

        // Within the leeway the access token still works: the call goes out with it.
        clock.advance(by: .seconds(570))
        _ = try await client.execute(CurrentSessionOperation())
        XCTAssertEqual(transport.requests.last?.headers["authorization"], "Bearer access-1")

        // Expired, the call fails with the refresh's failure, and is not sent.
        clock.advance(by: .seconds(60))
        let error = await failure(of: client, CurrentSessionOperation())
        XCTAssertEqual(error?.code, .networkFailure)
        XCTAssertEqual(error?.operation, "POST /v1/session/refresh")
        XCTAssertEqual(transport.count(.get, "/v1/session"), 1)
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 2, "a refresh is not retried")
        let stored = try await client.accessToken()
        XCTAssertEqual(stored?.refreshToken, "prt_1")
        let observed = try await recorded(events, of: client)
        XCTAssertEqual(observed, [])
    }

    func testATokenWithoutARefreshTokenIsNeverRefreshed() async throws {
        let clock = ManualClock()
        let transport = gateway(accepting: ["opaque"])
        let client = makeClient(transport, clock: clock)
        let events = client.sessionEvents()
        try await client.setAccessToken(AccessToken(value: "opaque", expiresAt: clock.now.addingTimeInterval(-1)))
        _ = try await client.execute(CurrentSessionOperation())
        let unchanged = try await client.refreshSession()
        XCTAssertEqual(unchanged?.value, "opaque")

        try await client.setAccessToken(AccessToken(value: "revoked"))
        let error = await failure(of: client, CurrentSessionOperation())
        XCTAssertEqual(error?.code, .unauthenticated)
        XCTAssertEqual(transport.count(.post, "/v1/session/refresh"), 0)
        let stored = try await client.accessToken()
        XCTAssertNil(stored)
        let none = try await client.refreshSession()
        XCTAssertNil(none)
        let observed = try await recorded(events, of: client)
        XCTAssertEqual(observed, [.signedOut(reason: .accessTokenRefused)])
    }

    // MARK: - Helpers

    /// A gateway whose bearer routes take the access tokens in `accepting`; its refresh turns `prt_<n>` into
    /// `access-<n+1>` and `prt_<n+1>` after `refreshDelay`, unless `refresh` answers instead.
    func gateway(
        accepting tokens: Set<String>, expiresIn: Int = 600, refreshDelay: Duration = .zero,
        refresh: (@Sendable (PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse)? = nil
    ) -> RoutingTransport {
        let currentSession = self.currentSession
        return RoutingTransport { request in
            switch (request.method, request.url.path) {
            case (.post, "/v1/sessions/password"):
                return ScriptedTransport.signedSession(1, expiresIn: expiresIn)
            case (.post, "/v1/session/refresh"):
                if let refresh { return try await refresh(request) }
                try await Task.sleep(for: refreshDelay)
                let body = try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: String]
                let generation = Int(body?["refreshToken"]?.dropFirst(4) ?? "") ?? 0
                return ScriptedTransport.signedSession(generation + 1, expiresIn: expiresIn)
            default:
                let bearer = request.headers["authorization"]?.dropFirst("Bearer ".count)
                guard let bearer, tokens.contains(String(bearer)) else {
                    return ScriptedTransport.problem(401, "unauthenticated")
                }
                return currentSession
            }
        }
    }

    func signIn(_ client: PasskeyAPIClient) async throws {
        try await client.execute(PasswordSignInOperation(email: "ada@example.com", password: "p"))
    }

    /// The events `client` reported on `stream` so far: a sign-out, whose event marks the end, is sent to find them.
    func recorded(_ stream: AsyncStream<SessionEvent>, of client: PasskeyAPIClient) async throws -> [SessionEvent] {
        try await client.setAccessToken(nil)
        try await client.execute(SignOutOperation())
        var events: [SessionEvent] = []
        for await event in stream {
            if event == .signedOut(reason: .signedOut) { break }
            events.append(event)
        }
        return events
    }

    func failure<Operation: PasskeyAPIOperation>(of client: PasskeyAPIClient, _ operation: Operation) async
        -> PasskeyClientError?
    {
        do {
            _ = try await client.send(operation)
            XCTFail("\(operation.route) succeeded")
            return nil
        } catch {
            return error as? PasskeyClientError
        }
    }

    func unwrap<T>(_ value: @autoclosure () async throws -> T?) async throws -> T {
        let resolved = try await value()
        return try XCTUnwrap(resolved)
    }
}

/// A transport answering by an asynchronous handler, which records what was sent; `DELETE /v1/session` is always
/// answered 204.
final class RoutingTransport: PasskeyHTTPTransport {
    private let handler: @Sendable (PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse
    private let sent = Mutex<[PasskeyHTTPRequest]>([])

    init(_ handler: @escaping @Sendable (PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse) {
        self.handler = handler
    }

    var requests: [PasskeyHTTPRequest] { sent.withLock { $0 } }

    func count(_ method: HTTPMethod, _ path: String) -> Int {
        requests.filter { $0.method == method && $0.url.path == path }.count
    }

    func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse {
        sent.withLock { $0.append(request) }
        if request.method == .delete, request.url.path == "/v1/session" { return ScriptedTransport.noContent }
        return try await handler(request)
    }
}

/// RFC 3339 times for expectations.
enum JSONDate {
    static func parse(_ text: String) -> Date? { try? Date(text, strategy: Date.ISO8601FormatStyle()) }
}
