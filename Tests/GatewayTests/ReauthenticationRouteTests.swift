import Configuration
import Domain
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import Observability
import ServiceContracts
import XCTest

/// Sensitive changes need a recent sign-in: a session signed in (or reauthenticated) longer ago than
/// `PASSKEY_REAUTHENTICATION_WINDOW` gets 403 `reauthentication_required` before any service but validation is called,
/// and the reauthentication routes bind the ceremony to the session that asks.
final class ReauthenticationRouteTests: XCTestCase {
    var backends = FakeBackends()
    /// The gateway's wall clock, in Unix milliseconds.
    let now: Int64 = 1_800_000_000_000

    func makeApplication(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        var settings = GatewaySettings()
        let now = self.now
        settings.now = { now }
        return GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: backends,
            logger: Logger(service: "gateway", sink: MemoryLogSink()), metrics: MetricsRegistry(), settings: settings)
    }

    func request(_ method: String, _ path: String, _ body: JSONValue? = nil) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost"), ("authorization", "Bearer t")])
        if body != nil { headers.add("content-type", "application/json") }
        return HTTPRequest(
            method: method, path: path, headers: headers, body: body?.serialized() ?? [], remoteAddress: "127.0.0.1")
    }

    /// A passkey session created `createdAgo` seconds ago and last reauthenticated `reauthenticatedAgo` seconds ago.
    func signedIn(createdAgo: Int64, reauthenticatedAgo: Int64? = nil, method: AuthenticationMethod = .passkey) {
        var session = SessionInfo()
        session.sessionID = "0191e4f2-0000-7000-8000-000000000001"
        session.accountID = "0191e4f2-0000-7000-8000-0000000000aa"
        session.authenticationMethod = method
        session.createdAtUnixMilliseconds = now - createdAgo * 1000
        session.authenticatedAtUnixMilliseconds = now - (reauthenticatedAgo ?? createdAgo) * 1000
        session.expiresAtUnixMilliseconds = now + 86_400_000
        backends.answer(SessionServiceMethods.validateSession, session)
    }

    /// The sensitive changes, each with a body it accepts.
    static let sensitive: [(String, String, JSONValue?)] = [
        ("POST", "/v1/passkeys/registrations", [:]), ("POST", "/v1/passkeys/registrations", ["mode": "modal"]),
        ("DELETE", "/v1/passkeys/AQID", nil), ("DELETE", "/v1/account/password", nil),
        ("POST", "/v1/account/password", ["password": "a new passphrase"]),
        ("POST", "/v1/account/recovery-codes", [:]),
        ("DELETE", "/v1/sessions/3f2a1c9e-0000-4000-8000-000000000000", nil),
        ("POST", "/v1/account/email/verification", [:]), ("POST", "/v1/account/email/verify", ["code": "01234567"]),
    ]

    func testAnOldSignInIsRefusedEverySensitiveChangeBeforeAnyServiceIsCalled() async throws {
        let application = try makeApplication()
        signedIn(createdAgo: 601)
        for (method, path, body) in Self.sensitive {
            let response = await application.respond(to: request(method, path, body))
            XCTAssertEqual(response.status, 403, "\(method) \(path)")
            let problem = try JSONReader.parse(response.body)
            XCTAssertEqual(problem["code"]?.stringValue, "reauthentication_required", "\(method) \(path)")
        }
        XCTAssertEqual(Set(backends.paths), [SessionServiceMethods.validateSession.path])
    }

    func testARecentSignInOrReauthenticationIsAdmitted() async throws {
        let application = try makeApplication()
        backends.answer(SessionServiceMethods.removePassword, RemovePasswordResponse())
        for (createdAgo, reauthenticatedAgo) in [(Int64(599), nil), (86_000, Int64(30))] as [(Int64, Int64?)] {
            signedIn(createdAgo: createdAgo, reauthenticatedAgo: reauthenticatedAgo)
            let response = await application.respond(to: request("DELETE", "/v1/account/password"))
            XCTAssertEqual(
                response.status, 204,
                "signed in \(createdAgo) s ago, reauthenticated \(String(describing: reauthenticatedAgo))")
        }
        XCTAssertTrue(backends.paths.contains(SessionServiceMethods.removePassword.path))
    }

    func testTheWindowIsConfigurableAndBounded() async throws {
        let application = try makeApplication(["PASSKEY_REAUTHENTICATION_WINDOW": "2m"])
        signedIn(createdAgo: 121)
        let refused = await application.respond(to: request("DELETE", "/v1/account/password"))
        XCTAssertEqual(refused.status, 403)
        for bad in ["10s", "2d", "soon"] {
            XCTAssertThrowsError(try GatewayConfiguration(environment: ["PASSKEY_REAUTHENTICATION_WINDOW": bad]), bad)
        }
    }

    func testTheAutomaticUpgradeAndRecoveryKeepTheirOwnRules() async throws {
        let application = try makeApplication()
        backends.answer(ChallengeServiceMethods.beginRegistration, BeginRegistrationResponse())
        signedIn(createdAgo: 3600)
        let conditional = await application.respond(
            to: request("POST", "/v1/passkeys/registrations", ["mode": "conditional"]))
        XCTAssertNotEqual(conditional.status, 403, "conditional mode is challenge-service's decision")
        signedIn(createdAgo: 3600, method: .recovery)
        let recovery = await application.respond(to: request("POST", "/v1/passkeys/registrations", [:]))
        XCTAssertNotEqual(recovery.status, 403, "a recovery session registers its passkey")
        XCTAssertTrue(backends.paths.contains(ChallengeServiceMethods.beginRegistration.path))
    }

    func testReauthenticationBindsTheCeremonyToTheAskingSession() async throws {
        let application = try makeApplication()
        signedIn(createdAgo: 86_000)
        backends.answer(SessionServiceMethods.reauthenticate, SessionInfo())
        let password = await application.respond(
            to: request("POST", "/v1/session/reauthentication/password", ["password": "the password"]))
        XCTAssertEqual(password.status, 204)
        let sent = try backends.request(SessionServiceMethods.reauthenticate)
        XCTAssertEqual(sent.sessionID, "0191e4f2-0000-7000-8000-000000000001")
        XCTAssertEqual(sent.accountID, "0191e4f2-0000-7000-8000-0000000000aa")
        XCTAssertEqual(sent.password, "the password")

        backends.answer(VerificationServiceMethods.finishAuthentication, FinishAuthenticationResponse())
        let passkey = await application.respond(
            to: request("POST", "/v1/session/reauthentication/passkey", RecoveryRouteTests.authentication))
        XCTAssertEqual(passkey.status, 204)
        let assertion = try backends.request(VerificationServiceMethods.finishAuthentication)
        XCTAssertEqual(assertion.reauthenticateSessionID, "0191e4f2-0000-7000-8000-000000000001")
        XCTAssertEqual(assertion.reauthenticateAccountID, "0191e4f2-0000-7000-8000-0000000000aa")

        let tooLong = await application.respond(
            to: request(
                "POST", "/v1/session/reauthentication/password",
                ["password": .string(String(repeating: "x", count: 1025))]))
        XCTAssertEqual(tooLong.status, 400)
    }
}
