import Encoding
import Foundation
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class PasskeyFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func flows() async throws -> (Flows, Stack) {
        let stack = try await Self.shared.get()
        return (Flows(client: GatewayClient(baseURL: stack.gatewayURL)), stack)
    }

    func testStartResponsesCarryFlatFieldsAndStandardOptions() async throws {
        let (flows, _) = try await flows()
        let user = try await flows.passwordUser()
        let existing = SoftwareAuthenticator()
        try await flows.addPasskey(token: user.token, authenticator: existing)

        let start = try await flows.beginRegistration(token: user.token)
        XCTAssertEqual(start.status, 200, start.text)
        for field in ["challengeID", "relyingPartyID", "userID", "userName", "displayName", "challenge", "expiresAt"] {
            XCTAssertNotNil(start.json[field], field)
        }
        XCTAssertEqual(start.json["relyingPartyID"] as? String, Stack.relyingPartyID)
        XCTAssertNil(start.json["mediation"])
        let options = try XCTUnwrap(start.json["publicKey"] as? [String: Any])
        XCTAssertEqual((options["rp"] as? [String: Any])?["id"] as? String, Stack.relyingPartyID)
        XCTAssertEqual((options["user"] as? [String: Any])?["id"] as? String, start.json["userID"] as? String)
        XCTAssertEqual(options["challenge"] as? String, start.json["challenge"] as? String)
        let algorithms = (options["pubKeyCredParams"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int } ?? []
        XCTAssertTrue(Set([-7, -8, -257]).isSubset(of: Set(algorithms)), "\(algorithms)")
        XCTAssertNotNil(options["timeout"])
        XCTAssertEqual(options["attestation"] as? String, "none")
        let selection = options["authenticatorSelection"] as? [String: Any]
        XCTAssertEqual(selection?["residentKey"] as? String, "required")
        XCTAssertEqual(selection?["userVerification"] as? String, "preferred")
        let excluded = (options["excludeCredentials"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        XCTAssertEqual(excluded, [Base64URL.encode(existing.credentialID)])
        XCTAssertEqual(Base64URL.decode(start.json["challenge"] as? String ?? "")?.count ?? 0 >= 32, true)

        // The user handle is stable across registrations.
        let again = try await flows.beginRegistration(token: user.token)
        XCTAssertEqual(again.json["userID"] as? String, start.json["userID"] as? String)

        let authentication = try await flows.beginAuthentication()
        let requestOptions = try XCTUnwrap(authentication.json["publicKey"] as? [String: Any])
        XCTAssertEqual(requestOptions["rpId"] as? String, Stack.relyingPartyID)
        XCTAssertEqual((requestOptions["allowCredentials"] as? [Any])?.count, 0)
        XCTAssertEqual(requestOptions["userVerification"] as? String, "preferred")
    }

    func testPasswordUserAddsAPasskeyAndSignsInWithItInEveryBodyForm() async throws {
        let (flows, _) = try await flows()
        for form in BodyForm.allCases {
            let user = try await flows.passwordUser()
            var authenticator = SoftwareAuthenticator(algorithm: .es256)
            let start = try await flows.beginRegistration(token: user.token)
            authenticator.userHandle = Base64URL.decode(start.json["userID"] as? String ?? "") ?? []
            let finish = try await flows.finishRegistration(
                token: user.token, start: start, authenticator: authenticator, form: form)
            XCTAssertEqual(finish.status, 204, "\(form): \(finish.text)")

            let signIn = try await flows.signInWithPasskey(&authenticator, form: form)
            XCTAssertEqual(signIn.status, 200, "\(form): \(signIn.text)")
            XCTAssertEqual(signIn.json["accountID"] as? String, user.accountID)
            let token = try XCTUnwrap(signIn.json["accessToken"] as? String)
            let session = try await flows.client.get("/v1/session", bearer: token)
            XCTAssertEqual(session.json["authenticationMethod"] as? String, "passkey")

            // The password stays.
            let account = try await flows.client.get("/v1/account", bearer: token)
            XCTAssertEqual(account.json["hasPassword"] as? Bool, true)
            XCTAssertEqual(account.json["passkeyCount"] as? Int, 1)
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
            XCTAssertEqual(created.status, 201, "\(algorithm) \(attestation): \(created.text)")
            let signIn = try await flows.signInWithPasskey(&authenticator)
            XCTAssertEqual(signIn.status, 200, "\(algorithm): \(signIn.text)")
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
            XCTAssertEqual(created.status, 201, created.text)
            let accountID = try XCTUnwrap(created.json["accountID"] as? String)
            let signIn = try await flows.signInWithPasskey(&authenticator, form: form)
            XCTAssertEqual(signIn.status, 200, signIn.text)
            XCTAssertEqual(signIn.json["accountID"] as? String, accountID)
            XCTAssertEqual(signIn.json["displayName"] as? String, "Grace")
            let token = try XCTUnwrap(signIn.json["accessToken"] as? String)
            let account = try await flows.client.get("/v1/account", bearer: token)
            XCTAssertEqual(account.json["hasPassword"] as? Bool, false)
            XCTAssertEqual(account.json["emails"] as? [String], [email])
            // The user handle of the creating registration is the account's, in later registrations too.
            let start = try await flows.beginRegistration(token: token)
            XCTAssertEqual(Base64URL.decode(start.json["userID"] as? String ?? ""), authenticator.userHandle)
        }
    }

    func testPasskeyAccountCreationRejections() async throws {
        let (flows, _) = try await flows()
        // No email at start or finish.
        var authenticator = SoftwareAuthenticator()
        let noEmail = try await flows.createPasskeyAccount(authenticator: &authenticator, email: nil)
        XCTAssertEqual(noEmail.status, 400, noEmail.text)
        XCTAssertEqual(noEmail.code, "invalid_request")

        // UP must be 1 for a new account.
        var silent = SoftwareAuthenticator()
        let noPresence = try await flows.createPasskeyAccount(
            authenticator: &silent, email: flows.uniqueEmail(), flags: [.userVerified, .attestedCredentialData])
        XCTAssertEqual(noPresence.status, 400)
        XCTAssertEqual(noPresence.code, "verification_failed")
        XCTAssertEqual(noPresence.reason, "user_present_flag_not_set")

        // Email taken, by a password account.
        let user = try await flows.passwordUser()
        var another = SoftwareAuthenticator()
        let taken = try await flows.createPasskeyAccount(authenticator: &another, email: user.email.uppercased())
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.code, "email_taken")

        // The same credential twice.
        var first = SoftwareAuthenticator()
        let created = try await flows.createPasskeyAccount(authenticator: &first, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201)
        var copy = first
        let duplicate = try await flows.createPasskeyAccount(authenticator: &copy, email: flows.uniqueEmail())
        XCTAssertEqual(duplicate.status, 409)
        XCTAssertEqual(duplicate.code, "credential_already_registered")

        // A registration ID is used once; unknown ones are gone too.
        let start = try await flows.client.post("/v1/passkeys/account-registrations", ["email": flows.uniqueEmail()])
        var fresh = SoftwareAuthenticator()
        fresh.userHandle = Base64URL.decode(start.json["userID"] as? String ?? "") ?? []
        let registration = fresh.makeRegistration(
            challenge: Base64URL.decode(start.json["challenge"] as? String ?? "") ?? [], rpID: Stack.relyingPartyID,
            origin: Stack.origin)
        var body = flows.registrationBody(registration, form: .flat)
        body["registrationID"] = start.json["registrationID"]
        let once = try await flows.client.post("/v1/passkeys/account-registrations/finish", body)
        XCTAssertEqual(once.status, 201, once.text)
        let twice = try await flows.client.post("/v1/passkeys/account-registrations/finish", body)
        XCTAssertEqual(twice.status, 410)
        XCTAssertEqual(twice.code, "challenge_unavailable")
        body["registrationID"] = UUID().uuidString.lowercased()
        let unknown = try await flows.client.post("/v1/passkeys/account-registrations/finish", body)
        XCTAssertEqual(unknown.status, 410)
    }

    func testRegistrationChecksFailWithTheirReasons() async throws {
        let (flows, _) = try await flows()
        let user = try await flows.passwordUser()
        let authenticator = SoftwareAuthenticator()

        let wrongOrigin = try await flows.finishRegistration(
            token: user.token, start: try await flows.beginRegistration(token: user.token), authenticator: authenticator,
            origin: "https://evil.example")
        XCTAssertEqual(wrongOrigin.status, 400)
        XCTAssertEqual(wrongOrigin.code, "verification_failed")
        XCTAssertEqual(wrongOrigin.reason, "origin_mismatch")

        // Modal registration needs UP.
        let modal = try await flows.finishRegistration(
            token: user.token, start: try await flows.beginRegistration(token: user.token), authenticator: authenticator,
            flags: [.userVerified, .attestedCredentialData])
        XCTAssertEqual(modal.reason, "user_present_flag_not_set")

        // A finish consumes its challenge even when it fails.
        let start = try await flows.beginRegistration(token: user.token)
        let failed = try await flows.finishRegistration(
            token: user.token, start: start, authenticator: authenticator, origin: "https://evil.example")
        XCTAssertEqual(failed.status, 400)
        let retry = try await flows.finishRegistration(token: user.token, start: start, authenticator: authenticator)
        XCTAssertEqual(retry.status, 410)
        XCTAssertEqual(retry.code, "challenge_unavailable")

        // A challenge issued to another account is unavailable to this one.
        let stranger = try await flows.passwordUser()
        let foreign = try await flows.finishRegistration(
            token: stranger.token, start: try await flows.beginRegistration(token: user.token),
            authenticator: authenticator)
        XCTAssertEqual(foreign.status, 410)
    }

    func testConditionalRegistrationRules() async throws {
        let (flows, stack) = try await flows()
        // A fresh password session may register without UP (Automatic Passkey Upgrade).
        let user = try await flows.passwordUser()
        let conditional = try await flows.beginRegistration(token: user.token, mode: "conditional")
        XCTAssertEqual(conditional.status, 200, conditional.text)
        XCTAssertEqual(conditional.json["mediation"] as? String, "conditional")
        let silent = try await flows.finishRegistration(
            token: user.token, start: conditional, authenticator: SoftwareAuthenticator(),
            flags: [.attestedCredentialData])
        XCTAssertEqual(silent.status, 204, silent.text)

        // A passkey session may not.
        var authenticator = SoftwareAuthenticator()
        _ = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        let passkeySession = try await flows.signInWithPasskey(&authenticator)
        let refused = try await flows.beginRegistration(
            token: passkeySession.json["accessToken"] as? String ?? "", mode: "conditional")
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(refused.code, "forbidden")

        // Nor a password session older than five minutes.
        let stale = try await flows.passwordUser()
        _ = try await stack.sql(
            "UPDATE authentication_sessions SET created_at = now() - interval '6 minutes' WHERE account_id = \(UUID(uuidString: stale.accountID)!)")
        let tooLate = try await flows.beginRegistration(token: stale.token, mode: "conditional")
        XCTAssertEqual(tooLate.status, 403)
        // Modal still works for it.
        await assertEqual(try await flows.beginRegistration(token: stale.token, mode: "modal").status, 200)
        let badMode = try await flows.beginRegistration(token: stale.token, mode: "sideways")
        XCTAssertEqual(badMode.status, 400)
    }
}
