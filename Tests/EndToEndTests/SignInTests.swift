import Foundation
import PasskeyClient
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
        XCTAssertEqual(created.status, 201, created.description)
        return authenticator
    }

    func flows() async throws -> Flows { Flows(try await Self.shared.get()) }

    func testUserHandleMustBeTheCredentialsAccount() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)
        let other = try await passkeyUser(flows)
        authenticator.userHandle = other.userHandle
        let mismatch = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(mismatch.status, 401)
        XCTAssertEqual(mismatch.code, .invalidCredentials)
        XCTAssertEqual(mismatch.reason, .userHandleMismatch)

        // Discoverable sign-in needs the user handle.
        var original = authenticator
        original.userHandle = []
        let start = try await flows.beginAuthentication()
        let assertion = original.makeAssertion(
            challenge: [UInt8](start.challenge), rpID: Stack.relyingPartyID, origin: Stack.origin,
            includeUserHandle: false)
        let missing = await flows.finishAuthentication(challengeID: start.challengeID, assertion: assertion)
        XCTAssertTrue([400, 401].contains(missing.status ?? 0), missing.description)
    }

    func testCounterRegressionIsRefusedAndZeroCountersAreFine() async throws {
        let flows = try await flows()
        var counting = try await passkeyUser(flows)
        await assertEqual(try await flows.signInWithPasskey(&counting).status, 200)
        await assertEqual(try await flows.signInWithPasskey(&counting).status, 200)
        counting.signCount = 0  // the next assertion carries 1, below the stored 2
        let regressed = try await flows.signInWithPasskey(&counting)
        XCTAssertEqual(regressed.status, 401)
        XCTAssertEqual(regressed.reason, .signCountRegressed)

        var synced = try await passkeyUser(flows, zeroCounter: true)
        for _ in 0..<3 { await assertEqual(try await flows.signInWithPasskey(&synced).status, 200) }
    }

    func testFailedChecksAreInvalidCredentialsWithReasons() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)

        // UP is always required for sign-in.
        let noPresence = try await flows.signInWithPasskey(&authenticator, flags: [.userVerified])
        XCTAssertEqual(noPresence.status, 401)
        XCTAssertEqual(noPresence.reason, .userPresentFlagNotSet)

        // A signature by another key.
        let start = try await flows.beginAuthentication()
        let challenge = [UInt8](start.challenge)
        var impostor = SoftwareAuthenticator(
            credentialID: authenticator.credentialID, userHandle: authenticator.userHandle)
        impostor.signCount = 100
        let forged = impostor.makeAssertion(challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin)
        let bad = await flows.finishAuthentication(challengeID: start.challengeID, assertion: forged)
        XCTAssertEqual(bad.status, 401)
        XCTAssertEqual(bad.reason, .signatureInvalid)

        // The challenge was used up by the failed attempt.
        let genuine = authenticator.makeAssertion(
            challenge: challenge, rpID: Stack.relyingPartyID, origin: Stack.origin)
        let reused = await flows.finishAuthentication(challengeID: start.challengeID, assertion: genuine)
        XCTAssertEqual(reused.status, 410)
        XCTAssertEqual(reused.code, .challengeUnavailable)

        // Unknown credentials.
        var stranger = SoftwareAuthenticator()
        let unknown = try await flows.signInWithPasskey(&stranger)
        XCTAssertEqual(unknown.status, 401)
        XCTAssertEqual(unknown.code, .invalidCredentials)

        // Wrong RP and origin.
        let start2 = try await flows.beginAuthentication()
        let wrongOrigin = authenticator.makeAssertion(
            challenge: [UInt8](start2.challenge), rpID: Stack.relyingPartyID, origin: "https://evil.example")
        let originResult = await flows.finishAuthentication(challengeID: start2.challengeID, assertion: wrongOrigin)
        XCTAssertEqual(originResult.reason, .originMismatch)
    }

    func testThirtyConcurrentFinishesOfOneChallengeGiveExactlyOneSuccess() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows, zeroCounter: true)
        let start = try await flows.beginAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: [UInt8](start.challenge), rpID: Stack.relyingPartyID, origin: Stack.origin)
        let challengeID = start.challengeID
        let statuses = await withTaskGroup(of: Int?.self) { group in
            for _ in 0..<30 {
                group.addTask {
                    await flows.finishAuthentication(challengeID: challengeID, assertion: assertion).status
                }
            }
            return await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        XCTAssertEqual(statuses.filter { $0 == 200 }.count, 1, "\(statuses)")
        XCTAssertEqual(statuses.filter { $0 == 410 }.count, 29, "\(statuses)")
    }

    func testManagingPasskeys() async throws {
        let flows = try await flows()
        var authenticator = try await passkeyUser(flows)
        let signIn = try await flows.signInWithPasskey(&authenticator)
        let client = signIn.client
        let second = SoftwareAuthenticator()
        try await flows.addPasskey(client, authenticator: second)

        // Decoding checks every passkey's credentialID, name, aaguid, createdAt, backup flags and transports.
        let passkeys = try await client.execute(PasskeyListOperation()).passkeys
        XCTAssertEqual(passkeys.count, 2)
        let firstID = Data(authenticator.credentialID)
        let secondID = Data(second.credentialID)
        XCTAssertNotNil(passkeys.first { $0.credentialID == firstID }?.lastUsedAt)

        let renamed = await flows.outcome(
            PasskeyRenameOperation(credentialID: firstID, name: "Work phone"), with: client)
        XCTAssertEqual(renamed.status, 200, renamed.description)
        XCTAssertEqual(renamed.value?.name, "Work phone")
        let emptyName = await flows.outcome(PasskeyRenameOperation(credentialID: firstID, name: "  "), with: client)
        XCTAssertEqual(emptyName.status, 400)

        // Another account sees none of them.
        let stranger = try await flows.passwordUser()
        let foreignRename = await flows.outcome(
            PasskeyRenameOperation(credentialID: firstID, name: "mine"), with: stranger.client)
        XCTAssertEqual(foreignRename.status, 404)
        let foreignDelete = await flows.outcome(PasskeyRemovalOperation(credentialID: firstID), with: stranger.client)
        XCTAssertEqual(foreignDelete.status, 404)

        let removed = await flows.outcome(PasskeyRemovalOperation(credentialID: secondID), with: client)
        XCTAssertEqual(removed.status, 204, removed.description)
        var removedAuthenticator = second
        removedAuthenticator.userHandle = authenticator.userHandle
        let signInWithRemoved = try await flows.signInWithPasskey(&removedAuthenticator)
        XCTAssertEqual(signInWithRemoved.status, 401)

        // The last way to sign in stays.
        let last = await flows.outcome(PasskeyRemovalOperation(credentialID: firstID), with: client)
        XCTAssertEqual(last.status, 409)
        XCTAssertEqual(last.code, .lastSignInMethod)
        await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
    }

    func testAPasswordAccountMayRemoveItsOnlyPasskey() async throws {
        let flows = try await flows()
        let user = try await flows.passwordUser()
        let authenticator = SoftwareAuthenticator()
        try await flows.addPasskey(user.client, authenticator: authenticator)
        let removed = await flows.outcome(
            PasskeyRemovalOperation(credentialID: Data(authenticator.credentialID)), with: user.client)
        XCTAssertEqual(removed.status, 204, removed.description)
    }
}
