import Foundation
import PasskeyClient
import PostgresTestSupport
import SoftwareAuthenticator
import Synchronization
import XCTest

/// The client library keeping a session alive against the real stack, with 30-second access tokens: many calls
/// across an expiry share one refresh, a refused access token is refreshed and the call retried, and a reused refresh
/// token ends the session with a signed-out event. Replaced refresh tokens get no reuse window here, so a second
/// refresh with the same token would end the session rather than pass unnoticed.
final class SessionRefreshFlowTests: XCTestCase {
    static let shared = SharedStack {
        try await Stack(environment: ["PASSKEY_ACCESS_TOKEN_LIFETIME": "30s", "PASSKEY_REFRESH_REUSE_WINDOW": "0s"])
    }
    override class func tearDown() { shared.stop() }

    func testFiftyCallsAcrossTheAccessTokensExpirySendOneRefresh() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let clock = MovableClock()
        let transport = RouteCountingTransport(Flows.transport)
        let app = PasskeyAPIClient(
            baseURL: stack.gatewayURL, configuration: .init(clock: { clock.now }), transport: transport)
        let events = app.sessionEvents()

        // Creating an account with a passkey signs it in, with a 30-second access token and a refresh token.
        let start = try await app.execute(
            PasskeyAccountCreationStartOperation(emailAddress: flows.uniqueEmail("refresh"), displayName: "Rita"))
        var authenticator = SoftwareAuthenticator()
        authenticator.userHandle = [UInt8](start.options.userID)
        let created = try await app.execute(
            PasskeyAccountCreationFinishOperation(
                registrationID: start.registrationID,
                result: PasskeyAccountCreationResult(
                    emailAddress: nil, displayName: nil, credential: authenticator.credential(for: start.options))))
        XCTAssertLessThanOrEqual(created.expiresIn, 30)
        XCTAssertGreaterThanOrEqual(created.expiresIn, 25)
        let first = try await unwrapAsync(try await app.accessToken())
        XCTAssertNotNil(first.refreshToken)
        let refreshesBefore = try await gatewayRefreshes(flows)

        // The stored access token expires by this machine's clock: 50 calls at once share one refresh.
        clock.advance(by: .seconds(31))
        let accounts = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<50 {
                group.addTask {
                    index.isMultiple(of: 2)
                        ? try await app.execute(AccountOperation()).accountID
                        : try await app.execute(CurrentSessionOperation()).accountID
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(accounts, Array(repeating: created.accountID, count: 50))
        XCTAssertEqual(transport.count("POST /v1/session/refresh"), 1)
        let gatewayCount = try await gatewayRefreshes(flows) - refreshesBefore
        XCTAssertEqual(gatewayCount, 1, "the gateway served one refresh")

        // The same session, with new tokens whose expiry counts from the refresh.
        let second = try await unwrapAsync(try await app.accessToken())
        XCTAssertNotEqual(second.value, first.value)
        XCTAssertNotEqual(second.refreshToken, first.refreshToken)
        XCTAssertEqual(second.sessionID, created.sessionID)
        XCTAssertTrue(second.isUsable(at: clock.now))
        let current = try await app.execute(CurrentSessionOperation())
        XCTAssertEqual(current.sessionID, created.sessionID)
        XCTAssertEqual(transport.count("POST /v1/session/refresh"), 1, "a fresh token is not refreshed")
        let event = await firstEvent(of: events)
        XCTAssertEqual(event, .refreshed)
    }

    func testARefusedAccessTokenIsRefreshedAndTheCallRetried() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let email = flows.uniqueEmail("refused")
        _ = try await flows.signUpWithPassword(email: email)
        let transport = RouteCountingTransport(Flows.transport)
        let app = PasskeyAPIClient(baseURL: stack.gatewayURL, transport: transport)
        try await app.execute(PasswordSignInOperation(email: email, password: "correct horse battery"))

        // The access token of a session that has ended, beside this session's refresh token: the gateway refuses
        // it, and the refresh gets a good one.
        let other = try await flows.signInWithPassword(email: email)
        let ended = try await unwrapAsync(try await other.accessToken())
        try await other.execute(SignOutOperation())
        var token = try await unwrapAsync(try await app.accessToken())
        token.value = ended.value
        try await app.setAccessToken(token)

        let account = try await app.execute(AccountOperation())
        XCTAssertEqual(account.emails, [email])
        XCTAssertEqual(transport.count("GET /v1/account"), 2, "the refused call and its retry")
        XCTAssertEqual(transport.count("POST /v1/session/refresh"), 1)
        let refreshed = try await app.accessToken()
        XCTAssertNotEqual(refreshed?.value, ended.value)
        XCTAssertNotEqual(refreshed?.refreshToken, token.refreshToken)
    }

    func testAReusedRefreshTokenEndsTheSessionAndBothCopiesHearSignedOut() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let email = flows.uniqueEmail("reuse")
        _ = try await flows.signUpWithPassword(email: email)
        let app = flows.client()
        try await app.execute(PasswordSignInOperation(email: email, password: "correct horse battery"))
        // A copy of the tokens elsewhere (a stolen backup, say), which the app then refreshes past.
        let copy = flows.client()
        let original = try await unwrapAsync(try await app.accessToken())
        try await copy.setAccessToken(original)
        let appEvents = app.sessionEvents()
        let copyEvents = copy.sessionEvents()
        let rotated = try await unwrapAsync(try await app.refreshSession())
        XCTAssertNotEqual(rotated.refreshToken, original.refreshToken)
        let refreshed = await firstEvent(of: appEvents)
        XCTAssertEqual(refreshed, .refreshed)

        // The replaced refresh token comes back: the gateway ends the session, and the copy is signed out.
        do {
            try await copy.refreshSession()
            XCTFail("a replaced refresh token was accepted")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(error.code, .unauthenticated)
            XCTAssertEqual(error.status, 401)
            XCTAssertEqual(error.reason?.rawValue, "refresh_token_reused")
        }
        let copySignedOut = await firstEvent(of: copyEvents)
        XCTAssertEqual(copySignedOut, .signedOut(reason: .refreshTokenReused))
        await assertNil(try await copy.accessToken())

        // The app's own tokens belong to the ended session: its next call is refused, its refresh too, and it is
        // signed out.
        let refused = await flows.outcome(AccountOperation(), with: app)
        XCTAssertEqual(refused.code, .unauthenticated, refused.description)
        XCTAssertEqual(refused.status, 401)
        let appSignedOut = await firstEvent(of: appEvents)
        XCTAssertEqual(appSignedOut, .signedOut(reason: .sessionEnded))
        await assertNil(try await app.accessToken())
    }

    // MARK: - Helpers

    /// `POST /v1/session/refresh` requests the gateway has counted, whatever their status.
    func gatewayRefreshes(_ flows: Flows) async throws -> Int {
        let metrics = try await flows.client().execute(MetricsOperation()).text
        let prefix = #"gateway_http_requests_total{route="POST /v1/session/refresh","#
        return metrics.split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
    }

    /// The next event of `stream`, or nil when none comes within five seconds.
    func firstEvent(of stream: AsyncStream<SessionEvent>) async -> SessionEvent? {
        await withTaskGroup(of: SessionEvent?.self) { group in
            group.addTask {
                for await event in stream { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// A wall clock for a client that the test moves forward, to make its access token look older than it is.
final class MovableClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)
    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    func advance(by duration: Duration) { offset.withLock { $0 += Double(duration.components.seconds) } }
}

/// Counts the requests a transport sends, by `METHOD path`.
final class RouteCountingTransport: PasskeyHTTPTransport {
    private let inner: any PasskeyHTTPTransport
    private let sent = Mutex<[String: Int]>([:])

    init(_ inner: any PasskeyHTTPTransport) { self.inner = inner }

    func count(_ route: String) -> Int { sent.withLock { $0[route] ?? 0 } }

    func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse {
        sent.withLock { $0["\(request.method) \(request.url.path)", default: 0] += 1 }
        return try await inner.send(request)
    }
}
