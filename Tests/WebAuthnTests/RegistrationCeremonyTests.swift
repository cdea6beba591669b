import Crypto
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// Each test breaks exactly one step of §7.1 and expects its reason code.
final class RegistrationCeremonyTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"
    let challenge = Array(SecureRandom().bytes(count: 32))
    let authenticator = SoftwareAuthenticator(algorithm: .es256)
    let now = Date()

    var expectation: RegistrationExpectation {
        RegistrationExpectation(
            challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]))
    }

    func verify(
        _ response: RegistrationResponse, expectation: RegistrationExpectation? = nil,
        trust: AttestationTrust = AttestationTrust()
    ) throws -> VerifiedRegistration {
        try RegistrationVerifier(trust: trust).verify(
            response: response, expectation: expectation ?? self.expectation, now: now)
    }

    func assertFails(
        _ code: WebAuthnError.Code, _ response: RegistrationResponse, expectation: RegistrationExpectation? = nil,
        trust: AttestationTrust = AttestationTrust(), file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try verify(response, expectation: expectation, trust: trust), file: file, line: line) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    /// A response with clientDataJSON and authenticator data supplied by the test.
    func response(
        clientData: [UInt8]? = nil, authData: [UInt8]? = nil, attestation: SoftwareAuthenticator.Attestation = .none
    ) -> RegistrationResponse {
        let clientData =
            clientData
            ?? SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        let authData =
            authData
            ?? authenticator.authenticatorData(
                rpID: rpID, flags: [.userPresent, .userVerified, .attestedCredentialData], signCount: 0)
        return RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData,
            attestationObject: authenticator.attestationObject(
                authenticatorData: authData, clientDataHash: sha256(clientData), attestation: attestation))
    }

    func testValidRegistrationProducesTheCredentialRecord() throws {
        let response = authenticator.makeRegistration(
            challenge: challenge, rpID: rpID, origin: origin,
            flags: [.userPresent, .userVerified, .attestedCredentialData, .backupEligible, .backedUp],
            transports: ["internal", "hybrid"], clientExtensionResultsJSON: #"{"credProps":{"rk":true}}"#)
        let record = try verify(response)
        XCTAssertEqual(record.credentialID, authenticator.credentialID)
        XCTAssertEqual(record.credentialPublicKey, authenticator.key.coseKey)
        XCTAssertEqual(record.algorithm, -7)
        XCTAssertEqual(record.signCount, 0)
        XCTAssertTrue(record.backupEligible)
        XCTAssertTrue(record.backedUp)
        XCTAssertTrue(record.userVerified)
        XCTAssertEqual(record.transports, ["internal", "hybrid"])
        XCTAssertEqual(record.aaguid, authenticator.aaguid)
        XCTAssertEqual(record.attestationFormat, .none)
        XCTAssertEqual(record.attestationType, .none)
        XCTAssertEqual(record.attestationTrust, .notApplicable)
        XCTAssertEqual(record.clientExtensionOutputs.residentKey, true)
    }

    // Steps 5-6: clientDataJSON must parse.
    func testMalformedClientData() {
        assertFails(.malformedClientData, response(clientData: Array("{\"type\":".utf8)))
        assertFails(.malformedClientData, response(clientData: [0xFF, 0xFE, 0x7B, 0x7D]))
        assertFails(.malformedClientData, response(clientData: Array(#"{"type":"webauthn.create","origin":"x"}"#.utf8)))
    }

    func testClientDataWithByteOrderMarkIsAccepted() throws {
        let json = SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        XCTAssertNoThrow(try verify(response(clientData: [0xEF, 0xBB, 0xBF] + json)))
    }

    // Step 7: type.
    func testTypeMismatch() {
        let json = SoftwareAuthenticator.clientDataJSON(type: "webauthn.get", challenge: challenge, origin: origin)
        assertFails(.typeMismatch, response(clientData: json))
    }

    // Step 8: challenge.
    func testChallengeMismatch() {
        var other = challenge
        other[0] ^= 1
        let json = SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: other, origin: origin)
        assertFails(.challengeMismatch, response(clientData: json))
    }

    // Step 9: origin.
    func testOriginMismatch() {
        let json = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: "https://evil.example.com")
        assertFails(.originMismatch, response(clientData: json))
    }

    func testAppOriginsMatchExactly() throws {
        let appOrigin = "android:apk-key-hash:PoEW2-U4MCFg2n4bHJF4t1DPUw-4y4TfF1Wf-OJqtQk"
        let json = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: appOrigin)
        var expectation = self.expectation
        expectation.origins = OriginPolicy(allowedOrigins: [origin, appOrigin, "ios:bundle-id:com.example.app"])
        XCTAssertNoThrow(try verify(response(clientData: json), expectation: expectation))
        let prefixOnly = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: "android:apk-key-hash:PoEW2")
        assertFails(.originMismatch, response(clientData: prefixOnly), expectation: expectation)
    }

    // Steps 10-11: crossOrigin and topOrigin.
    func testCrossOriginRejectedByDefaultAndAllowedByPolicy() throws {
        let json = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin, crossOrigin: true,
            topOrigin: "https://shop.example.net")
        assertFails(.crossOriginNotAllowed, response(clientData: json))
        var expectation = self.expectation
        expectation.origins = OriginPolicy(
            allowedOrigins: [origin], allowCrossOrigin: true, allowedTopOrigins: ["https://shop.example.net"])
        XCTAssertNoThrow(try verify(response(clientData: json), expectation: expectation))
        expectation.origins.allowedTopOrigins = ["https://other.example.net"]
        assertFails(.crossOriginNotAllowed, response(clientData: json), expectation: expectation)
    }

    func testTopOriginWithoutCrossOriginFlagIsStillCrossOrigin() {
        let json = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin, topOrigin: "https://evil.example.net")
        assertFails(.crossOriginNotAllowed, response(clientData: json))
    }

    // Step 14: attestation object must decode.
    func testMalformedAttestationObject() {
        var bad = response()
        bad.attestationObject = [0xA3, 0x63, 0x66]
        assertFails(.malformedCBOR, bad)
        bad.attestationObject = CBOREncoder.encode(.map([CBORMapEntry(.text("fmt"), .text("none"))]))
        assertFails(.malformedCBOR, bad)
        bad.attestationObject = response().attestationObject + [0x00]
        assertFails(.malformedCBOR, bad)
    }

    // Step 15: RP ID hash.
    func testRPIDHashMismatch() {
        let authData = authenticator.authenticatorData(
            rpID: "evil.com", flags: [.userPresent, .attestedCredentialData], signCount: 0)
        assertFails(.rpIDHashMismatch, response(authData: authData))
    }

    // Step 16: UP, unless the challenge was issued for conditional mediation.
    func testUserPresenceRequiredUnlessConditional() throws {
        let authData = authenticator.authenticatorData(rpID: rpID, flags: [.attestedCredentialData], signCount: 0)
        assertFails(.userPresentFlagNotSet, response(authData: authData))
        var conditional = expectation
        conditional.mediation = .conditional
        let record = try verify(response(authData: authData), expectation: conditional)
        XCTAssertFalse(record.userPresent)
    }

    // Step 17: UV when required.
    func testUserVerificationRequired() throws {
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0)
        var required = expectation
        required.userVerification = .required
        assertFails(.userVerificationRequired, response(authData: authData), expectation: required)
        XCTAssertNoThrow(try verify(response(authData: authData)))
    }

    // Steps 18-19: BS without BE.
    func testBackedUpWithoutBackupEligibleIsInvalid() {
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .backedUp, .attestedCredentialData], signCount: 0)
        assertFails(.backupStateInvalid, response(authData: authData))
    }

    func testMissingAttestedCredentialData() {
        let authData = authenticator.authenticatorData(rpID: rpID, flags: [.userPresent], signCount: 0)
        assertFails(.malformedAuthenticatorData, response(authData: authData))
    }

    func testRawIDMustMatchAuthenticatorData() {
        var bad = response()
        bad.credentialID = [1, 2, 3]
        assertFails(.credentialIDMismatch, bad)
    }

    // Step 20: algorithm offered and supported.
    func testAlgorithmNotAllowed() {
        var expectation = self.expectation
        expectation.allowedAlgorithms = [-8, -257]
        assertFails(.algorithmNotAllowed, response(), expectation: expectation)
    }

    func testUnsupportedAlgorithm() {
        // An ML-DSA-44 (kty 7, alg -48) key: offered, but not implemented on OpenSSL 3.0.
        let key = CBOREncoder.encode(
            .map([
                CBORMapEntry(CBORValue(1), CBORValue(7)), CBORMapEntry(CBORValue(3), CBORValue(-48)),
                CBORMapEntry(CBORValue(-1), .bytes(Array(repeating: 1, count: 1312))),
            ]))
        var authData = sha256(Array(rpID.utf8)) + [0x45, 0, 0, 0, 0] + authenticator.aaguid.bytes
        authData += [0, UInt8(authenticator.credentialID.count)] + authenticator.credentialID + key
        var expectation = self.expectation
        expectation.allowedAlgorithms = [-48]
        assertFails(.unsupportedAlgorithm, response(authData: authData), expectation: expectation)
    }

    // Step 22: credential ID length.
    func testCredentialIDTooLong() {
        var long = authenticator
        long.credentialID = Array(repeating: 7, count: 1024)
        let authData = long.authenticatorData(rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0)
        assertFails(.credentialIDTooLong, response(authData: authData))
    }

    // Steps 23-26: attestation statement and trust.
    func testPackedSelfAttestation() throws {
        let record = try verify(response(attestation: .packedSelf))
        XCTAssertEqual(record.attestationFormat, .packed)
        XCTAssertEqual(record.attestationType, .self)
        var noSelf = AttestationTrust()
        noSelf.acceptSelfAttestation = false
        assertFails(.attestationUntrusted, response(attestation: .packedSelf), trust: noSelf)
    }

    func testPackedSelfAttestationWithBadSignature() throws {
        let good = response(attestation: .packedSelf)
        let object = try CBORDecoder.decode(good.attestationObject)
        var statement = try XCTUnwrap(object[text: "attStmt"]?.mapEntries)
        var signature = try XCTUnwrap(statement[1].value.byteString)
        signature[signature.count - 3] ^= 0x01
        statement[1] = CBORMapEntry(.text("sig"), .bytes(signature))
        var bad = good
        bad.attestationObject = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("packed")), CBORMapEntry(.text("attStmt"), .map(statement)),
                CBORMapEntry(.text("authData"), try XCTUnwrap(object[text: "authData"])),
            ]))
        assertFails(.attestationInvalid, bad)
    }

    func testPackedSelfAttestationAlgorithmMustMatchKey() throws {
        let good = response(attestation: .packedSelf)
        let object = try CBORDecoder.decode(good.attestationObject)
        var statement = try XCTUnwrap(object[text: "attStmt"]?.mapEntries)
        statement[0] = CBORMapEntry(.text("alg"), CBORValue(-257))
        var bad = good
        bad.attestationObject = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("packed")), CBORMapEntry(.text("attStmt"), .map(statement)),
                CBORMapEntry(.text("authData"), try XCTUnwrap(object[text: "authData"])),
            ]))
        assertFails(.attestationInvalid, bad)
    }

    func testNoneAttestationPolicy() {
        var noNone = AttestationTrust()
        noNone.acceptNoneAttestation = false
        assertFails(.attestationUntrusted, response(), trust: noNone)
        var models = AttestationTrust()
        models.allowedAAGUIDs = [AAGUID.zero]
        assertFails(.attestationUntrusted, response(), trust: models)
        models.allowedAAGUIDs = [authenticator.aaguid]
        XCTAssertNoThrow(try verify(response(), trust: models))
    }

    func testNoneAttestationWithStatementIsInvalid() throws {
        let clientData = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0)
        let object = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("none")),
                CBORMapEntry(.text("attStmt"), .map([CBORMapEntry(.text("sig"), .bytes([1]))])),
                CBORMapEntry(.text("authData"), .bytes(authData)),
            ]))
        let bad = RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData, attestationObject: object)
        assertFails(.attestationInvalid, bad)
        let unknown = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("not-a-format")), CBORMapEntry(.text("attStmt"), .map([])),
                CBORMapEntry(.text("authData"), .bytes(authData)),
            ]))
        assertFails(
            .unsupportedAttestationFormat,
            RegistrationResponse(
                credentialID: authenticator.credentialID, clientDataJSON: clientData, attestationObject: unknown))
    }

    func testAuthenticatorExtensionsAreReturned() throws {
        let extensions = CBORValue.map([CBORMapEntry(.text("credProtect"), CBORValue(2))])
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0, extensions: extensions)
        XCTAssertEqual(try verify(response(authData: authData)).authenticatorExtensions, extensions)
        assertFails(.malformedAuthenticatorData, response(authData: authData + [0]))
    }

    func testMalformedClientExtensionResults() {
        var bad = response()
        bad.clientExtensionResultsJSON = Array(#"{"credProps":{"rk":"yes"}}"#.utf8)
        assertFails(.malformedClientData, bad)
    }

    private func compoundResponse(_ statements: [CBORValue]) -> RegistrationResponse {
        let clientData = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0)
        let object = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("compound")), CBORMapEntry(.text("attStmt"), .array(statements)),
                CBORMapEntry(.text("authData"), .bytes(authData)),
            ]))
        return RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData, attestationObject: object)
    }

    private func packedSelfStatement() throws -> CBORValue {
        let clientData = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .attestedCredentialData], signCount: 0)
        let statement = CBORValue.map([
            CBORMapEntry(.text("alg"), CBORValue(-7)),
            CBORMapEntry(.text("sig"), .bytes(authenticator.key.sign(authData + sha256(clientData)))),
        ])
        return .map([CBORMapEntry(.text("fmt"), .text("packed")), CBORMapEntry(.text("attStmt"), statement)])
    }

    func testCompoundAttestationVerifiesEveryStatement() throws {
        let record = try verify(compoundResponse([try packedSelfStatement(), try packedSelfStatement()]))
        XCTAssertEqual(record.attestationFormat, .compound)
        XCTAssertEqual(record.attestationType, .compound)
        XCTAssertEqual(record.attestation.statements.map(\.type), [.self, .self])
        let broken = CBORValue.map([
            CBORMapEntry(.text("fmt"), .text("packed")),
            CBORMapEntry(
                .text("attStmt"),
                .map([
                    CBORMapEntry(.text("alg"), CBORValue(-7)), CBORMapEntry(.text("sig"), .bytes([0x30, 0x00])),
                ])),
        ])
        assertFails(.attestationInvalid, compoundResponse([try packedSelfStatement(), broken]))
        assertFails(.attestationInvalid, compoundResponse([try packedSelfStatement()]))
        let nested = CBORValue.map([
            CBORMapEntry(.text("fmt"), .text("compound")),
            CBORMapEntry(.text("attStmt"), .array([try packedSelfStatement(), try packedSelfStatement()])),
        ])
        assertFails(.attestationInvalid, compoundResponse([try packedSelfStatement(), nested]))
    }
}
