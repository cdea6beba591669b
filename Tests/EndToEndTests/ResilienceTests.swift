import Foundation
import PasskeyClient
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class ResilienceTests: XCTestCase {
    func testAKilledServiceGivesAQuick503AndRecoversWithoutRestartingTheGateway() async throws {
        let stack = try await Stack()
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        let email = flows.uniqueEmail()
        _ = try await flows.signUpWithPassword(email: email)

        stack.session.kill()
        let started = Date()
        let down = await flows.outcome(PasswordSignInOperation(email: email, password: "correct horse battery"))
        XCTAssertEqual(down.status, 503, down.description)
        XCTAssertEqual(down.code, .unavailable)
        XCTAssertTrue(down.headers["content-type"]?.hasPrefix("application/problem+json") ?? false)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.5)
        let readiness = await flows.outcome(ReadinessOperation())
        XCTAssertEqual(readiness.status, 503)
        XCTAssertEqual(readiness.value?.status, "unavailable")

        try stack.session.start()
        XCTAssertTrue(waitUntil { isListening(stack.sessionPort) })
        var recovered = 0
        for _ in 0..<50 where recovered == 0 {
            let response = await flows.outcome(PasswordSignInOperation(email: email, password: "correct horse battery"))
            if response.status == 200 { recovered += 1 } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertEqual(recovered, 1, "the gateway did not recover:\n\(stack.logs)")
    }

    func testTwoVerificationReplicasBothTakeTraffic() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: true)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        for _ in 0..<10 { await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200) }
        for replica in stack.verification {
            XCTAssertTrue(replica.log.contains("audit.sign_in.succeeded"), "a replica took no sign-in:\n\(replica.log)")
        }
    }

    /// Each replica keeps the credentials it used; a stale one must never decide a sign-in.
    func testReplicasWithStaleCredentialCachesStillEnforceCountersAndRemoval() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: false)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        // Calls alternate between the replicas, so each one's cached count falls behind the other's updates.
        for attempt in 0..<8 {
            let signedIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signedIn.status, 200, "sign-in \(attempt): \(signedIn)")
        }
        // A counter that went backwards is refused by whichever replica takes it.
        var cloned = authenticator
        cloned.signCount = 2
        for _ in 0..<2 {
            let replayed = try await flows.signInWithPasskey(&cloned)
            XCTAssertEqual(replayed.status, 401, replayed.description)
            XCTAssertEqual(replayed.reason, .signCountRegressed, replayed.description)
        }
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
        // Removed through one replica (after adding another, as the last way to sign in stays); both must refuse it.
        let signedIn = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(signedIn.status, 200, signedIn.description)
        try await flows.addPasskey(signedIn.client, authenticator: SoftwareAuthenticator())
        let removed = await flows.outcome(
            PasskeyRemovalOperation(credentialID: Data(authenticator.credentialID)), with: signedIn.client)
        XCTAssertEqual(removed.status, 204, removed.description)
        for _ in 0..<2 {
            await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 401)
        }
    }

    func testPasswordSignInIsRateLimitedPerEmail() async throws {
        let stack = try await Stack(environment: ["PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "10/m"])
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        let email = flows.uniqueEmail()
        var statuses: [Int?] = []
        var limited: PasskeyClientError?
        for _ in 0..<12 {
            let response = await flows.outcome(PasswordSignInOperation(email: email, password: "wrong password"))
            statuses.append(response.status)
            if response.status == 429 { limited = response.error }
        }
        XCTAssertEqual(statuses.prefix(10).filter { $0 == 401 }.count, 10, "\(statuses)")
        let refusal = try XCTUnwrap(limited, "\(statuses)")
        XCTAssertEqual(refusal.code, .rateLimited)
        XCTAssertGreaterThanOrEqual(refusal.retryAfterSeconds ?? 0, 1)
        XCTAssertGreaterThanOrEqual(Int(refusal.headers["retry-after"] ?? "") ?? 0, 1)
        // Another email is not limited.
        let other = await flows.outcome(PasswordSignInOperation(email: flows.uniqueEmail(), password: "x"))
        XCTAssertEqual(other.status, 401)
    }

    func testTheSameFlowOverHTTP2() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else { throw XCTSkip("curl is missing") }
        let stack = try await Stack()
        addTeardownBlock { await stack.tearDown() }
        let email = "h2-\(UUID().uuidString.prefix(8))@example.com"
        func curl(_ method: String, _ path: String, _ body: String?, bearer: String? = nil) throws -> (Int, Data) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            var arguments = ["-s", "--http2-prior-knowledge", "-X", method, "-w", "\n%{http_version} %{http_code}"]
            if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
            if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
            process.arguments = arguments + ["http://127.0.0.1:\(stack.gatewayPort)\(path)"]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            process.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let trailer = lines.last?.split(separator: " ") ?? []
            XCTAssertEqual(trailer.first, "2", "not HTTP/2: \(text)")
            return (Int(trailer.last ?? "") ?? 0, Data(lines.dropLast().joined(separator: "\n").utf8))
        }
        /// A body as the library reads it from the gateway.
        func decoded<Operation: PasskeyAPIOperation>(_ operation: Operation, _ body: Data) throws
            -> Operation.Response
        {
            try operation.decodeResponse(
                PasskeyHTTPResponse(status: 200, headers: ["content-type": "application/json"], body: body))
        }
        /// A body as the library writes it.
        func encoded(_ operation: some PasskeyAPIOperation) throws -> String {
            String(decoding: try XCTUnwrap(operation.body.encoded()).data, as: UTF8.self)
        }
        let signUp = PasswordAccountCreationOperation(email: email, password: "correct horse battery", displayName: "H")
        XCTAssertEqual(try curl("POST", "/v1/accounts/password", try encoded(signUp)).0, 201)
        let signIn = PasswordSignInOperation(email: email, password: "correct horse battery")
        let (status, session) = try curl("POST", "/v1/sessions/password", try encoded(signIn))
        XCTAssertEqual(status, 200)
        let token = try decoded(signIn, session).accessToken
        let (startStatus, startBody) = try curl(
            "POST", "/v1/passkeys/registrations", try encoded(PasskeyRegistrationStartOperation()), bearer: token)
        XCTAssertEqual(startStatus, 200)
        let start = try decoded(PasskeyRegistrationStartOperation(), startBody)
        let authenticator = SoftwareAuthenticator()
        let registration = authenticator.makeRegistration(
            challenge: [UInt8](start.challenge), rpID: Stack.relyingPartyID, origin: Stack.origin)
        let finish = PasskeyRegistrationFinishOperation(
            challengeID: start.challengeID, credential: Flows(stack).credential(registration), encoding: .webAuthnJSON)
        XCTAssertEqual(try curl("POST", "/v1/passkeys/registrations/finish", try encoded(finish), bearer: token).0, 204)
        XCTAssertEqual(try curl("GET", "/v1/passkeys", nil, bearer: token).0, 200)
    }
}
