import Crypto
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// android-key (§8.4) built here the way the packed tests build theirs: the credential key's certificate, issued
/// by a test root, carries a key description whose authorization lists the test chooses.
///
/// The decision: an attestation whose authorization lists carry no `origin` or no `purpose` is refused, as the
/// §8.4 verification procedure reads (origin must be KM_ORIGIN_GENERATED, purpose must include KM_PURPOSE_SIGN).
/// The spec's §16 example has both lists empty; `testSection16ShapeWithEmptyListsIsRefused` is that shape, and it
/// is refused. Real devices fill both lists (the shared `android-key-pixel-8a-2025` vector has them in teeEnforced).
final class AndroidKeyAuthorizationTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"
    let challenge: [UInt8] = Array(repeating: 7, count: 32)
    let authenticator = SoftwareAuthenticator(algorithm: .es256)
    let issued: Int64 = 1_700_000_000
    lazy var authority = CertificateAuthority(notBefore: issued - 86_400)
    var now: Date { Date(timeIntervalSince1970: TimeInterval(issued + 3_600)) }

    // MARK: DER for the key description

    static func tlv(_ tag: [UInt8], _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] =
            count < 0x80
            ? [UInt8(count)]
            : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        return tag + length + content
    }

    static func integer(_ value: UInt8) -> [UInt8] { tlv([0x02], [value]) }
    static func enumerated(_ value: UInt8) -> [UInt8] { tlv([0x0A], [value]) }
    static func sequence(_ items: [[UInt8]]) -> [UInt8] { tlv([0x30], items.flatMap { $0 }) }
    /// `[1] EXPLICIT SET OF INTEGER`: the purpose field.
    static func purpose(_ values: [UInt8]) -> [UInt8] { tlv([0xA1], tlv([0x31], values.flatMap { integer($0) })) }
    /// `[702] EXPLICIT INTEGER`: the origin field (tag number 702 in base 128 is 0x85 0x3E).
    static func origin(_ value: UInt8) -> [UInt8] { tlv([0xBF, 0x85, 0x3E], integer(value)) }
    /// `[600] EXPLICIT NULL`: allApplications (600 is 0x84 0x58).
    static let allApplications = tlv([0xBF, 0x84, 0x58], [0x05, 0x00])

    func keyDescription(software: [[UInt8]], tee: [[UInt8]], challenge clientDataHash: [UInt8]) -> [UInt8] {
        Self.sequence([
            Self.integer(3), Self.enumerated(1), Self.integer(4), Self.enumerated(1),
            Self.tlv([0x04], clientDataHash), Self.tlv([0x04], []),
            Self.sequence(software), Self.sequence(tee),
        ])
    }

    func response(software: [[UInt8]], tee: [[UInt8]]) -> RegistrationResponse {
        let clientData = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.create", challenge: challenge, origin: origin)
        let clientDataHash = sha256(clientData)
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .userVerified, .attestedCredentialData], signCount: 0)
        let leaf = authority.issue(
            subject: [("CN", "Android Keystore Key")], subjectKey: authenticator.key, notBefore: issued,
            extensions: [
                (
                    "1.3.6.1.4.1.11129.2.1.17", false,
                    keyDescription(software: software, tee: tee, challenge: clientDataHash)
                )
            ])
        let statement = CBORValue.map([
            CBORMapEntry(.text("alg"), CBORValue(-7)),
            CBORMapEntry(.text("sig"), .bytes(authenticator.key.sign(authData + clientDataHash))),
            CBORMapEntry(.text("x5c"), .array([.bytes(leaf), .bytes(authority.rootCertificate)])),
        ])
        let object = CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("android-key")), CBORMapEntry(.text("attStmt"), statement),
                CBORMapEntry(.text("authData"), .bytes(authData)),
            ]))
        return RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData, attestationObject: object)
    }

    func verify(_ response: RegistrationResponse, teeOnly: Bool = false) throws -> VerifiedRegistration {
        let root = try Certificate(derEncoded: authority.rootCertificate)
        return try RegistrationVerifier(
            policy: RegistrationPolicy(androidKeyRequiresTrustedEnvironment: teeOnly),
            trust: AttestationTrust(rootsByFormat: [.androidKey: [root]])
        ).verify(
            response: response,
            expectation: RegistrationExpectation(
                challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin])),
            now: now)
    }

    func assertRefused(
        _ response: RegistrationResponse, teeOnly: Bool = false, _ reason: String, line: UInt = #line
    ) {
        XCTAssertThrowsError(try verify(response, teeOnly: teeOnly), line: line) { error in
            let failure = error as? WebAuthnError
            XCTAssertEqual(failure?.code, .attestationInvalid, "\(error)", line: line)
            XCTAssertTrue(failure?.reason.contains(reason) == true, "\(error)", line: line)
        }
    }

    func testWhatDevicesSendIsAccepted() throws {
        let record = try verify(response(software: [], tee: [Self.purpose([2]), Self.origin(0)]), teeOnly: true)
        XCTAssertEqual(record.attestationFormat, .androidKey)
        XCTAssertEqual(record.attestationType, .basic)
        XCTAssertEqual(record.attestationTrust, .trusted)
        // Purpose may hold more than SIGN.
        XCTAssertNoThrow(try verify(response(software: [], tee: [Self.purpose([3, 2]), Self.origin(0)])))
    }

    func testSection16ShapeWithEmptyListsIsRefused() {
        assertRefused(response(software: [], tee: []), "carry no key origin")
    }

    func testAMissingOriginOrPurposeIsRefused() {
        assertRefused(response(software: [], tee: [Self.purpose([2])]), "carry no key origin")
        assertRefused(response(software: [], tee: [Self.origin(0)]), "carry no key purpose")
        assertRefused(
            response(software: [Self.origin(0)], tee: [Self.purpose([2])]), teeOnly: true, "carry no key origin")
    }

    func testWrongValuesAreRefused() {
        assertRefused(response(software: [], tee: [Self.purpose([2]), Self.origin(2)]), "KM_ORIGIN_GENERATED")
        assertRefused(response(software: [], tee: [Self.purpose([3]), Self.origin(0)]), "KM_PURPOSE_SIGN")
        assertRefused(
            response(software: [Self.allApplications], tee: [Self.purpose([2]), Self.origin(0)]), "all applications")
    }

    func testSoftwareEnforcedListsCountUnlessTheTrustedEnvironmentIsRequired() throws {
        let software = response(software: [Self.purpose([2]), Self.origin(0)], tee: [])
        XCTAssertNoThrow(try verify(software))
        assertRefused(software, teeOnly: true, "carry no key origin")
    }
}
