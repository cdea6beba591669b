import Crypto
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// Full packed attestation with certificates issued here: §8.2.1 requirements and trust at a given time.
final class PackedAttestationTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"
    let challenge: [UInt8] = Array(repeating: 3, count: 32)
    let authenticator = SoftwareAuthenticator(algorithm: .es256)
    let issued: Int64 = 1_700_000_000
    lazy var authority = CertificateAuthority(notBefore: issued - 86_400)
    let attestationKey = SigningKey(algorithm: .es256)
    let goodSubject = [("C", "US"), ("O", "Maker"), ("OU", "Authenticator Attestation"), ("CN", "Maker Key 1")]

    var now: Date { Date(timeIntervalSince1970: TimeInterval(issued + 3_600)) }

    func response(x5c: [[UInt8]], key: SigningKey? = nil) -> RegistrationResponse {
        authenticator.makeRegistration(
            challenge: challenge, rpID: rpID, origin: origin,
            attestation: .packed(key: key ?? attestationKey, x5c: x5c))
    }

    func leaf(
        subject: [(String, String)]? = nil, isCA: Bool = false,
        extensions: [(String, Bool, [UInt8])]? = nil
    ) -> [UInt8] {
        authority.issue(
            subject: subject ?? goodSubject, subjectKey: attestationKey, notBefore: issued, isCA: isCA,
            extensions: extensions ?? [CertificateAuthority.aaguidExtension(authenticator.aaguid)])
    }

    func verify(_ response: RegistrationResponse, trust: AttestationTrust, at time: Date? = nil) throws
        -> VerifiedRegistration
    {
        let expectation = RegistrationExpectation(
            challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]))
        return try RegistrationVerifier(trust: trust).verify(
            response: response, expectation: expectation, now: time ?? now)
    }

    func trust(_ roots: [[UInt8]]) throws -> AttestationTrust {
        AttestationTrust(rootsByFormat: [.packed: try roots.map { try Certificate(derEncoded: $0) }])
    }

    func assertFails(
        _ code: WebAuthnError.Code, _ response: RegistrationResponse, trust: AttestationTrust, at time: Date? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try verify(response, trust: trust, at: time), file: file, line: line) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    func testChainToConfiguredRootIsTrusted() throws {
        let record = try verify(response(x5c: [leaf()]), trust: try trust([authority.rootCertificate]))
        XCTAssertEqual(record.attestationType, .basic)
        XCTAssertEqual(record.attestationTrust, .trusted)
        XCTAssertEqual(record.attestation.certificates.count, 1)
    }

    func testWithoutRootsTheChainIsUnverified() throws {
        XCTAssertEqual(try verify(response(x5c: [leaf()]), trust: AttestationTrust()).attestationTrust, .unverified)
    }

    func testOtherRootIsUntrusted() throws {
        let other = CertificateAuthority(commonName: "Other Root", notBefore: issued - 86_400)
        assertFails(.attestationUntrusted, response(x5c: [leaf()]), trust: try trust([other.rootCertificate]))
    }

    func testRootsPerAAGUIDTakePrecedence() throws {
        let other = CertificateAuthority(commonName: "Other Root", notBefore: issued - 86_400)
        var trust = try trust([authority.rootCertificate])
        trust.rootsByAAGUID[authenticator.aaguid] = [try Certificate(derEncoded: other.rootCertificate)]
        assertFails(.attestationUntrusted, response(x5c: [leaf()]), trust: trust)
        trust.rootsByAAGUID[authenticator.aaguid] = [try Certificate(derEncoded: authority.rootCertificate)]
        XCTAssertEqual(try verify(response(x5c: [leaf()]), trust: trust).attestationTrust, .trusted)
    }

    func testChainIsCheckedAtTheVerificationTime() throws {
        let trust = try trust([authority.rootCertificate])
        let afterExpiry = Date(timeIntervalSince1970: TimeInterval(issued + 400 * 86_400))
        assertFails(.attestationUntrusted, response(x5c: [leaf()]), trust: trust, at: afterExpiry)
        let beforeIssue = Date(timeIntervalSince1970: TimeInterval(issued - 3_600))
        assertFails(.attestationUntrusted, response(x5c: [leaf()]), trust: trust, at: beforeIssue)
    }

    func testCertificateRequirements() throws {
        let trust = AttestationTrust()
        let wrongUnit = [("C", "US"), ("O", "Maker"), ("OU", "Engineering"), ("CN", "Maker Key 1")]
        assertFails(.attestationInvalid, response(x5c: [leaf(subject: wrongUnit)]), trust: trust)
        let noCountry = [("O", "Maker"), ("OU", "Authenticator Attestation"), ("CN", "Maker Key 1")]
        assertFails(.attestationInvalid, response(x5c: [leaf(subject: noCountry)]), trust: trust)
        let noName = [("C", "US"), ("O", "Maker"), ("OU", "Authenticator Attestation")]
        assertFails(.attestationInvalid, response(x5c: [leaf(subject: noName)]), trust: trust)
        assertFails(.attestationInvalid, response(x5c: [leaf(isCA: true)]), trust: trust)
        let otherAAGUID = CertificateAuthority.aaguidExtension(AAGUID.zero)
        assertFails(.attestationInvalid, response(x5c: [leaf(extensions: [otherAAGUID])]), trust: trust)
        let critical = CertificateAuthority.aaguidExtension(authenticator.aaguid, critical: true)
        assertFails(.attestationInvalid, response(x5c: [leaf(extensions: [critical])]), trust: trust)
        XCTAssertNoThrow(try verify(response(x5c: [leaf(extensions: [])]), trust: trust))
    }

    func testSignatureMustComeFromTheCertifiedKey() throws {
        assertFails(
            .attestationInvalid, response(x5c: [leaf()], key: SigningKey(algorithm: .es256)), trust: AttestationTrust())
        assertFails(.attestationInvalid, response(x5c: [[0x30, 0x00]]), trust: AttestationTrust())
    }
}
