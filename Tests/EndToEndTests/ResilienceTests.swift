import Encoding
import Foundation
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class ResilienceTests: XCTestCase {
    func testAKilledServiceGivesAQuick503AndRecoversWithoutRestartingTheGateway() async throws {
        let stack = try await Stack()
        defer { Task { await stack.tearDown() } }
        let flows = Flows(client: GatewayClient(baseURL: stack.gatewayURL))
        let email = flows.uniqueEmail()
        _ = try await flows.signUpWithPassword(email: email)

        stack.session.kill()
        let started = Date()
        let down = try await flows.client.post("/v1/sessions/password", ["email": email, "password": "correct horse battery"])
        XCTAssertEqual(down.status, 503, down.text)
        XCTAssertEqual(down.code, "unavailable")
        XCTAssertTrue(down.contentType.hasPrefix("application/problem+json"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 3.5)
        await assertEqual(try await flows.client.get("/readyz").status, 503)

        try stack.session.start()
        XCTAssertTrue(waitUntil { isListening(stack.sessionPort) })
        var recovered = 0
        for _ in 0..<50 where recovered == 0 {
            let response = try await flows.client.post(
                "/v1/sessions/password", ["email": email, "password": "correct horse battery"])
            if response.status == 200 { recovered += 1 } else { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertEqual(recovered, 1, "the gateway did not recover:\n\(stack.logs)")
    }

    func testTwoVerificationReplicasBothTakeTraffic() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        defer { Task { await stack.tearDown() } }
        let flows = Flows(client: GatewayClient(baseURL: stack.gatewayURL))
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: true)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.text)
        for _ in 0..<10 { await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200) }
        for replica in stack.verification {
            XCTAssertTrue(replica.log.contains("audit.sign_in_succeeded"), "a replica took no sign-in:\n\(replica.log)")
        }
    }

    /// Each replica keeps the credentials it used; a stale one must never decide a sign-in.
    func testReplicasWithStaleCredentialCachesStillEnforceCountersAndRemoval() async throws {
        let stack = try await Stack(verificationReplicas: 2)
        defer { Task { await stack.tearDown() } }
        let flows = Flows(client: GatewayClient(baseURL: stack.gatewayURL))
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: false)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.text)
        // Calls alternate between the replicas, so each one's cached count falls behind the other's updates.
        for attempt in 0..<8 {
            let signedIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signedIn.status, 200, "sign-in \(attempt): \(signedIn.text)")
        }
        // A counter that went backwards is refused by whichever replica takes it.
        var cloned = authenticator
        cloned.signCount = 2
        for _ in 0..<2 {
            let replayed = try await flows.signInWithPasskey(&cloned)
            XCTAssertEqual(replayed.status, 401, replayed.text)
            XCTAssertEqual(replayed.json["reason"] as? String, "sign_count_regressed", replayed.text)
        }
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
        // Removed through one replica (after adding another, as the last way to sign in stays); both must refuse it.
        let signedIn = try await flows.signInWithPasskey(&authenticator)
        let token = try XCTUnwrap(signedIn.json["accessToken"] as? String, signedIn.text)
        try await flows.addPasskey(token: token, authenticator: SoftwareAuthenticator())
        let passkeyID = Base64URL.encode(authenticator.credentialID)
        let removed = try await flows.client.send("DELETE", "/v1/passkeys/\(passkeyID)", bearer: token)
        XCTAssertEqual(removed.status, 204, removed.text)
        for _ in 0..<2 {
            await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 401)
        }
    }

    func testPasswordSignInIsRateLimitedPerEmail() async throws {
        let stack = try await Stack(environment: ["PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "10/m"])
        defer { Task { await stack.tearDown() } }
        let flows = Flows(client: GatewayClient(baseURL: stack.gatewayURL))
        let email = flows.uniqueEmail()
        var statuses: [Int] = []
        var limited: GatewayResponse?
        for _ in 0..<12 {
            let response = try await flows.client.post("/v1/sessions/password", ["email": email, "password": "wrong password"])
            statuses.append(response.status)
            if response.status == 429 { limited = response }
        }
        XCTAssertEqual(statuses.prefix(10).filter { $0 == 401 }.count, 10, "\(statuses)")
        let refusal = try XCTUnwrap(limited, "\(statuses)")
        XCTAssertEqual(refusal.code, "rate_limited")
        XCTAssertGreaterThanOrEqual(Int(refusal.headers["retry-after"] ?? "") ?? 0, 1)
        // Another email is not limited.
        let other = try await flows.client.post("/v1/sessions/password", ["email": flows.uniqueEmail(), "password": "x"])
        XCTAssertEqual(other.status, 401)
    }

    func testTheSameFlowOverHTTP2() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else { throw XCTSkip("curl is missing") }
        let stack = try await Stack()
        defer { Task { await stack.tearDown() } }
        let email = "h2-\(UUID().uuidString.prefix(8))@example.com"
        func curl(_ method: String, _ path: String, _ body: String?, bearer: String? = nil) throws -> (Int, [String: Any]) {
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
            let json = (try? JSONSerialization.jsonObject(with: Data(lines.dropLast().joined(separator: "\n").utf8))) as? [String: Any]
            return (Int(trailer.last ?? "") ?? 0, json ?? [:])
        }
        XCTAssertEqual(
            try curl("POST", "/v1/accounts/password", "{\"email\":\"\(email)\",\"password\":\"correct horse battery\",\"displayName\":\"H\"}").0,
            201)
        let (status, session) = try curl("POST", "/v1/sessions/password", "{\"email\":\"\(email)\",\"password\":\"correct horse battery\"}")
        XCTAssertEqual(status, 200)
        let token = try XCTUnwrap(session["accessToken"] as? String)
        let (startStatus, start) = try curl("POST", "/v1/passkeys/registrations", "{}", bearer: token)
        XCTAssertEqual(startStatus, 200)
        let authenticator = SoftwareAuthenticator()
        let registration = authenticator.makeRegistration(
            challenge: Base64URL.decode(start["challenge"] as? String ?? "") ?? [], rpID: Stack.relyingPartyID,
            origin: Stack.origin)
        var body = Flows(client: GatewayClient(baseURL: stack.gatewayURL)).registrationBody(registration, form: .credential)
        body["challengeID"] = start["challengeID"]
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        XCTAssertEqual(try curl("POST", "/v1/passkeys/registrations/finish", json, bearer: token).0, 204)
        XCTAssertEqual(try curl("GET", "/v1/passkeys", nil, bearer: token).0, 200)
    }
}
