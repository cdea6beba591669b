import Encoding
import Foundation
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class SignInTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    /// A passkey account and its authenticator.
    func passkeyUser(_ flows: Flows, zeroCounter: Bool = false) async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator(keepsZeroCounter: zeroCounter)
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.text)
        return authenticator
    }

    func flows() async throws -> Flows {
        Flows(client: GatewayClient(baseURL: try await Self.shared.get().gatewayURL))
    }

    func testUserHandleMustBeTheCredentialsAccount() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)
        let other = try await passkeyUser(flows)
        authenticator.userHandle = other.userHandle
        let mismatch = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(mismatch.status, 401)
        XCTAssertEqual(mismatch.code, "invalid_credentials")
        XCTAssertEqual(mismatch.reason, "user_handle_mismatch")

        // Discoverable sign-in needs the user handle.
        var original = authenticator
        original.userHandle = []
        let start = try await flows.beginAuthentication()
        let assertion = original.makeAssertion(
            challenge: Base64URL.decode(start.json["challenge"] as? String ?? "") ?? [], rpID: Stack.relyingPartyID,
            origin: Stack.origin, includeUserHandle: false)
        var body = flows.authenticationBody(assertion, form: .flat)
        body["challengeID"] = start.json["challengeID"]
        let missing = try await flows.client.post("/v1/passkeys/authentications/finish", body)
        XCTAssertTrue([400, 401].contains(missing.status), missing.text)
    }

    func testCounterRegressionIsRefusedAndZeroCountersAreFine() async throws {
        let flows = try await flows()
        var counting = try await passkeyUser(flows)
        await assertEqual(try await flows.signInWithPasskey(&counting).status, 200)
        await assertEqual(try await flows.signInWithPasskey(&counting).status, 200)
        counting.signCount = 0  // the next assertion carries 1, below the stored 2
        let regressed = try await flows.signInWithPasskey(&counting)
        XCTAssertEqual(regressed.status, 401)
        XCTAssertEqual(regressed.reason, "sign_count_regressed")

        var synced = try await passkeyUser(flows, zeroCounter: true)
        for _ in 0..<3 { await assertEqual(try await flows.signInWithPasskey(&synced).status, 200) }
    }

    func testFailedChecksAreInvalidCredentialsWithReasons() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)

        // UP is always required for sign-in.
        let noPresence = try await flows.signInWithPasskey(&authenticator, flags: [.userVerified])
        XCTAssertEqual(noPresence.status, 401)
        XCTAssertEqual(noPresence.reason, "user_present_flag_not_set")

        // A signature by another key.
        let start = try await flows.beginAuthentication()
        let challenge = Base64URL.decode(start.json["challenge"] as? String ?? "") ?? []
        var impostor = SoftwareAuthenticator(credentialID: authenticator.credentialID, userHandle: authenticator.userHandle)
        impostor.signCount = 100
        let forged = impostor.makeAssertion(challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin)
        let bad = try await flows.finishAuthentication(challengeID: start.json["challengeID"], assertion: forged)
        XCTAssertEqual(bad.status, 401)
        XCTAssertEqual(bad.reason, "signature_invalid")

        // The challenge was used up by the failed attempt.
        let genuine = authenticator.makeAssertion(challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin)
        let reused = try await flows.finishAuthentication(challengeID: start.json["challengeID"], assertion: genuine)
        XCTAssertEqual(reused.status, 410)
        XCTAssertEqual(reused.code, "challenge_unavailable")

        // Unknown credentials.
        var stranger = SoftwareAuthenticator()
        let unknown = try await flows.signInWithPasskey(&stranger)
        XCTAssertEqual(unknown.status, 401)
        XCTAssertEqual(unknown.code, "invalid_credentials")

        // Wrong RP and origin.
        let start2 = try await flows.beginAuthentication()
        let wrongOrigin = authenticator.makeAssertion(
            challenge: Base64URL.decode(start2.json["challenge"] as? String ?? "") ?? [], rpID: Stack.relyingPartyID,
            origin: "https://evil.example")
        let originResult = try await flows.finishAuthentication(challengeID: start2.json["challengeID"], assertion: wrongOrigin)
        XCTAssertEqual(originResult.reason, "origin_mismatch")
    }

    func testThirtyConcurrentFinishesOfOneChallengeGiveExactlyOneSuccess() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows, zeroCounter: true)
        let start = try await flows.beginAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: Base64URL.decode(start.json["challenge"] as? String ?? "") ?? [], rpID: Stack.relyingPartyID,
            origin: Stack.origin)
        let challengeID = start.json["challengeID"] as? String
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    try await flows.finishAuthentication(challengeID: challengeID, assertion: assertion).status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses.filter { $0 == 200 }.count, 1, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 410 }.count, 29, "\(statuses)")
    }

    func testManagingPasskeys() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)
        let signIn = try await flows.signInWithPasskey(&authenticator)
        let token = try XCTUnwrap(signIn.json["accessToken"] as? String)
        let second = SoftwareAuthenticator()
        try await flows.addPasskey(token: token, authenticator: second)

        let list = try await flows.client.get("/v1/passkeys", bearer: token)
        let passkeys = try XCTUnwrap(list.json["passkeys"] as? [[String: Any]])
        XCTAssertEqual(passkeys.count, 2)
        for field in ["credentialID", "name", "aaguid", "createdAt", "backupEligible", "backedUp", "transports"] {
            XCTAssertNotNil(passkeys[0][field], field)
        }
        let firstID = Base64URL.encode(authenticator.credentialID)
        let secondID = Base64URL.encode(second.credentialID)
        XCTAssertNotNil(passkeys.first { $0["credentialID"] as? String == firstID }?["lastUsedAt"] as? String)

        let renamed = try await flows.client.send("PATCH", "/v1/passkeys/\(firstID)", json: ["name": "Work phone"], bearer: token)
        XCTAssertEqual(renamed.status, 200, renamed.text)
        XCTAssertEqual(renamed.json["name"] as? String, "Work phone")
        let emptyName = try await flows.client.send("PATCH", "/v1/passkeys/\(firstID)", json: ["name": "  "], bearer: token)
        XCTAssertEqual(emptyName.status, 400)

        // Another account sees none of them.
        let stranger = try await flows.passwordUser()
        let foreignRename = try await flows.client.send(
            "PATCH", "/v1/passkeys/\(firstID)", json: ["name": "mine"], bearer: stranger.token)
        XCTAssertEqual(foreignRename.status, 404)
        let foreignDelete = try await flows.client.send("DELETE", "/v1/passkeys/\(firstID)", bearer: stranger.token)
        XCTAssertEqual(foreignDelete.status, 404)

        let removed = try await flows.client.send("DELETE", "/v1/passkeys/\(secondID)", bearer: token)
        XCTAssertEqual(removed.status, 204, removed.text)
        var removedAuthenticator = second
        removedAuthenticator.userHandle = authenticator.userHandle
        let signInWithRemoved = try await flows.signInWithPasskey(&removedAuthenticator)
        XCTAssertEqual(signInWithRemoved.status, 401)

        // The last way to sign in stays.
        let last = try await flows.client.send("DELETE", "/v1/passkeys/\(firstID)", bearer: token)
        XCTAssertEqual(last.status, 409)
        XCTAssertEqual(last.code, "last_sign_in_method")
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
    }

    func testAPasswordAccountMayRemoveItsOnlyPasskey() async throws {
        let flows = try await flows()
        let user = try await flows.passwordUser()
        let authenticator = SoftwareAuthenticator()
        try await flows.addPasskey(token: user.token, authenticator: authenticator)
        let removed = try await flows.client.send(
            "DELETE", "/v1/passkeys/\(Base64URL.encode(authenticator.credentialID))", bearer: user.token)
        XCTAssertEqual(removed.status, 204, removed.text)
    }
}
