import Foundation
import PasskeyClient
import Postgres
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class PasskeyFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func flows() async throws -> (Flows, Stack) {
        let stack = try await Self.shared.get()
        return (Flows(stack), stack)
    }

    func testStartResponsesCarryFlatFieldsAndStandardOptions() async throws {
        let (flows, _) = try await flows()
        let user = try await flows.passwordUser()
        let existing = SoftwareAuthenticator()
        try await flows.addPasskey(user.client, authenticator: existing)

        // Decoding checks that every flat field (challengeID, relyingPartyID, userID, userName, displayName,
        // challenge, expiresAt) and every required member of the options is there.
        let started = await flows.beginRegistration(user.client)
        XCTAssertEqual(started.status, 200, started.description)
        let start = try started.get()
        XCTAssertEqual(start.relyingPartyID, Stack.relyingPartyID)
        XCTAssertNil(start.mediation)
        let options = start.publicKey
        XCTAssertEqual(options.rp.id, Stack.relyingPartyID)
        XCTAssertEqual(options.user.id, start.userID)
        XCTAssertEqual(options.challenge, start.challenge)
        let algorithms = options.pubKeyCredParams.map(\.alg)
        XCTAssertTrue(Set([-7, -8, -257]).isSubset(of: Set(algorithms)), "\(algorithms)")
        XCTAssertGreaterThan(options.timeout, 0)
        XCTAssertEqual(options.attestation, "none")
        XCTAssertEqual(options.authenticatorSelection.residentKey, "required")
        XCTAssertEqual(options.authenticatorSelection.userVerification, "required")
        XCTAssertEqual(options.excludeCredentials.map(\.id), [Data(existing.credentialID)])
        XCTAssertGreaterThanOrEqual(start.challenge.count, 32)

        // The user handle is stable across registrations.
        let again = try await flows.beginRegistration(user.client).get()
        XCTAssertEqual(again.userID, start.userID)

        let authentication = try await flows.beginAuthentication()
        XCTAssertEqual(authentication.publicKey.rpId, Stack.relyingPartyID)
        XCTAssertEqual(authentication.publicKey.allowCredentials.count, 0)
        XCTAssertEqual(authentication.publicKey.userVerification, "required")
    }

    func testPasswordUserAddsAPasskeyAndSignsInWithItInEveryBodyForm() async throws {
        let (flows, _) = try await flows()
        for form in BodyForm.allCases {
            let user = try await flows.passwordUser()
            var authenticator = SoftwareAuthenticator(algorithm: .es256)
            let start = try await flows.beginRegistration(user.client).get()
            authenticator.userHandle = [UInt8](start.userID)
            let finish = await flows.finishRegistration(
                user.client, start: start, authenticator: authenticator, form: form)
            XCTAssertEqual(finish.status, 204, "\(form): \(finish)")

            let signIn = try await flows.signInWithPasskey(&authenticator, form: form)
            XCTAssertEqual(signIn.status, 200, "\(form): \(signIn)")
            XCTAssertEqual(signIn.value?.accountID, user.accountID)
            let session = try await signIn.client.execute(CurrentSessionOperation())
            XCTAssertEqual(session.authenticationMethod, .passkey)

            // The password stays.
            let account = try await signIn.client.execute(AccountOperation())
            XCTAssertEqual(account.hasPassword, true)
            XCTAssertEqual(account.passkeyCount, 1)
        }
    }

    func testEveryKeyTypeAndAttestationRegistersAndSignsIn() async throws {
        let (flows, _) = try await flows()
        for (algorithm, attestation) in [
            (COSEAlgorithm.es256, SoftwareAuthenticator.Attestation.packedSelf), (.edDSA, .none), (.edDSA, .packedSelf),
            (.rs256, .none),
        ] {
            var authenticator = SoftwareAuthenticator(algorithm: algorithm)
            let created = try await flows.createPasskeyAccount(
                authenticator: &authenticator, email: flows.uniqueEmail("keys"), attestation: attestation)
            XCTAssertEqual(created.status, 201, "\(algorithm) \(attestation): \(created)")
            let signIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signIn.status, 200, "\(algorithm): \(signIn)")
        }
    }

    func testPasskeyAccountCreation() async throws {
        let (flows, _) = try await flows()
        for form in BodyForm.allCases {
            var authenticator = SoftwareAuthenticator()
            let email = flows.uniqueEmail("grace")
            // Email given only at finish.
            let created = try await flows.createPasskeyAccount(
                authenticator: &authenticator, email: nil, displayName: "Grace", emailAtFinish: email, form: form)
            XCTAssertEqual(created.status, 201, created.description)
            let accountID = try XCTUnwrap(created.value?.accountID)
            let signIn = try await flows.signInWithPasskey(&authenticator, form: form)
            XCTAssertEqual(signIn.status, 200, signIn.description)
            XCTAssertEqual(signIn.value?.accountID, accountID)
            XCTAssertEqual(signIn.value?.displayName, "Grace")
            let account = try await signIn.client.execute(AccountOperation())
            XCTAssertEqual(account.hasPassword, false)
            XCTAssertEqual(account.emails, [email])
            // The user handle of the creating registration is the account's, in later registrations too.
            let start = try await flows.beginRegistration(signIn.client).get()
            XCTAssertEqual([UInt8](start.userID), authenticator.userHandle)
        }
    }

    func testPasskeyAccountCreationRejections() async throws {
        let (flows, _) = try await flows()
        // No email at start or finish.
        var authenticator = SoftwareAuthenticator()
        let noEmail = try await flows.createPasskeyAccount(authenticator: &authenticator, email: nil)
        XCTAssertEqual(noEmail.status, 400, noEmail.description)
        XCTAssertEqual(noEmail.code, .invalidRequest)

        // UP must be 1 for a new account.
        var silent = SoftwareAuthenticator()
        let noPresence = try await flows.createPasskeyAccount(
            authenticator: &silent, email: flows.uniqueEmail(), flags: [.userVerified, .attestedCredentialData])
        XCTAssertEqual(noPresence.status, 400)
        XCTAssertEqual(noPresence.code, .verificationFailed)
        XCTAssertEqual(noPresence.reason, .userPresentFlagNotSet)

        // Email taken, by a password account.
        let user = try await flows.passwordUser()
        var another = SoftwareAuthenticator()
        let taken = try await flows.createPasskeyAccount(authenticator: &another, email: user.email.uppercased())
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.code, .emailTaken)

        // The same credential twice.
        var first = SoftwareAuthenticator()
        let created = try await flows.createPasskeyAccount(authenticator: &first, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201)
        var copy = first
        let duplicate = try await flows.createPasskeyAccount(authenticator: &copy, email: flows.uniqueEmail())
        XCTAssertEqual(duplicate.status, 409)
        XCTAssertEqual(duplicate.code, .credentialAlreadyRegistered)

        // A registration ID is used once; unknown ones are gone too.
        let start = try await flows.outcome(
            PasskeyAccountCreationStartOperation(emailAddress: flows.uniqueEmail(), displayName: "Once")
        ).get()
        var fresh = SoftwareAuthenticator()
        fresh.userHandle = [UInt8](start.userID)
        let registration = fresh.makeRegistration(
            challenge: [UInt8](start.challenge), rpID: Stack.relyingPartyID, origin: Stack.origin)
        var finish = PasskeyAccountCreationFinishOperation(
            registrationID: start.registrationID, credential: flows.credential(registration))
        let once = await flows.outcome(finish)
        XCTAssertEqual(once.status, 201, once.description)
        let twice = await flows.outcome(finish)
        XCTAssertEqual(twice.status, 410)
        XCTAssertEqual(twice.code, .challengeUnavailable)
        finish.registrationID = UUID().uuidString.lowercased()
        let unknown = await flows.outcome(finish)
        XCTAssertEqual(unknown.status, 410)
    }

    func testRegistrationChecksFailWithTheirReasons() async throws {
        let (flows, _) = try await flows()
        let user = try await flows.passwordUser()
        let authenticator = SoftwareAuthenticator()

        let wrongOrigin = await flows.finishRegistration(
            user.client, start: try await flows.beginRegistration(user.client).get(), authenticator: authenticator,
            origin: "https://evil.example")
        XCTAssertEqual(wrongOrigin.status, 400)
        XCTAssertEqual(wrongOrigin.code, .verificationFailed)
        XCTAssertEqual(wrongOrigin.reason, .originMismatch)

        // Modal registration needs UP.
        let modal = await flows.finishRegistration(
            user.client, start: try await flows.beginRegistration(user.client).get(), authenticator: authenticator,
            flags: [.userVerified, .attestedCredentialData])
        XCTAssertEqual(modal.reason, .userPresentFlagNotSet)

        // A finish consumes its challenge even when it fails.
        let start = try await flows.beginRegistration(user.client).get()
        let failed = await flows.finishRegistration(
            user.client, start: start, authenticator: authenticator, origin: "https://evil.example")
        XCTAssertEqual(failed.status, 400)
        let retry = await flows.finishRegistration(user.client, start: start, authenticator: authenticator)
        XCTAssertEqual(retry.status, 410)
        XCTAssertEqual(retry.code, .challengeUnavailable)

        // A challenge issued to another account is unavailable to this one.
        let stranger = try await flows.passwordUser()
        let foreign = await flows.finishRegistration(
            stranger.client, start: try await flows.beginRegistration(user.client).get(), authenticator: authenticator)
        XCTAssertEqual(foreign.status, 410)
    }

    func testConditionalRegistrationRules() async throws {
        let (flows, stack) = try await flows()
        // A fresh password session may register without UP (Automatic Passkey Upgrade).
        let user = try await flows.passwordUser()
        let conditional = await flows.beginRegistration(user.client, mode: .conditional)
        XCTAssertEqual(conditional.status, 200, conditional.description)
        XCTAssertEqual(conditional.value?.mediation, "conditional")
        XCTAssertEqual(conditional.value?.options.mode, .conditional)
        let silent = await flows.finishRegistration(
            user.client, start: try conditional.get(), authenticator: SoftwareAuthenticator(),
            flags: [.attestedCredentialData])
        XCTAssertEqual(silent.status, 204, silent.description)

        // A passkey session may not.
        var authenticator = SoftwareAuthenticator()
        _ = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        let passkeySession = try await flows.signInWithPasskey(&authenticator)
        let refused = await flows.beginRegistration(passkeySession.client, mode: .conditional)
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.code, .forbidden)

        // Nor a password session older than five minutes.
        let stale = try await flows.passwordUser()
        _ = try await stack.sql(
            "UPDATE authentication_sessions SET created_at = now() - interval '6 minutes' WHERE account_id = \(try XCTUnwrap(UUID(uuidString: stale.accountID)))"
        )
        let tooLate = await flows.beginRegistration(stale.client, mode: .conditional)
        XCTAssertEqual(tooLate.status, 403)
        // Modal still works for it.
        await assertEqual(await flows.beginRegistration(stale.client, mode: .modal).status, 200)
        let badMode = await flows.beginRegistration(stale.client, mode: RegistrationMode(rawValue: "sideways"))
        XCTAssertEqual(badMode.status, 400)
    }
}
