import Foundation
import PostgresTestSupport
import XCTest

final class PasswordAndSessionTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func flows() async throws -> (Flows, Stack) {
        let stack = try await Self.shared.get()
        return (Flows(client: GatewayClient(baseURL: stack.gatewayURL)), stack)
    }

    func testPasswordSignUpSignInAndTheSignedInAccount() async throws {
        let (flows, _) = try await flows()
        let email = flows.uniqueEmail("ada")
        let accountID = try await flows.signUpWithPassword(email: email, name: "Ada Lovelace")
        XCTAssertEqual(accountID.count, 36)

        // Emails compare after trimming and lowercasing, at sign-in too.
        let signIn = try await flows.client.post(
            "/v1/sessions/password", ["email": "  " + email.uppercased() + " ", "password": "correct horse battery"])
        XCTAssertEqual(signIn.status, 200, signIn.text)
        XCTAssertEqual(signIn.json["tokenType"] as? String, "Bearer")
        XCTAssertEqual(signIn.json["accountID"] as? String, accountID)
        XCTAssertEqual(signIn.json["displayName"] as? String, "Ada Lovelace")
        let expiresAt = signIn.json["expiresAt"] as? String ?? ""
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expiry = ISO8601DateFormatter().date(from: expiresAt) ?? fractional.date(from: expiresAt)
        XCTAssertNotNil(expiry, expiresAt)
        XCTAssertTrue(expiresAt.hasSuffix("Z"), expiresAt)
        // PASSKEY_SESSION_LIFETIME defaults to 30 days.
        XCTAssertEqual(expiry?.timeIntervalSinceNow ?? 0, 30 * 86_400, accuracy: 120)
        let token = try XCTUnwrap(signIn.json["accessToken"] as? String)

        let session = try await flows.client.get("/v1/session", bearer: token)
        XCTAssertEqual(session.status, 200, session.text)
        XCTAssertEqual(session.json["accountID"] as? String, accountID)
        XCTAssertEqual(session.json["authenticationMethod"] as? String, "password")

        let account = try await flows.client.get("/v1/account", bearer: token)
        XCTAssertEqual(account.status, 200, account.text)
        XCTAssertEqual(account.json["emails"] as? [String], [email])
        XCTAssertEqual(account.json["hasPassword"] as? Bool, true)
        XCTAssertEqual(account.json["passkeyCount"] as? Int, 0)
    }

    func testPasswordErrorsLookTheSameAndLeakNothing() async throws {
        let (flows, _) = try await flows()
        let email = flows.uniqueEmail()
        _ = try await flows.signUpWithPassword(email: email)

        let taken = try await flows.client.post(
            "/v1/accounts/password", ["email": email.uppercased(), "password": "another password", "displayName": "X"])
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.code, "email_taken")
        XCTAssertTrue(taken.contentType.hasPrefix("application/problem+json"), taken.contentType)

        let wrong = try await flows.client.post("/v1/sessions/password", ["email": email, "password": "wrong password"])
        let unknown = try await flows.client.post(
            "/v1/sessions/password", ["email": flows.uniqueEmail(), "password": "wrong password"])
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(unknown.status, 401)
        XCTAssertEqual(wrong.code, "invalid_credentials")
        XCTAssertEqual(wrong.json as NSDictionary, unknown.json as NSDictionary)
    }

    func testMalformedRequestsAreRejectedWithTheirCodes() async throws {
        let (flows, _) = try await flows()
        let client = flows.client
        let badJSON = try await client.send(
            "POST", "/v1/accounts/password", body: Data("{\"email\":".utf8), headers: ["Content-Type": "application/json"])
        XCTAssertEqual(badJSON.status, 400)
        XCTAssertEqual(badJSON.code, "invalid_request")
        let missing = try await client.post("/v1/accounts/password", ["email": "a@example.com"])
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(missing.code, "invalid_request")
        let mistyped = try await client.post("/v1/sessions/password", ["email": 42, "password": "x"])
        XCTAssertEqual(mistyped.code, "invalid_request")
        let shortPassword = try await client.post(
            "/v1/accounts/password", ["email": flows.uniqueEmail(), "password": "short", "displayName": "A"])
        XCTAssertEqual(shortPassword.status, 400)
        let notJSON = try await client.send(
            "POST", "/v1/sessions/password", body: Data("email=a".utf8),
            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        XCTAssertEqual(notJSON.status, 415)
        XCTAssertEqual(notJSON.code, "unsupported_media_type")
        let large = try await client.send(
            "POST", "/v1/sessions/password", body: Data(repeating: 0x20, count: 70 * 1024),
            headers: ["Content-Type": "application/json"])
        XCTAssertEqual(large.status, 413)
        XCTAssertEqual(large.code, "payload_too_large")
        let badBase64 = try await client.post(
            "/v1/passkeys/authentications/finish",
            ["challengeID": UUID().uuidString, "credentialID": "!!", "clientDataJSON": "a", "authenticatorData": "a",
             "signature": "a", "userHandle": "a"])
        XCTAssertEqual(badBase64.status, 400)
        XCTAssertEqual(badBase64.code, "invalid_request")
    }

    func testBearerIsRequiredAndRevokedSessionsStopWorking() async throws {
        let (flows, _) = try await flows()
        for path in ["/v1/session", "/v1/sessions", "/v1/account", "/v1/passkeys"] {
            let missing = try await flows.client.get(path)
            XCTAssertEqual(missing.status, 401, path)
            XCTAssertEqual(missing.code, "unauthenticated", path)
            let bogus = try await flows.client.get(path, bearer: "not-a-token")
            XCTAssertEqual(bogus.status, 401, path)
        }
        let user = try await flows.passwordUser()
        let second = try await flows.signInWithPassword(email: user.email)

        let sessions = try await flows.client.get("/v1/sessions", bearer: user.token)
        let list = try XCTUnwrap(sessions.json["sessions"] as? [[String: Any]])
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.filter { $0["current"] as? Bool == true }.count, 1)
        let current = try await flows.client.get("/v1/session", bearer: user.token)
        let currentID = try XCTUnwrap(current.json["sessionID"] as? String)
        let otherID = try XCTUnwrap(list.first { ($0["sessionID"] as? String) != currentID }?["sessionID"] as? String)

        // Another account cannot see or revoke it.
        let stranger = try await flows.passwordUser()
        let foreign = try await flows.client.send("DELETE", "/v1/sessions/\(otherID)", bearer: stranger.token)
        XCTAssertEqual(foreign.status, 404)
        XCTAssertEqual(foreign.code, "not_found")
        await assertEqual(try await flows.client.get("/v1/session", bearer: second).status, 200)

        let revoke = try await flows.client.send("DELETE", "/v1/sessions/\(otherID)", bearer: user.token)
        XCTAssertEqual(revoke.status, 204, revoke.text)
        await assertEqual(try await flows.client.get("/v1/session", bearer: second).status, 401)

        let signOut = try await flows.client.send("DELETE", "/v1/session", bearer: user.token)
        XCTAssertEqual(signOut.status, 204)
        let after = try await flows.client.get("/v1/session", bearer: user.token)
        XCTAssertEqual(after.status, 401)
        XCTAssertEqual(after.code, "unauthenticated")
    }

    func testExpiredSessionsAreRefused() async throws {
        let (flows, stack) = try await flows()
        let user = try await flows.passwordUser()
        _ = try await stack.sql(
            "UPDATE authentication_sessions SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE account_id = \(try XCTUnwrap(UUID(uuidString: user.accountID)))")
        await assertEqual(try await flows.client.get("/v1/session", bearer: user.token).status, 401)
    }

    func testEachServiceServesMetricsAndHealth() async throws {
        let (flows, stack) = try await flows()
        _ = try await flows.passwordUser()
        for (service, port) in stack.metricsPorts {
            let client = GatewayClient(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
            let metrics = try await client.get("/metrics")
            XCTAssertEqual(metrics.status, 200, service)
            XCTAssertTrue(metrics.contentType.hasPrefix("text/plain"), service)
            XCTAssertTrue(metrics.text.contains("db_pool_busy_connections{service=\"\(service)\"}"), metrics.text)
            await assertEqual(try await client.get("/healthz").status, 200, service)
        }
        let session = GatewayClient(baseURL: URL(string: "http://127.0.0.1:\(stack.metricsPorts["session-service"]!)")!)
        let text = try await session.get("/metrics").text
        XCTAssertTrue(
            text.contains(
                "rpc_server_duration_seconds_count{service=\"session-service\",method=\"SignInWithPassword\",outcome=\"ok\"}"),
            text)
    }

    func testWellKnownFilesAndOperations() async throws {
        let (flows, _) = try await flows()
        let aasa = try await flows.client.get("/.well-known/apple-app-site-association")
        XCTAssertEqual(aasa.status, 200)
        XCTAssertTrue(aasa.contentType.hasPrefix("application/json"))
        XCTAssertEqual((aasa.json["webcredentials"] as? [String: Any])?["apps"] as? [String], ["ABCDE12345.com.example.app"])
        let assetLinks = try await flows.client.get("/.well-known/assetlinks.json")
        XCTAssertEqual(assetLinks.status, 200)
        XCTAssertTrue(assetLinks.text.contains("delegate_permission/common.get_login_creds"))
        XCTAssertTrue(assetLinks.text.contains("com.example.app"))
        let webauthn = try await flows.client.get("/.well-known/webauthn")
        XCTAssertEqual(webauthn.json["origins"] as? [String], [Stack.origin])
        let endpoints = try await flows.client.get("/.well-known/passkey-endpoints")
        XCTAssertNotNil(endpoints.json["enroll"] as? String)
        await assertEqual(try await flows.client.get("/healthz").status, 200)
        await assertEqual(try await flows.client.get("/readyz").status, 200)
        let metrics = try await flows.client.get("/metrics")
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.text.contains("# TYPE"))
        let openapi = try await flows.client.get("/openapi.json")
        XCTAssertEqual(openapi.status, 200)
        XCTAssertTrue((openapi.json["openapi"] as? String ?? "").hasPrefix("3.1"))
        let paths = try XCTUnwrap(openapi.json["paths"] as? [String: Any])
        for path in ["/v1/accounts/password", "/v1/sessions/password", "/v1/passkeys/registrations/finish",
            "/v1/passkeys/account-registrations/finish", "/v1/passkeys/authentications/finish", "/v1/session"]
        {
            XCTAssertNotNil(paths[path], path)
        }
        await assertEqual(try await flows.client.get("/v1/nothing-here").status, 404)
    }
}

final class WebPageTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func testTheDemoPageIsServedWithAStrictPolicy() async throws {
        let client = GatewayClient(baseURL: try await Self.shared.get().gatewayURL)
        let page = try await client.get("/")
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.contentType.hasPrefix("text/html"))
        XCTAssertTrue(page.text.contains("autocomplete=\"username webauthn\""))
        XCTAssertTrue(page.headers["content-security-policy"]?.contains("default-src 'self'") ?? false)
        let script = try await client.get("/app.js")
        XCTAssertEqual(script.status, 200)
        XCTAssertTrue(script.contentType.hasPrefix("text/javascript"))
        XCTAssertTrue(script.text.contains("parseCreationOptionsFromJSON"))
        let style = try await client.get("/app.css")
        XCTAssertTrue(style.contentType.hasPrefix("text/css"))
        let post = try await client.send("POST", "/", json: [:] as [String: Any])
        XCTAssertEqual(post.status, 404)
    }
}
