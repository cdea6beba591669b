import Configuration
import Domain
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import Observability
import ServiceContracts
import XCTest

/// The limits on routes that write a row for anyone who asks: ceremony starts and sign-ups, per client address and
/// per replica, and requests whose client went away.
final class UnauthenticatedWriteLimitTests: XCTestCase {
    var backends = FakeBackends()
    var clock = ManualClock()

    func makeApplication(_ environment: [String: String]) throws -> GatewayApplication {
        var settings = GatewaySettings()
        let clock = self.clock
        settings.limiterClock = { clock.now }
        var base = ["PASSKEY_TRUSTED_PROXIES": "127.0.0.1"]
        base.merge(environment) { _, new in new }
        return GatewayApplication(
            configuration: try GatewayConfiguration(environment: base), backends: backends,
            logger: Logger(service: "gateway", sink: MemoryLogSink()), metrics: MetricsRegistry(), settings: settings)
    }

    func post(_ path: String, _ body: JSONValue? = nil, from address: String, token: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost"), ("x-forwarded-for", address)])
        if body != nil { headers.add("content-type", "application/json") }
        if let token { headers.add("authorization", "Bearer \(token)") }
        return HTTPRequest(
            method: "POST", path: path, headers: headers, body: body?.serialized() ?? [], remoteAddress: "127.0.0.1")
    }

    func answerEveryStart() {
        var authentication = BeginAuthenticationResponse()
        authentication.challengeID = "a-1"
        authentication.challenge = Array(repeating: 1, count: 32)
        backends.answer(ChallengeServiceMethods.beginAuthentication, authentication)
        var registration = BeginRegistrationResponse()
        registration.challengeID = "r-1"
        registration.challenge = Array(repeating: 2, count: 32)
        registration.mode = .modal
        backends.answer(ChallengeServiceMethods.beginRegistration, registration)
        var accountRegistration = BeginAccountRegistrationResponse()
        accountRegistration.registrationID = "ar-1"
        accountRegistration.userHandle = [7]
        backends.answer(ChallengeServiceMethods.beginAccountRegistration, accountRegistration)
        var created = CreatePasswordAccountResponse()
        created.accountID = "acc-2"
        backends.answer(SessionServiceMethods.createPasswordAccount, created)
        var session = SessionInfo()
        session.sessionID = "s-1"
        session.accountID = "acc-1"
        session.authenticationMethod = .passkey
        session.createdAtUnixMilliseconds = unixMillisecondsNow()
        session.expiresAtUnixMilliseconds = unixMillisecondsNow() + 86_400_000
        backends.answer(SessionServiceMethods.validateSession, session)
    }

    func calls<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>) -> Int {
        backends.paths.filter { $0 == method.path }.count
    }

    func assertLimited(
        _ response: HTTPResponse, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertEqual(response.status, 429, file: file, line: line)
        XCTAssertEqual(response.headers["content-type"], "application/problem+json", file: file, line: line)
        let problem = try JSONReader.parse(response.body)
        XCTAssertEqual(problem["code"], "rate_limited", file: file, line: line)
        XCTAssertEqual(problem["status"], 429, file: file, line: line)
        let retryAfter = try XCTUnwrap(response.headers["retry-after"].flatMap { Int($0) }, file: file, line: line)
        XCTAssertGreaterThanOrEqual(retryAfter, 1, file: file, line: line)
    }

    func testStartsAreLimitedPerClientAddressThenOnTheReplica() async throws {
        // Ten per address at once (then one every six minutes), thirty on the replica (then one every 12 s).
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "10/h", "PASSKEY_RATE_LIMIT_START_GLOBAL": "300/h",
        ])
        answerEveryStart()
        let signIn = "/v1/passkeys/authentications"
        let addPasskey = "/v1/passkeys/registrations"
        for index in 0..<10 {
            // Both start routes share the address's bucket.
            let path = index % 2 == 0 ? signIn : addPasskey
            let response = await application.respond(to: post(path, from: "198.51.100.1", token: "t"))
            XCTAssertEqual(response.status, 200, path)
        }
        try assertLimited(await application.respond(to: post(signIn, from: "198.51.100.1")))
        try assertLimited(await application.respond(to: post(addPasskey, from: "198.51.100.1", token: "t")))
        XCTAssertEqual(calls(ChallengeServiceMethods.beginAuthentication), 5, "a refused start writes nothing")
        XCTAssertEqual(calls(ChallengeServiceMethods.beginRegistration), 5)
        XCTAssertEqual(calls(SessionServiceMethods.validateSession), 5, "refused before the token is checked")

        // Other addresses have buckets of their own, until the replica's is empty.
        for address in ["198.51.100.2", "198.51.100.3"] {
            for _ in 0..<10 {
                let status = await application.respond(to: post(signIn, from: address)).status
                XCTAssertEqual(status, 200, address)
            }
        }
        try assertLimited(await application.respond(to: post(signIn, from: "198.51.100.4")))
        XCTAssertEqual(calls(ChallengeServiceMethods.beginAuthentication), 25)

        clock.advance(12)
        let refilled = await application.respond(to: post(signIn, from: "198.51.100.4"))
        XCTAssertEqual(refilled.status, 200, "one start every 12 s on the replica")
        try assertLimited(await application.respond(to: post(signIn, from: "198.51.100.5")))

        let metrics = application.metrics.exposition()
        XCTAssertTrue(metrics.contains(#"gateway_rate_limited_total{limit="start_per_address"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"gateway_rate_limited_total{limit="start_global"} 2"#), metrics)
    }

    func testAnIPv6ClientIsCountedByItsSlash64() async throws {
        // Ten at once per client (the smallest burst).
        let application = try makeApplication(["PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "10/h"])
        answerEveryStart()
        let signIn = "/v1/passkeys/authentications"
        // Ten addresses of one /64, each new, take the block's ten starts between them.
        let block =
            ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:DB8:1:2:0:0:0:9"]
            + (1...7).map { "2001:db8:1:2:\(String($0 * 4099, radix: 16))::\($0)" }
        for address in block {
            let status = await application.respond(to: post(signIn, from: address)).status
            XCTAssertEqual(status, 200, address)
        }
        for address in ["2001:db8:1:2::1", "2001:db8:1:2:abcd::77", "[2001:db8:1:2::3]:443"] {
            try assertLimited(await application.respond(to: post(signIn, from: address)))
        }
        XCTAssertEqual(calls(ChallengeServiceMethods.beginAuthentication), 10)
        // The next /64 and IPv4 addresses have buckets of their own.
        for address in ["2001:db8:1:3::1", "198.51.100.7", "198.51.100.8", "::ffff:198.51.100.9"] {
            let status = await application.respond(to: post(signIn, from: address)).status
            XCTAssertEqual(status, 200, address)
        }
    }

    func testTheIPv6PrefixIsConfigurableFrom48To64() async throws {
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "10/h", "PASSKEY_RATE_LIMIT_IPV6_PREFIX": "48",
        ])
        answerEveryStart()
        let signIn = "/v1/passkeys/authentications"
        for index in 0..<10 {
            let address = "2001:db8:1:\(String(index * 6007, radix: 16))::1"
            let status = await application.respond(to: post(signIn, from: address)).status
            XCTAssertEqual(status, 200, address)
        }
        try assertLimited(await application.respond(to: post(signIn, from: "2001:db8:1:abcd::5")))
        let status = await application.respond(to: post(signIn, from: "2001:db8:2::1")).status
        XCTAssertEqual(status, 200, "another /48")

        XCTAssertEqual(try GatewayConfiguration(environment: [:]).rateLimitIPv6PrefixLength, 64)
        XCTAssertEqual(
            try GatewayConfiguration(environment: ["PASSKEY_RATE_LIMIT_IPV6_PREFIX": "56"]).rateLimitIPv6PrefixLength,
            56)
        for bad in ["47", "65", "128", "0", "/64", "sixty-four"] {
            XCTAssertThrowsError(try GatewayConfiguration(environment: ["PASSKEY_RATE_LIMIT_IPV6_PREFIX": bad]), bad) {
                XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_RATE_LIMIT_IPV6_PREFIX")
            }
        }
        let resolver = ClientAddressResolver(trustedProxies: [], ipv6LimitPrefixLength: 56)
        XCTAssertEqual(resolver.limitKey(of: "2001:db8:1:2ff::1"), "2001:db8:1:200::/56")
        XCTAssertEqual(resolver.limitKey(of: "198.51.100.7"), "198.51.100.7")
        XCTAssertEqual(resolver.limitKey(of: "/run/gateway.sock"), "/run/gateway.sock")
    }

    func testSignUpsAreLimitedApartFromSignInStarts() async throws {
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "10/h", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "200/h",
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "10/h",
        ])
        answerEveryStart()
        let password = "/v1/accounts/password"
        let passkey = "/v1/passkeys/account-registrations"
        let account: JSONValue = ["email": "a@x.io", "password": "long enough password", "displayName": "A"]
        for index in 0..<10 {
            let response =
                index % 2 == 0
                ? await application.respond(to: post(password, account, from: "203.0.113.1"))
                : await application.respond(to: post(passkey, from: "203.0.113.1"))
            XCTAssertEqual(response.status, index % 2 == 0 ? 201 : 200)
        }
        try assertLimited(await application.respond(to: post(password, account, from: "203.0.113.1")))
        try assertLimited(await application.respond(to: post(passkey, from: "203.0.113.1")))
        XCTAssertEqual(calls(SessionServiceMethods.createPasswordAccount), 5)
        XCTAssertEqual(calls(ChallengeServiceMethods.beginAccountRegistration), 5)
        // Signing in from the same address is still possible: sign-ups have buckets of their own.
        let signIn = await application.respond(to: post("/v1/passkeys/authentications", from: "203.0.113.1"))
        XCTAssertEqual(signIn.status, 200)

        for _ in 0..<10 {
            let status = await application.respond(to: post(passkey, from: "203.0.113.2")).status
            XCTAssertEqual(status, 200)
        }
        try assertLimited(await application.respond(to: post(password, account, from: "203.0.113.3")))
        let metrics = application.metrics.exposition()
        XCTAssertTrue(metrics.contains(#"gateway_rate_limited_total{limit="signup_per_address"} 2"#), metrics)
        XCTAssertTrue(metrics.contains(#"gateway_rate_limited_total{limit="signup_global"} 1"#), metrics)
    }

    func testZeroTurnsEachLimitOff() async throws {
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_GLOBAL": "0",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "0",
        ])
        answerEveryStart()
        for _ in 0..<700 {
            let status = await application.respond(to: post("/v1/passkeys/authentications", from: "192.0.2.1")).status
            XCTAssertEqual(status, 200)
        }
        for _ in 0..<40 {
            let status = await application.respond(to: post("/v1/passkeys/account-registrations", from: "192.0.2.1"))
                .status
            XCTAssertEqual(status, 200)
        }
        XCTAssertFalse(application.metrics.exposition().contains("gateway_rate_limited_total"))
    }

    func testTheDefaultsLetAnAppSignInOftenButStopAFloodFromOneAddress() async throws {
        let application = try makeApplication([:])
        answerEveryStart()
        var statuses: [Int: Int] = [:]
        for _ in 0..<700 {
            let status = await application.respond(to: post("/v1/passkeys/authentications", from: "192.0.2.9")).status
            statuses[status, default: 0] += 1
        }
        // 6,000 a minute per address, with a burst of 600.
        XCTAssertEqual(statuses, [200: 600, 429: 100])
        var signUps: [Int: Int] = [:]
        for _ in 0..<20 {
            let status = await application.respond(to: post("/v1/passkeys/account-registrations", from: "192.0.2.9"))
                .status
            signUps[status, default: 0] += 1
        }
        // 30 a minute per address, with a burst of 10.
        XCTAssertEqual(signUps, [200: 10, 429: 10])
    }

    func testARequestWhoseTaskWasCancelledCallsNoService() async throws {
        let application = try makeApplication([:])
        answerEveryStart()
        let request = post("/v1/passkeys/authentications", from: "192.0.2.1")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await application.respond(to: request)
        }
        let response = await task.value
        XCTAssertEqual(response.status, 499)
        XCTAssertEqual(backends.paths, [])
        let metrics = application.metrics.exposition()
        XCTAssertTrue(
            metrics.contains(#"gateway_http_requests_total{route="POST /v1/passkeys/authentications",status="499"} 1"#),
            metrics)
        let answered = await application.respond(to: request)
        XCTAssertEqual(answered.status, 200, "an uncancelled request is served")
    }
}
