import Foundation
import PasskeyClient
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// The provider matrix against the real executables: every persona of `ProviderPersona.all` signs up with a
/// passkey, signs in twice, is added to a password account, and is listed under its provider's name with the flags
/// and transports it sent. Responses go as `PublicKeyCredential.toJSON()` does, with the persona's
/// `authenticatorAttachment` and `credProps`.
final class ProviderMatrixFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    /// The registration as the client hands it over, with the persona's attachment and `credProps`.
    static func credential(_ registration: RegistrationResponse, _ persona: ProviderPersona)
        -> PasskeyRegistrationCredential
    {
        PasskeyRegistrationCredential(
            credentialID: Data(registration.credentialID), clientDataJSON: Data(registration.clientDataJSON),
            attestationObject: Data(registration.attestationObject), transports: registration.transports,
            authenticatorAttachment: persona.authenticatorAttachment, isDiscoverable: persona.residentKey)
    }

    /// The passkey as listed: the provider's name (or the default when the shipped list lacks it), its AAGUID, the
    /// flags of `flags` and the transports it registered with.
    func check(_ passkey: Passkey, _ persona: ProviderPersona, flags: AuthenticatorData.Flags) {
        let what = persona.provider
        XCTAssertEqual(passkey.aaguid, persona.aaguid, what)
        XCTAssertEqual(passkey.providerName, persona.listedName, what)
        XCTAssertEqual(passkey.name, persona.listedName ?? "Passkey", what)
        XCTAssertEqual(passkey.backupEligible, flags.contains(.backupEligible), what)
        XCTAssertEqual(passkey.backedUp, flags.contains(.backedUp), what)
        XCTAssertEqual(Set(passkey.transports), Set(persona.transports), what)
        XCTAssertFalse(passkey.cloneWarning, what)
    }

    func testEveryProviderSignsUpSignsInAndIsAddedToAPasswordAccount() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        for persona in ProviderPersona.all {
            // Sign-up with a passkey.
            var authenticator = persona.authenticator()
            let start = try await flows.outcome(
                PasskeyAccountCreationStartOperation(emailAddress: flows.uniqueEmail(), displayName: "Grace")
            ).get()
            authenticator.userHandle = [UInt8](start.userID)
            let registration = persona.registration(
                authenticator, challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: Stack.origin)
            let created = await flows.outcome(
                PasskeyAccountCreationFinishOperation(
                    registrationID: start.registrationID, emailAddress: nil,
                    credential: Self.credential(registration, persona), encoding: .webAuthnJSON))
            XCTAssertEqual(created.status, 201, "\(persona.provider): \(created)")

            // Two sign-ins: a counter that stays at 0 and one that grows are both accepted, and a flag that the
            // provider changes after registration (KeePassXC's BE) is taken.
            var signedIn: Outcome<Session>?
            for _ in 1...2 {
                let begin = try await flows.beginAuthentication()
                let assertion = persona.assertion(
                    &authenticator, challenge: [UInt8](begin.challenge), rpID: begin.relyingPartyID,
                    origin: Stack.origin)
                let session = await flows.finishAuthentication(
                    challengeID: begin.challengeID, assertion: assertion, form: .credential)
                XCTAssertEqual(session.status, 200, "\(persona.provider): \(session)")
                signedIn = session
            }
            let client = try XCTUnwrap(signedIn).client
            let own = try await flows.outcome(PasskeyListOperation(), with: client).get()
            XCTAssertEqual(own.passkeys.count, 1, persona.provider)
            check(try XCTUnwrap(own.passkeys.first), persona, flags: persona.signInFlags)

            // Added to a password account after a password sign-in.
            let user = try await flows.passwordUser()
            let added = persona.authenticator()
            let registrationStart = try await flows.beginRegistration(user.client).get()
            let addition = persona.registration(
                added, challenge: [UInt8](registrationStart.challenge), rpID: registrationStart.relyingPartyID,
                origin: Stack.origin)
            let finished = await flows.outcome(
                PasskeyRegistrationFinishOperation(
                    challengeID: registrationStart.challengeID, credential: Self.credential(addition, persona),
                    encoding: .webAuthnJSON),
                with: user.client)
            XCTAssertEqual(finished.status, 204, "\(persona.provider): \(finished)")
            let theirs = try await flows.outcome(PasskeyListOperation(), with: user.client).get()
            XCTAssertEqual(theirs.passkeys.count, 1, persona.provider)
            check(try XCTUnwrap(theirs.passkeys.first), persona, flags: persona.registrationFlags)
        }
    }
}
