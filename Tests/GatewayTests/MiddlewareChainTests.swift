import Configuration
import Domain
import GRPC
import HTTPMessages
import JSON
import Observability
import ServiceContracts
import Synchronization
import XCTest

@testable import GatewayCore

/// What the middleware chain guarantees, whatever the route: middleware runs outermost first and a refusal stops
/// the rest; a route's declared body is enforced before its handler runs; and on the real listeners, a route's
/// limits come before its admission, and its admission before any service call.
final class MiddlewareChainTests: XCTestCase {
    /// What the chain did, in order.
    final class Trail: Sendable {
        private let steps = Mutex<[String]>([])
        func record(_ step: String) { steps.withLock { $0.append(step) } }
        var recorded: [String] { steps.withLock { $0 } }
    }

    /// A route of a listener made for these tests: it declares a body, and its handler records the body it got.
    struct TestRoute: RouteDeclaration {
        typealias Application = Trail

        let method: String
        let path: String
        let body: RouteBody
        let handle: @Sendable (Trail, RequestContext<TestRoute>) async throws -> HTTPResponse

        init(_ method: String, _ path: String, body: RouteBody = .ignored) {
            self.method = method
            self.path = path
            self.body = body
            handle = { trail, context in
                trail.record(
                    "handler \(String(decoding: JSONValue.object(context.body.object).serialized(), as: UTF8.self))")
                return HTTPResponse(status: 200)
            }
        }

        init(fallback respond: @escaping @Sendable () throws -> HTTPResponse) {
            (method, path, body) = ("", "", .ignored)
            handle = { _, _ in try respond() }
        }

        static func fallback(_ respond: @escaping @Sendable () throws -> HTTPResponse) -> TestRoute {
            TestRoute(fallback: respond)
        }
    }

    /// Records that it ran; refuses with 429 when told to.
    struct Step: RouteMiddleware {
        let name: String
        let trail: Trail
        var refuses = false

        func handle(_ context: RequestContext<TestRoute>, next: MiddlewareNext<TestRoute>) async throws -> HTTPResponse
        {
            trail.record(name)
            if refuses { throw APIProblem.rateLimited(retryAfterSeconds: 1) }
            return try await next(context)
        }
    }

    struct NoPages: ListenerPages {
        func response(method: String, path: String) -> HTTPResponse? { nil }
        func serves(_ path: String) -> Bool { false }
    }

    let trail = Trail()

    func responder(_ middleware: [any RouteMiddleware<TestRoute>], routes: [TestRoute]) -> RouteResponder<TestRoute> {
        RouteResponder(
            router: Router(routes: routes), pages: NoPages(),
            addressResolver: ClientAddressResolver(trustedProxies: []),
            chain: MiddlewareChain(
                [
                    ProblemResponses<TestRoute>(
                        logger: Logger(service: "gateway", sink: MemoryLogSink()), failureEvent: "failed")
                ] + middleware))
    }

    func bodyResponder() -> RouteResponder<TestRoute> {
        responder(
            [BodyPolicy<TestRoute>(reading: .anyJSONType, unexpectedBodyDetail: "No body here.")],
            routes: [
                TestRoute("POST", "/none", body: .none), TestRoute("POST", "/json", body: .json),
                TestRoute("POST", "/optional", body: .optionalJSON), TestRoute("POST", "/ignored"),
            ])
    }

    func request(_ path: String, body: String = "", contentType: String? = "application/json") -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost")])
        if let contentType { headers.add("content-type", contentType) }
        return HTTPRequest(
            method: "POST", path: path, headers: headers, body: Array(body.utf8), remoteAddress: "127.0.0.1")
    }

    func problem(_ response: HTTPResponse) throws -> (code: String?, detail: String?) {
        let document = try JSONReader.parse(response.body)
        return (document["code"]?.stringValue, document["detail"]?.stringValue)
    }

    func testMiddlewareRunsOutermostFirstAndARefusalStopsTheRest() async throws {
        let routes = [TestRoute("POST", "/route")]
        let passing = responder(
            [Step(name: "limits", trail: trail), Step(name: "admission", trail: trail)], routes: routes)
        let passed = await passing.respond(to: request("/route"), application: trail)
        XCTAssertEqual(passed.status, 200)
        XCTAssertEqual(trail.recorded, ["limits", "admission", "handler {}"])

        let refusing = responder(
            [Step(name: "limits", trail: trail, refuses: true), Step(name: "admission", trail: trail)], routes: routes)
        let refused = await refusing.respond(to: request("/route"), application: trail)
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(try problem(refused).code, "rate_limited")
        XCTAssertEqual(trail.recorded, ["limits", "admission", "handler {}", "limits"])
    }

    func testARouteDeclaringNoBodyRefusesOne() async throws {
        let refused = await bodyResponder().respond(to: request("/none", body: "{}"), application: trail)
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(try problem(refused).detail, "No body here.")
        let empty = await bodyResponder().respond(to: request("/none", contentType: nil), application: trail)
        XCTAssertEqual(empty.status, 200)
        XCTAssertEqual(trail.recorded, ["handler {}"])
    }

    func testARouteRequiringJSONRefusesAnEmptyBodyAnotherMediaTypeAndAnythingButAnObject() async throws {
        for (body, contentType, status, code) in [
            ("", "application/json", 400, "invalid_request"), ("", nil, 400, "invalid_request"),
            ("{}", "text/plain", 415, "unsupported_media_type"), ("[1]", "application/json", 400, "invalid_request"),
            ("{", "application/json", 400, "invalid_request"),
        ] as [(String, String?, Int, String)] {
            let response = await bodyResponder().respond(
                to: request("/json", body: body, contentType: contentType), application: trail)
            XCTAssertEqual(response.status, status, "\(body) as \(contentType ?? "nothing")")
            XCTAssertEqual(try problem(response).code, code)
        }
        XCTAssertEqual(trail.recorded, [], "no handler ran")
        let read = await bodyResponder().respond(to: request("/json", body: #"{"a":"b"}"#), application: trail)
        XCTAssertEqual(read.status, 200)
        XCTAssertEqual(trail.recorded, [#"handler {"a":"b"}"#])
    }

    func testAnOptionalBodyReadsEmptyAsAnEmptyObjectAndAnIgnoredOneIsNeverRead() async throws {
        let empty = await bodyResponder().respond(to: request("/optional", contentType: nil), application: trail)
        XCTAssertEqual(empty.status, 200)
        let wrongType = await bodyResponder().respond(
            to: request("/optional", contentType: "text/plain"), application: trail)
        XCTAssertEqual(wrongType.status, 415)
        let ignored = await bodyResponder().respond(
            to: request("/ignored", body: "not json", contentType: "text/plain"), application: trail)
        XCTAssertEqual(ignored.status, 200)
        XCTAssertEqual(trail.recorded, ["handler {}", "handler {}"])
    }

    func testAnUnmatchedRequestPassesTheChainToItsFallback() async throws {
        let listener = responder([Step(name: "limits", trail: trail)], routes: [TestRoute("POST", "/route")])
        let missing = await listener.respond(to: request("/elsewhere"), application: trail)
        XCTAssertEqual(missing.status, 404)
        let wrongMethod = await listener.respond(
            to: HTTPRequest(method: "GET", path: "/route", headers: HTTPHeaders([("host", "localhost")])),
            application: trail)
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.headers["allow"], "POST")
        XCTAssertEqual(trail.recorded, ["limits", "limits"])
    }

    // MARK: - The real listeners' chains

    let backends = FakeBackends()
    let clock = ManualClock()

    func gateway(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        var settings = GatewaySettings()
        let clock = self.clock
        settings.limiterClock = { clock.now }
        return GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: backends,
            logger: Logger(service: "gateway", sink: MemoryLogSink()), metrics: MetricsRegistry(), settings: settings)
    }

    func finishRegistration(token: String?, body: String = #"{"challengeID":"c"}"#) -> HTTPRequest {
        var finish = request("/v1/passkeys/registrations/finish", body: body)
        if let token { finish.headers.add("authorization", "Bearer \(token)") }
        return finish
    }

    func answerSessions(_ method: AuthenticationMethod) {
        var session = SessionInfo()
        session.sessionID = "s-1"
        session.accountID = "acc-1"
        session.authenticationMethod = method
        session.createdAtUnixMilliseconds = unixMillisecondsNow()
        session.expiresAtUnixMilliseconds = unixMillisecondsNow() + 86_400_000
        backends.answer(SessionServiceMethods.validateSession, session)
    }

    /// `POST /v1/passkeys/registrations/finish` declares the passkey limit, a full session and a JSON body.
    func testOnThePublicListenerLimitsComeBeforeAdmissionAndAdmissionBeforeTheBodyAndTheServices() async throws {
        let application = try gateway(["PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "10/h"])
        answerSessions(.recovery)
        // No token: 401, whatever the body, and no service is asked.
        let anonymous = await application.respond(to: finishRegistration(token: nil, body: "{"))
        XCTAssertEqual(anonymous.status, 401)
        XCTAssertEqual(backends.paths, [])
        // A session the route does not admit: 403 after the one call that validated it, and nothing after it.
        let recovery = await application.respond(to: finishRegistration(token: "tok", body: "{"))
        XCTAssertEqual(recovery.status, 403)
        XCTAssertEqual(backends.paths, [SessionServiceMethods.validateSession.path])
        // An admitted session with a body that is not JSON: 400 before any call but the validation.
        answerSessions(.password)
        let unreadable = await application.respond(to: finishRegistration(token: "tok", body: "{"))
        XCTAssertEqual(unreadable.status, 400)
        XCTAssertEqual(backends.paths, Array(repeating: SessionServiceMethods.validateSession.path, count: 2))
        // The bucket (a burst of 10) is spent: the next request is refused before its token is looked at.
        for _ in 0..<7 { _ = await application.respond(to: finishRegistration(token: nil)) }
        let limited = await application.respond(to: finishRegistration(token: "tok"))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(try problem(limited).code, "rate_limited")
        XCTAssertEqual(backends.paths.count, 2, "no call for a limited request")
    }

    /// `DELETE /admin/v1/accounts/{accountID}` declares a token and no body.
    func testOnTheAdminListenerTheTokenComesBeforeTheBodyAndTheBodyBeforeTheServices() async throws {
        let admin = AdminApplication(gateway: try gateway())
        let token = "pkadm_abababababababab_" + String(repeating: "q", count: 43)
        func erase(token: String?, body: String, accountID: String = "acc-1") -> HTTPRequest {
            var request = HTTPRequest(
                method: "DELETE", path: "/admin/v1/accounts/\(accountID)",
                headers: HTTPHeaders([("host", "localhost"), ("content-type", "application/json")]),
                body: Array(body.utf8), remoteAddress: "127.0.0.1")
            if let token { request.headers.add("authorization", "Bearer \(token)") }
            return request
        }
        let anonymous = await admin.respond(to: erase(token: nil, body: "{}"))
        XCTAssertEqual(anonymous.status, 401)
        let withBody = await admin.respond(to: erase(token: token, body: "{}"))
        XCTAssertEqual(withBody.status, 400)
        XCTAssertEqual(try problem(withBody).detail, "Admin calls here take no body.")
        let longParameter = await admin.respond(
            to: erase(token: token, body: "", accountID: String(repeating: "a", count: 1401)))
        XCTAssertEqual(longParameter.status, 400)
        XCTAssertEqual(try problem(longParameter).detail, "accountID is missing or too long.")
        XCTAssertEqual(backends.paths, [], "no refused call reached a service")
        XCTAssertEqual(withBody.headers["cache-control"], "no-store")
        XCTAssertNotNil(withBody.headers["x-request-id"])
    }
}
