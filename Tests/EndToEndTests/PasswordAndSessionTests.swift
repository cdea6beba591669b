import Foundation
import PasskeyClient
import Postgres
import PostgresTestSupport
import XCTest

final class PasswordAndSessionTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func flows() async throws -> (Flows, Stack) {
        let stack = try await Self.shared.get()
        return (Flows(stack), stack)
    }

    func testPasswordSignUpSignInAndTheSignedInAccount() async throws {
        let (flows, _) = try await flows()
        let email = flows.uniqueEmail("ada")
        let accountID = try await flows.signUpWithPassword(email: email, name: "Ada Lovelace")
        XCTAssertEqual(accountID.count, 36)

        // Emails compare after trimming and lowercasing, at sign-in too.
        let signIn = await flows.outcome(
            Verbatim(PasswordSignInOperation(email: "  " + email.uppercased() + " ", password: "correct horse battery"))
        )
        XCTAssertEqual(signIn.status, 200, signIn.description)
        let session = try XCTUnwrap(signIn.value?.value)
        XCTAssertEqual(session.tokenType, "Bearer")
        XCTAssertEqual(session.accountID, accountID)
        XCTAssertEqual(session.displayName, "Ada Lovelace")
        let expiresAt = signIn.value?.json["expiresAt"] ?? ""
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expiry = ISO8601DateFormatter().date(from: expiresAt) ?? fractional.date(from: expiresAt)
        XCTAssertNotNil(expiry, expiresAt)
        XCTAssertEqual(expiry, session.expiresAt)
        XCTAssertTrue(expiresAt.hasSuffix("Z"), expiresAt)
        // The access token lives PASSKEY_ACCESS_TOKEN_LIFETIME (10 minutes); the session PASSKEY_SESSION_LIFETIME
        // (30 days).
        XCTAssertEqual(session.expiresAt.timeIntervalSinceNow, 600, accuracy: 120)
        let sessionEnd = ISO8601DateFormatter().date(from: signIn.value?.json["sessionExpiresAt"] ?? "")
        XCTAssertEqual(sessionEnd?.timeIntervalSinceNow ?? 0, 30 * 86_400, accuracy: 120)
        // The client keeps the token for the routes that need it.
        let token = try await signIn.client.accessToken()
        XCTAssertEqual(token?.value, session.accessToken)

        let current = await flows.outcome(CurrentSessionOperation(), with: signIn.client)
        XCTAssertEqual(current.status, 200, current.description)
        XCTAssertEqual(current.value?.accountID, accountID)
        XCTAssertEqual(current.value?.authenticationMethod, .password)

        let account = await flows.outcome(AccountOperation(), with: signIn.client)
        XCTAssertEqual(account.status, 200, account.description)
        XCTAssertEqual(account.value?.emails, [email])
        XCTAssertEqual(account.value?.hasPassword, true)
        XCTAssertEqual(account.value?.passkeyCount, 0)
    }

    func testPasswordErrorsLookTheSameAndLeakNothing() async throws {
        let (flows, _) = try await flows()
        let email = flows.uniqueEmail()
        _ = try await flows.signUpWithPassword(email: email)

        let taken = await flows.outcome(
            PasswordAccountCreationOperation(email: email.uppercased(), password: "another password", displayName: "X"))
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.code, .emailTaken)
        XCTAssertTrue(taken.error?.isProblem ?? false)
        XCTAssertTrue(taken.headers["content-type"]?.hasPrefix("application/problem+json") ?? false, taken.description)

        let wrong = await flows.outcome(PasswordSignInOperation(email: email, password: "wrong password"))
        let unknown = await flows.outcome(
            PasswordSignInOperation(email: flows.uniqueEmail(), password: "wrong password"))
        XCTAssertEqual(wrong.status, 401)
        XCTAssertEqual(unknown.status, 401)
        XCTAssertEqual(wrong.code, .invalidCredentials)
        // The whole problem document is the same: type, status, code, reason and detail.
        for error in [wrong.error, unknown.error] {
            XCTAssertNil(error?.reason)
        }
        XCTAssertEqual(wrong.error?.problemType, unknown.error?.problemType)
        XCTAssertEqual(wrong.error?.detail, unknown.error?.detail)
    }

    func testMalformedRequestsAreRejectedWithTheirCodes() async throws {
        let (flows, _) = try await flows()
        let badJSON = await flows.outcome(RawRequest(.post, "/v1/accounts/password", json: "{\"email\":"))
        XCTAssertEqual(badJSON.status, 400)
        XCTAssertEqual(badJSON.code, .invalidRequest)
        let missing = await flows.outcome(
            RawRequest(.post, "/v1/accounts/password", body: .json(["email": "a@example.com"])))
        XCTAssertEqual(missing.status, 400)
        XCTAssertEqual(missing.code, .invalidRequest)
        let mistyped = await flows.outcome(
            RawRequest(.post, "/v1/sessions/password", json: #"{"email":42,"password":"x"}"#))
        XCTAssertEqual(mistyped.code, .invalidRequest)
        let shortPassword = await flows.outcome(
            PasswordAccountCreationOperation(email: flows.uniqueEmail(), password: "short", displayName: "A"))
        XCTAssertEqual(shortPassword.status, 400)
        let notJSON = await flows.outcome(
            RawRequest(
                .post, "/v1/sessions/password",
                body: .raw(Data("email=a".utf8), contentType: "application/x-www-form-urlencoded")))
        XCTAssertEqual(notJSON.status, 415)
        XCTAssertEqual(notJSON.code, .unsupportedMediaType)
        let large = await flows.outcome(
            RawRequest(
                .post, "/v1/sessions/password",
                body: .raw(Data(repeating: 0x20, count: 70 * 1024), contentType: "application/json")))
        XCTAssertEqual(large.status, 413)
        XCTAssertEqual(large.code, .payloadTooLarge)
        let badBase64 = await flows.outcome(
            RawRequest(
                .post, "/v1/passkeys/authentications/finish",
                body: .json([
                    "challengeID": UUID().uuidString, "credentialID": "!!", "clientDataJSON": "a",
                    "authenticatorData": "a", "signature": "a", "userHandle": "a",
                ])))
        XCTAssertEqual(badBase64.status, 400)
        XCTAssertEqual(badBase64.code, .invalidRequest)
    }

    func testBearerIsRequiredAndRevokedSessionsStopWorking() async throws {
        let (flows, _) = try await flows()
        let signedIn: [any PasskeyAPIOperation] = [
            CurrentSessionOperation(), SessionListOperation(), AccountOperation(), PasskeyListOperation(),
        ]
        for operation in signedIn {
            let missing = await flows.statusAndCode(operation)
            XCTAssertEqual(missing.status, 401, "\(operation.route)")
            XCTAssertEqual(missing.code, .unauthenticated, "\(operation.route)")
            let bogus = await flows.statusAndCode(operation, with: flows.client(token: "not-a-token"))
            XCTAssertEqual(bogus.status, 401, "\(operation.route)")
        }
        let user = try await flows.passwordUser()
        let second = try await flows.signInWithPassword(email: user.email)

        let list = try await user.client.execute(SessionListOperation()).sessions
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.filter(\.current).count, 1)
        let currentID = try await user.client.execute(CurrentSessionOperation()).sessionID
        let otherID = try XCTUnwrap(list.first { $0.sessionID != currentID }?.sessionID)

        // Another account cannot see or revoke it.
        let stranger = try await flows.passwordUser()
        let foreign = await flows.outcome(SessionRevocationOperation(sessionID: otherID), with: stranger.client)
        XCTAssertEqual(foreign.status, 404)
        XCTAssertEqual(foreign.code, .notFound)
        await assertEqual(await flows.outcome(CurrentSessionOperation(), with: second).status, 200)

        let revoke = await flows.outcome(SessionRevocationOperation(sessionID: otherID), with: user.client)
        XCTAssertEqual(revoke.status, 204, revoke.description)
        let revoked = await flows.outcome(CurrentSessionOperation(), with: second)
        XCTAssertEqual(revoked.status, 401)
        await assertNil(try await second.accessToken(), "a refused token is forgotten")

        let token = try await user.token()
        let signOut = await flows.outcome(SignOutOperation(), with: user.client)
        XCTAssertEqual(signOut.status, 204)
        await assertNil(try await user.client.accessToken(), "signing out forgets the token")
        // The token itself stops working, not just the client's copy.
        let after = await flows.outcome(CurrentSessionOperation(), with: flows.client(token: token))
        XCTAssertEqual(after.status, 401)
        XCTAssertEqual(after.code, .unauthenticated)
    }

    func testExpiredSessionsAreRefused() async throws {
        let (flows, stack) = try await flows()
        let user = try await flows.passwordUser()
        _ = try await stack.sql(
            "UPDATE authentication_sessions SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE account_id = \(try XCTUnwrap(UUID(uuidString: user.accountID)))"
        )
        await assertEqual(await flows.outcome(CurrentSessionOperation(), with: user.client).status, 401)
    }

    func testEachServiceServesMetricsAndHealth() async throws {
        let (flows, stack) = try await flows()
        _ = try await flows.passwordUser()
        for (service, port) in stack.metricsPorts {
            let endpoint = Flows(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
            let metrics = await endpoint.outcome(MetricsOperation())
            XCTAssertEqual(metrics.status, 200, service)
            XCTAssertTrue(metrics.value?.contentType.hasPrefix("text/plain") ?? false, service)
            XCTAssertTrue(
                metrics.value?.text.contains("db_pool_busy_connections{service=\"\(service)\"}") ?? false,
                metrics.description)
            await assertEqual(await endpoint.outcome(TextRequest("/healthz")).status, 200, service)
        }
        let session = Flows(baseURL: URL(string: "http://127.0.0.1:\(stack.metricsPorts["session-service"]!)")!)
        let text = try await session.client().execute(MetricsOperation()).text
        XCTAssertTrue(
            text.contains(
                "rpc_server_duration_seconds_count{service=\"session-service\",method=\"SignInWithPassword\",outcome=\"ok\"}"
            ),
            text)
    }

    func testWellKnownFilesAndOperations() async throws {
        let (flows, _) = try await flows()
        let aasa = await flows.outcome(AppleAppSiteAssociationOperation())
        XCTAssertEqual(aasa.status, 200)
        XCTAssertTrue(aasa.headers["content-type"]?.hasPrefix("application/json") ?? false)
        XCTAssertEqual(aasa.value?.webcredentials.apps, ["ABCDE12345.com.example.app"])
        let assetLinks = await flows.outcome(AssetLinksOperation())
        XCTAssertEqual(assetLinks.status, 200)
        XCTAssertEqual(assetLinks.value?.first?.relation, ["delegate_permission/common.get_login_creds"])
        XCTAssertEqual(assetLinks.value?.first?.target?.packageName, "com.example.app")
        let webauthn = await flows.outcome(RelatedOriginsOperation())
        XCTAssertEqual(webauthn.value?.origins, [Stack.origin])
        let endpoints = await flows.outcome(PasskeyEndpointsOperation())
        XCTAssertNotNil(endpoints.value?.enroll)
        await assertEqual(await flows.outcome(HealthOperation()).status, 200)
        await assertEqual(await flows.outcome(ReadinessOperation()).status, 200)
        let metrics = await flows.outcome(MetricsOperation())
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.value?.text.contains("# TYPE") ?? false)
        let openapi = await flows.outcome(OpenAPIDocumentOperation())
        XCTAssertEqual(openapi.status, 200)
        XCTAssertTrue(openapi.value?.openapi.hasPrefix("3.1") ?? false)
        let paths = try XCTUnwrap(openapi.value?.paths)
        for path in [
            "/v1/accounts/password", "/v1/sessions/password", "/v1/passkeys/registrations/finish",
            "/v1/passkeys/account-registrations/finish", "/v1/passkeys/authentications/finish", "/v1/session",
        ] {
            XCTAssertNotNil(paths[path], path)
        }
        // The served document lists exactly the routes the library has operations for.
        XCTAssertEqual(openapi.value?.routes, Set(PasskeyAPI.routes.map(\.description)))
        await assertEqual(await flows.outcome(RawRequest(.get, "/v1/nothing-here")).status, 404)
    }
}

final class WebPageTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func testTheDemoPageIsServedWithAStrictPolicy() async throws {
        let flows = Flows(try await Self.shared.get())
        let page = await flows.outcome(TextRequest("/"))
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.value?.contentType.hasPrefix("text/html") ?? false)
        XCTAssertTrue(page.value?.text.contains("autocomplete=\"username webauthn\"") ?? false)
        XCTAssertTrue(page.headers["content-security-policy"]?.contains("default-src 'self'") ?? false)
        let script = await flows.outcome(TextRequest("/app.js"))
        XCTAssertEqual(script.status, 200)
        XCTAssertTrue(script.value?.contentType.hasPrefix("text/javascript") ?? false)
        XCTAssertTrue(script.value?.text.contains("from \"/passkey/v1/passkey.js\"") ?? false)
        let module = await flows.outcome(TextRequest("/passkey/v1/passkey.js"))
        XCTAssertEqual(module.status, 200)
        XCTAssertTrue(module.value?.contentType.hasPrefix("text/javascript") ?? false)
        XCTAssertTrue(module.value?.text.contains("parseCreationOptionsFromJSON") ?? false)
        XCTAssertEqual(module.headers["access-control-allow-origin"], "*")
        let style = await flows.outcome(TextRequest("/app.css"))
        XCTAssertTrue(style.value?.contentType.hasPrefix("text/css") ?? false)
        // The page's files are GET and HEAD only: any other method is 405 with exactly those two.
        let post = await flows.outcome(RawRequest(.post, "/", body: .json([String: String]())))
        XCTAssertEqual(post.status, 405)
        XCTAssertEqual(post.headers["allow"], "GET, HEAD")
    }
}

extension PasswordUser {
    /// The session's token, as the client keeps it.
    func token() async throws -> String { try await client.accessToken()?.value ?? "" }
}
