import Configuration
import Domain
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import Observability
import ServiceContracts
import XCTest

/// The gateway's side of recovery: which sessions each route admits (fail closed), and the recovery limits, which
/// count an address alike whether or not an account has it and refuse before any service is called.
final class RecoveryRouteTests: XCTestCase {
    var backends = FakeBackends()
    var clock = ManualClock()

    func makeApplication(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        var settings = GatewaySettings()
        let clock = self.clock
        settings.limiterClock = { clock.now }
        var base = ["PASSKEY_TRUSTED_PROXIES": "127.0.0.1"]
        base.merge(environment) { _, new in new }
        return GatewayApplication(
            configuration: try GatewayConfiguration(environment: base), backends: backends,
            logger: Logger(service: "gateway", sink: MemoryLogSink()), metrics: MetricsRegistry(), settings: settings)
    }

    func request(
        _ method: String, _ path: String, _ body: JSONValue? = nil, from address: String = "192.0.2.1",
        token: String? = "t"
    ) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost"), ("x-forwarded-for", address)])
        if body != nil { headers.add("content-type", "application/json") }
        if let token { headers.add("authorization", "Bearer \(token)") }
        return HTTPRequest(
            method: method, path: path, headers: headers, body: body?.serialized() ?? [], remoteAddress: "127.0.0.1")
    }

    func signedIn(_ method: AuthenticationMethod?) {
        var session = SessionInfo()
        session.sessionID = "0191e4f2-0000-7000-8000-000000000001"
        session.accountID = "acc-1"
        session.authenticationMethod = method
        session.createdAtUnixMilliseconds = unixMillisecondsNow()
        session.expiresAtUnixMilliseconds = unixMillisecondsNow() + 900_000
        backends.answer(SessionServiceMethods.validateSession, session)
    }

    static let registration: JSONValue = [
        "challengeID": "3f2a1c9e-0000-4000-8000-000000000000", "credentialID": "AQID", "clientDataJSON": "AQID",
        "attestationObject": "AQID",
    ]

    /// Every bearer route of the gateway with a body it accepts.
    static let bearerRoutes: [(String, String, JSONValue?)] = [
        ("GET", "/v1/session", nil), ("DELETE", "/v1/session", nil), ("GET", "/v1/sessions", nil),
        ("DELETE", "/v1/sessions/3f2a1c9e-0000-4000-8000-000000000000", nil), ("GET", "/v1/account", nil),
        ("PATCH", "/v1/account", ["displayName": "n"]),
        ("GET", "/v1/passkeys", nil), ("PATCH", "/v1/passkeys/AQID", ["name": "n"]),
        ("DELETE", "/v1/passkeys/AQID", nil),
        ("POST", "/v1/passkeys/registrations", [:]), ("POST", "/v1/passkeys/registrations/finish", registration),
        ("POST", "/v1/account/email/verification", [:]), ("POST", "/v1/account/email/verify", ["code": "01234567"]),
        ("POST", "/v1/account/recovery-codes", [:]), ("POST", "/v1/recovery/passkeys/finish", registration),
        ("DELETE", "/v1/account/password", nil), ("POST", "/v1/account/password", ["password": "a new passphrase"]),
        ("POST", "/v1/session/reauthentication/password", ["password": "the password"]),
        ("POST", "/v1/session/reauthentication/passkey", authentication),
        ("POST", "/v1/recovery/password/finish", ["password": "a new passphrase"]),
    ]

    static let authentication: JSONValue = [
        "challengeID": "3f2a1c9e-0000-4000-8000-000000000000", "credentialID": "AQID", "clientDataJSON": "AQID",
        "authenticatorData": "AQID", "signature": "AQID", "userHandle": "AQID",
    ]

    func testARecoverySessionReachesOnlyThePasskeyRegistrationAndUnknownMethodsNothing() async throws {
        let application = try makeApplication()
        // A recovery session may register its passkey, and sign itself out.
        let recoveryRoutes = [
            "POST /v1/passkeys/registrations", "POST /v1/recovery/passkeys/finish", "POST /v1/recovery/password/finish",
            "DELETE /v1/session",
        ]
        XCTAssertEqual(
            Set(
                Self.bearerRoutes.map { "\($0.0) \($0.1.replacingOccurrences(of: "AQID", with: "{credentialID}"))" }
                    .map { $0.replacingOccurrences(of: "3f2a1c9e-0000-4000-8000-000000000000", with: "{sessionID}") }),
            Set(
                GatewayApplication.routeNames.filter { name in
                    !name.contains("well-known")
                        && ![
                            "POST /v1/accounts/password", "POST /v1/sessions/password",
                            "POST /v1/passkeys/account-registrations",
                            "POST /v1/passkeys/account-registrations/finish", "POST /v1/passkeys/authentications",
                            "POST /v1/passkeys/authentications/finish", "POST /v1/recovery", "POST /v1/recovery/finish",
                            "POST /v1/session/refresh",
                            "GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json",
                            "GET /v1/passkey-providers/{aaguid}/icons/{variant}",
                        ].contains(name)
                }), "every bearer route is checked here")
        for method: AuthenticationMethod? in [.recovery, nil] {
            signedIn(method)
            for (verb, path, body) in Self.bearerRoutes {
                let route = "\(verb) \(path)"
                if method == .recovery, recoveryRoutes.contains(route) { continue }
                let response = await application.respond(to: request(verb, path, body))
                XCTAssertEqual(response.status, 403, "\(route) with \(String(describing: method))")
            }
        }
        // Only validation was called: a refused session reaches no other service.
        XCTAssertEqual(Set(backends.paths), [SessionServiceMethods.validateSession.path])
        signedIn(.passkey)
        let full = await application.respond(to: request("POST", "/v1/recovery/passkeys/finish", Self.registration))
        XCTAssertEqual(full.status, 403, "a full session may not use the recovery-only finish")
        let fullPassword = await application.respond(
            to: request("POST", "/v1/recovery/password/finish", ["password": "a new passphrase"]))
        XCTAssertEqual(fullPassword.status, 403, "a full session may not use the recovery-only password finish")
        signedIn(.recovery)
        backends.answer(SessionServiceMethods.revokeSession, RevokeSessionResponse())
        let signedOut = await application.respond(to: request("DELETE", "/v1/session", nil))
        XCTAssertEqual(signedOut.status, 204, "a recovery session signs itself out")
        XCTAssertTrue(backends.paths.contains(SessionServiceMethods.revokeSession.path))
    }

    func testARecoverySessionsPasskeyFinishReturnsTheNewSession() async throws {
        let application = try makeApplication()
        signedIn(.recovery)
        var issued = IssuedSession()
        issued.accessToken = String(repeating: "a", count: 64)
        issued.accountID = "acc-1"
        issued.displayName = "Ada"
        issued.expiresAtUnixMilliseconds = 1_800_000_000_000
        backends.answer(VerificationServiceMethods.finishRecoveryRegistration, issued)
        let response = await application.respond(to: request("POST", "/v1/recovery/passkeys/finish", Self.registration))
        XCTAssertEqual(response.status, 200)
        let sent = try backends.request(VerificationServiceMethods.finishRecoveryRegistration)
        XCTAssertEqual(sent.recoverySessionID, "0191e4f2-0000-7000-8000-000000000001", "the session the token named")
        XCTAssertEqual(sent.accountID, "acc-1")
    }

    func testRecoveryLimitsCountAnAddressKnownOrNotBeforeAnyServiceIsCalled() async throws {
        let application = try makeApplication(["PASSKEY_RATE_LIMIT_RECOVERY_PER_EMAIL": "20/h"])
        backends.answer(SessionServiceMethods.startRecovery, StartRecoveryResponse())
        var statuses: [Int] = []
        for index in 0..<12 {
            // The same address in any case and with spaces around it, from twelve client addresses.
            let email = index.isMultiple(of: 2) ? " Nobody@Example.com " : "nobody@example.com"
            let response = await application.respond(
                to: request("POST", "/v1/recovery", ["email": .string(email)], from: "198.51.100.\(index)", token: nil))
            statuses.append(response.status)
        }
        XCTAssertEqual(statuses, Array(repeating: 202, count: 10) + [429, 429])
        XCTAssertEqual(backends.paths.count, 10, "a refused start calls no service")
        // Finishes count in the same bucket.
        let finish = await application.respond(
            to: request(
                "POST", "/v1/recovery/finish", ["email": "nobody@example.com", "code": "01234567"],
                from: "198.51.100.99", token: nil))
        XCTAssertEqual(finish.status, 429)
        XCTAssertNotNil(finish.headers["retry-after"])
    }

    func testMalformedRecoveryBodiesAreRefusedBeforeAnyServiceIsCalled() async throws {
        let application = try makeApplication()
        for body: JSONValue in [
            ["email": "a@example.com"], ["email": "a@example.com", "code": "1234567"],
            ["email": "a@example.com", "code": "01234567", "recoveryCode": "ABCD-EFGH-JKMN-PQRS"],
            ["email": "a@example.com", "recoveryCode": "ABCD-EFGH-JKMN-PQRU"],
            ["email": "no address", "code": "01234567"],
            ["email": "a@example.com", "code": 1_234_567],
        ] {
            let response = await application.respond(
                to: request("POST", "/v1/recovery/finish", body, from: "203.0.113.7", token: nil))
            XCTAssertEqual(response.status, 400, "\(body)")
        }
        XCTAssertEqual(backends.paths, [])
    }
}
