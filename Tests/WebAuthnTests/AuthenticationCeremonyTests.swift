import Crypto
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// Each test breaks exactly one step of §7.2 and expects its reason code.
final class AuthenticationCeremonyTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"
    let challenge = Array(SecureRandom().bytes(count: 32))
    var authenticator = SoftwareAuthenticator(algorithm: .es256, signCount: 10)

    var expectation: AuthenticationExpectation {
        AuthenticationExpectation(
            challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]))
    }

    func stored(signCount: UInt32 = 10, backupEligible: Bool = false) throws -> StoredCredential {
        StoredCredential(
            id: authenticator.credentialID, publicKey: try CredentialPublicKey(coseKey: authenticator.key.coseKey),
            userHandle: authenticator.userHandle, signCount: signCount, backupEligible: backupEligible)
    }

    func verify(
        _ response: AuthenticationResponse, expectation: AuthenticationExpectation? = nil,
        credential: StoredCredential? = nil, policy: AuthenticationPolicy = AuthenticationPolicy()
    ) throws -> VerifiedAuthentication {
        try AuthenticationVerifier(policy: policy).verify(
            response: response, expectation: expectation ?? self.expectation, credential: credential ?? stored())
    }

    func assertFails(
        _ code: WebAuthnError.Code, _ response: AuthenticationResponse, expectation: AuthenticationExpectation? = nil,
        credential: StoredCredential? = nil, policy: AuthenticationPolicy = AuthenticationPolicy(),
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(
            try verify(response, expectation: expectation, credential: credential, policy: policy), file: file,
            line: line
        ) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    func assertion(
        type: String = "webauthn.get", challenge: [UInt8]? = nil, origin: String? = nil, rpID: String? = nil,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified], signCount: UInt32 = 11,
        crossOrigin: Bool? = nil, includeUserHandle: Bool = true
    ) -> AuthenticationResponse {
        let clientData = SoftwareAuthenticator.clientDataJSON(
            type: type, challenge: challenge ?? self.challenge, origin: origin ?? self.origin, crossOrigin: crossOrigin)
        let authData = authenticator.authenticatorData(rpID: rpID ?? self.rpID, flags: flags, signCount: signCount)
        return authenticator.assertion(
            clientDataJSON: clientData, authenticatorData: authData, includeUserHandle: includeUserHandle)
    }

    func testValidAssertion() throws {
        let response = authenticator.makeAssertion(challenge: challenge, rpID: rpID, origin: origin)
        let result = try verify(response)
        XCTAssertEqual(result.credentialID, authenticator.credentialID)
        XCTAssertEqual(result.newSignCount, 11)
        XCTAssertTrue(result.userVerified)
        XCTAssertFalse(result.backedUp)
        XCTAssertFalse(result.possiblyCloned)
    }

    // Step 5: allowCredentials.
    func testCredentialNotInAllowList() {
        var expectation = self.expectation
        expectation.allowedCredentialIDs = [[1, 2, 3]]
        assertFails(.credentialNotAllowed, assertion(), expectation: expectation)
    }

    func testResponseForAnotherCredential() throws {
        var other = try stored()
        other.id = [9, 9, 9]
        assertFails(.credentialIDMismatch, assertion(), credential: other)
    }

    // Step 6: user handle.
    func testDiscoverableSignInRequiresUserHandle() throws {
        assertFails(.userHandleMismatch, assertion(includeUserHandle: false))
        var expectation = self.expectation
        expectation.allowedCredentialIDs = [authenticator.credentialID]
        XCTAssertNoThrow(try verify(assertion(includeUserHandle: false), expectation: expectation))
    }

    func testUserHandleOfAnotherAccountIsRejected() throws {
        var credential = try stored()
        credential.userHandle = Array(repeating: 0x42, count: 16)
        assertFails(.userHandleMismatch, assertion(), credential: credential)
        var expectation = self.expectation
        expectation.allowedCredentialIDs = [authenticator.credentialID]
        assertFails(.userHandleMismatch, assertion(), expectation: expectation, credential: credential)
    }

    // Steps 8-14: client data.
    func testClientDataChecks() {
        assertFails(.typeMismatch, assertion(type: "webauthn.create"))
        assertFails(.challengeMismatch, assertion(challenge: Array(repeating: 0, count: 32)))
        assertFails(.originMismatch, assertion(origin: "https://example.com:8443"))
        assertFails(.crossOriginNotAllowed, assertion(crossOrigin: true))
        XCTAssertNoThrow(try verify(assertion(crossOrigin: false)))
        var bad = assertion()
        bad.clientDataJSON = Array("[]".utf8)
        assertFails(.malformedClientData, bad)
    }

    // Step 15: RP ID.
    func testRPIDHashMismatch() {
        assertFails(.rpIDHashMismatch, assertion(rpID: "example.org"))
        var changed = expectation
        changed.relyingPartyID = "example.org"
        assertFails(.rpIDHashMismatch, assertion(), expectation: changed)
        XCTAssertNoThrow(try verify(assertion(rpID: "example.org"), expectation: changed))
    }

    // Step 16: UP always.
    func testUserPresenceAlwaysRequired() {
        assertFails(.userPresentFlagNotSet, assertion(flags: [.userVerified]))
    }

    // Step 17: UV per policy.
    func testUserVerificationRequired() throws {
        var expectation = self.expectation
        expectation.userVerification = .required
        assertFails(.userVerificationRequired, assertion(flags: [.userPresent]), expectation: expectation)
        XCTAssertFalse(try verify(assertion(flags: [.userPresent])).userVerified)
    }

    // Step 18: BE compared with the stored value, as the policy says; BS may change.
    static let update = AuthenticationPolicy(backupEligibilityChange: .update)
    static let reject = AuthenticationPolicy(backupEligibilityChange: .reject)

    func testTheDefaultPolicyUpdatesAChangedBackupEligibility() {
        XCTAssertEqual(AuthenticationPolicy().backupEligibilityChange, .update)
        XCTAssertEqual(AuthenticationPolicy().signCount, .reject)
    }

    func testUnderUpdateABackupEligibilityThatAppearsOrGoesIsReportedForStoring() throws {
        // BE appearing after registration (KeePassXC 2.7.12, an iCloud Keychain passkey made before sync finished).
        let appeared = try verify(
            assertion(flags: [.userPresent, .backupEligible, .backedUp]), credential: try stored(backupEligible: false),
            policy: Self.update)
        XCTAssertTrue(appeared.backupEligibilityChanged)
        XCTAssertTrue(appeared.backupEligible)
        XCTAssertTrue(appeared.backedUp)
        XCTAssertEqual(appeared.newSignCount, 11, "the rest of the result is as for any assertion")
        // BE going away (the passkey moved to a provider that does not sync).
        let gone = try verify(
            assertion(flags: [.userPresent]), credential: try stored(backupEligible: true), policy: Self.update)
        XCTAssertTrue(gone.backupEligibilityChanged)
        XCTAssertFalse(gone.backupEligible)
        XCTAssertFalse(gone.backedUp)
        // Eligible and not yet backed up, from a stored ineligible passkey.
        let eligibleOnly = try verify(
            assertion(flags: [.userPresent, .backupEligible]), credential: try stored(backupEligible: false),
            policy: Self.update)
        XCTAssertTrue(eligibleOnly.backupEligibilityChanged)
        XCTAssertTrue(eligibleOnly.backupEligible)
        XCTAssertFalse(eligibleOnly.backedUp)
    }

    func testAnUnchangedBackupEligibilityIsNotAChangeWhateverBackupStateDoes() throws {
        for policy in [Self.update, Self.reject] {
            let backedUp = try verify(
                assertion(flags: [.userPresent, .backupEligible, .backedUp]),
                credential: try stored(backupEligible: true),
                policy: policy)
            XCTAssertFalse(backedUp.backupEligibilityChanged)
            XCTAssertTrue(backedUp.backupEligible)
            XCTAssertTrue(backedUp.backedUp, "BS may change under either policy")
            let notBackedUp = try verify(
                assertion(flags: [.userPresent, .backupEligible]), credential: try stored(backupEligible: true),
                policy: policy)
            XCTAssertFalse(notBackedUp.backupEligibilityChanged)
            XCTAssertFalse(notBackedUp.backedUp)
            let singleDevice = try verify(
                assertion(flags: [.userPresent]), credential: try stored(backupEligible: false), policy: policy)
            XCTAssertFalse(singleDevice.backupEligibilityChanged)
            XCTAssertFalse(singleDevice.backupEligible)
        }
    }

    func testUnderRejectAChangedBackupEligibilityIsRefusedEitherWay() throws {
        assertFails(
            .backupStateInvalid, assertion(flags: [.userPresent, .backupEligible]),
            credential: try stored(backupEligible: false), policy: Self.reject)
        assertFails(
            .backupStateInvalid, assertion(flags: [.userPresent, .backupEligible, .backedUp]),
            credential: try stored(backupEligible: false), policy: Self.reject)
        assertFails(
            .backupStateInvalid, assertion(flags: [.userPresent]), credential: try stored(backupEligible: true),
            policy: Self.reject)
    }

    func testBackupStateWithoutEligibilityIsRefusedUnderEveryPolicy() throws {
        for policy in [Self.update, Self.reject] {
            for storedEligible in [false, true] {
                assertFails(
                    .backupStateInvalid, assertion(flags: [.userPresent, .backedUp]),
                    credential: try stored(backupEligible: storedEligible), policy: policy)
                assertFails(
                    .backupStateInvalid, assertion(flags: [.userPresent, .userVerified, .backedUp]),
                    credential: try stored(backupEligible: storedEligible), policy: policy)
            }
        }
    }

    func testUnderUpdateAChangedBackupEligibilityIsAcceptedOnlyWhenEverythingElseVerifies() throws {
        let changed: AuthenticatorData.Flags = [.userPresent, .backupEligible, .backedUp]
        let ineligible = try stored(backupEligible: false)
        var forged = assertion(flags: changed)
        forged.signature[forged.signature.count - 1] ^= 1
        assertFails(.signatureInvalid, forged, credential: ineligible, policy: Self.update)
        // The flag byte is signed: turning BE on in a genuine assertion breaks its signature.
        var flipped = assertion(flags: [.userPresent])
        flipped.authenticatorData[32] |= AuthenticatorData.Flags.backupEligible.rawValue
        assertFails(.signatureInvalid, flipped, credential: ineligible, policy: Self.update)
        assertFails(
            .rpIDHashMismatch, assertion(rpID: "other.example", flags: changed), credential: ineligible,
            policy: Self.update)
        assertFails(
            .originMismatch, assertion(origin: "https://evil.example", flags: changed), credential: ineligible,
            policy: Self.update)
        assertFails(
            .challengeMismatch, assertion(challenge: Array(repeating: 7, count: 32), flags: changed),
            credential: ineligible, policy: Self.update)
        assertFails(
            .userPresentFlagNotSet, assertion(flags: [.userVerified, .backupEligible, .backedUp]),
            credential: ineligible, policy: Self.update)
        assertFails(
            .signCountRegressed, assertion(flags: changed, signCount: 10), credential: ineligible, policy: Self.update)
        var required = expectation
        required.userVerification = .required
        assertFails(
            .userVerificationRequired, assertion(flags: changed), expectation: required, credential: ineligible,
            policy: Self.update)
    }

    // Steps 20-21: signature.
    func testSignatureInvalid() {
        var bad = assertion()
        bad.signature[bad.signature.count - 1] ^= 1
        assertFails(.signatureInvalid, bad)
        var swapped = assertion()
        swapped.authenticatorData[36] ^= 0x01
        assertFails(.signatureInvalid, swapped)
        var truncated = assertion()
        truncated.signature = []
        assertFails(.signatureInvalid, truncated)
    }

    // Step 22: counter.
    func testSignCountRegressedIsRejectedByDefault() throws {
        assertFails(.signCountRegressed, assertion(signCount: 10))
        assertFails(.signCountRegressed, assertion(signCount: 3))
        assertFails(.signCountRegressed, assertion(signCount: 0))
    }

    func testSignCountRegressionCanBeAcceptedAndFlagged() throws {
        let result = try verify(assertion(signCount: 5), policy: AuthenticationPolicy(signCount: .acceptAndFlag))
        XCTAssertTrue(result.possiblyCloned)
        XCTAssertEqual(result.newSignCount, 10)
    }

    func testZeroCountersAreAccepted() throws {
        let result = try verify(assertion(signCount: 0), credential: try stored(signCount: 0))
        XCTAssertFalse(result.possiblyCloned)
        XCTAssertEqual(result.newSignCount, 0)
    }

    func testAssertionWithAttestedCredentialDataIsMalformed() {
        assertFails(.malformedAuthenticatorData, assertion(flags: [.userPresent, .attestedCredentialData]))
    }

    func testMalformedAuthenticatorData() {
        var bad = assertion()
        bad.authenticatorData = Array(bad.authenticatorData.prefix(36))
        assertFails(.malformedAuthenticatorData, bad)
    }
}
