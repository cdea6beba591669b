import Crypto
import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// MDS3 BLOBs made here, under a root made here: what is accepted, each refusal with its reason, and the rule
/// that refuses a registration of a compromised model.
final class MetadataBLOBTests: XCTestCase {
    static let issued: Int64 = 1_760_000_000  // 2025-10-09
    let now = Date(timeIntervalSince1970: TimeInterval(issued + 86_400))
    let revoked = AAGUID(bytes: Array(repeating: 0x11, count: 16))
    let certified = AAGUID(bytes: Array(repeating: 0x22, count: 16))
    let bypassed = AAGUID(bytes: Array(repeating: 0x33, count: 16))
    let recovered = AAGUID(bytes: Array(repeating: 0x44, count: 16))
    static let rsa = MetadataBLOBMaker(algorithm: .rs256, notBefore: issued)
    static let ec = MetadataBLOBMaker(algorithm: .es256, notBefore: issued)

    func payload(nextUpdate: String = "2025-11-01") -> String {
        MetadataBLOBMaker.payload(
            number: 42, nextUpdate: nextUpdate,
            entries: [
                (revoked, [("FIDO_CERTIFIED", "2020-01-01"), ("REVOKED", "2024-05-01")]),
                (certified, [("FIDO_CERTIFIED_L1", "2021-03-04")]),
                (bypassed, [("USER_VERIFICATION_BYPASS", "2023-01-01")]),
                // Compromised once, then fixed: the latest report decides.
                (recovered, [("UPDATE_AVAILABLE", "2024-02-01"), ("ATTESTATION_KEY_COMPROMISE", "2023-01-01")]),
            ])
    }

    func roots(_ maker: MetadataBLOBMaker) throws -> [Certificate] {
        try MetadataBLOB.certificates(pem: maker.rootPEM)
    }

    func assertRefused(
        _ bytes: [UInt8], roots: [Certificate]? = nil, at time: Date? = nil, _ reason: String, line: UInt = #line
    ) throws {
        let anchors = try roots ?? self.roots(Self.rsa)
        XCTAssertThrowsError(try MetadataBLOB(jws: bytes, roots: anchors, now: time ?? now), line: line) { error in
            let text = (error as? MetadataBLOB.Failure)?.reason ?? "\(error)"
            XCTAssertTrue(text.hasPrefix(reason), "\(text) does not start with \(reason)", line: line)
        }
    }

    func testAGoodBLOBGivesEachModelsLatestStatus() throws {
        for maker in [Self.rsa, Self.ec] {
            let blob = try MetadataBLOB(jws: maker.blob(payload: payload()), roots: try roots(maker), now: now)
            XCTAssertEqual(blob.number, 42)
            XCTAssertEqual(blob.nextUpdate, "2025-11-01")
            XCTAssertEqual(blob.entries.count, 4)
            XCTAssertEqual(blob.entries[revoked]?.latestStatus, "REVOKED")
            XCTAssertEqual(blob.entries[revoked]?.effectiveDate, "2024-05-01")
            XCTAssertEqual(
                blob.refusedAAGUIDs, [revoked: "REVOKED", bypassed: "USER_VERIFICATION_BYPASS"])
        }
        // A trailing newline, as a file written by a tool has, is fine.
        XCTAssertNoThrow(
            try MetadataBLOB(jws: Self.rsa.blob(payload: payload()) + [0x0A], roots: try roots(Self.rsa), now: now))
    }

    func testEveryRefusingStatus() throws {
        for status in MetadataBLOB.refusingStatuses.sorted() + [
            "FIDO_CERTIFIED", "NOT_FIDO_CERTIFIED", "UPDATE_AVAILABLE",
        ] {
            let text = MetadataBLOBMaker.payload(
                nextUpdate: "2025-11-01", entries: [(certified, [(status, "2025-01-01")])])
            let blob = try MetadataBLOB(jws: Self.rsa.blob(payload: text), roots: try roots(Self.rsa), now: now)
            XCTAssertEqual(
                blob.refusedAAGUIDs[certified] != nil, MetadataBLOB.refusingStatuses.contains(status), status)
        }
        XCTAssertEqual(
            MetadataBLOB.refusingStatuses,
            [
                "REVOKED", "ATTESTATION_KEY_COMPROMISE", "USER_KEY_REMOTE_COMPROMISE", "USER_KEY_PHYSICAL_COMPROMISE",
                "USER_VERIFICATION_BYPASS",
            ])
    }

    func testUnsignedBadlySignedExpiredAndMalformedBLOBsAreRefused() throws {
        let good = payload()
        // Unsigned.
        try assertRefused(Self.rsa.blob(payload: good, signed: false), "unsigned")
        try assertRefused(Self.rsa.blob(payload: good, alg: "none", signed: false), "unsigned")
        // Badly signed: another key, a changed payload, another root, an alg that is not accepted.
        try assertRefused(Self.rsa.blob(payload: good, signer: SigningKey(algorithm: .rs256)), "badly signed")
        var changed = Self.rsa.blob(payload: good)
        let dot = changed.firstIndex(of: UInt8(ascii: "."))!
        changed[dot + 5] = changed[dot + 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        try assertRefused(changed, "badly signed")
        try assertRefused(Self.rsa.blob(payload: good), roots: try roots(Self.ec), "badly signed")
        try assertRefused(Self.rsa.blob(payload: good, alg: "RS512"), "badly signed")
        try assertRefused(Self.rsa.blob(payload: good, alg: "HS256"), "badly signed")
        // Expired: the day after nextUpdate (the day itself is still good); a signer outside its validity.
        XCTAssertNoThrow(
            try MetadataBLOB(
                jws: Self.rsa.blob(payload: payload(nextUpdate: "2025-10-10")), roots: try roots(Self.rsa), now: now))
        try assertRefused(Self.rsa.blob(payload: payload(nextUpdate: "2025-10-09")), "expired")
        try assertRefused(
            Self.rsa.blob(payload: good), at: Date(timeIntervalSince1970: TimeInterval(Self.issued - 86_400)),
            "badly signed")
        // Malformed: not a JWS, not JSON, fields missing or of the wrong type, over the limits.
        for (bytes, why) in [
            (Array("not a jws".utf8), "malformed"), (Array("a.b".utf8), "malformed"), ([UInt8](), "the BLOB is empty"),
            (Self.rsa.blob(payload: "[1,2]"), "malformed"), (Self.rsa.blob(payload: "{"), "malformed"),
            (Self.rsa.blob(payload: #"{"nextUpdate":"2025-11-01","entries":[]}"#), "malformed"),
            (Self.rsa.blob(payload: #"{"no":1,"entries":[]}"#), "malformed"),
            (Self.rsa.blob(payload: #"{"no":1,"nextUpdate":"01/11/2025","entries":[]}"#), "malformed"),
            (Self.rsa.blob(payload: #"{"no":1,"nextUpdate":"2025-11-01"}"#), "malformed"),
            (
                Self.rsa.blob(
                    payload:
                        #"{"no":1,"nextUpdate":"2025-11-01","entries":[{"aaguid":"x","statusReports":[{"status":"REVOKED"}]}]}"#
                ), "malformed"
            ),
            (
                Self.rsa.blob(
                    payload:
                        #"{"no":1,"nextUpdate":"2025-11-01","entries":[{"aaguid":"\#(revoked)","statusReports":[]}]}"#),
                "malformed"
            ),
            (
                Self.rsa.blob(
                    payload:
                        #"{"no":1,"nextUpdate":"2025-11-01","entries":[{"aaguid":"\#(revoked)","statusReports":[{"effectiveDate":"2025-01-01"}]}]}"#
                ), "malformed"
            ),
            (Array(repeating: UInt8(ascii: "A"), count: MetadataBLOB.maximumSize + 1), "the BLOB is"),
        ] {
            try assertRefused(bytes, why)
        }
        // U2F entries (key identifiers, no aaguid) are skipped, not refused.
        let u2f =
            #"{"no":1,"nextUpdate":"2025-11-01","entries":[{"attestationCertificateKeyIdentifiers":["ab"],"statusReports":[{"status":"REVOKED"}]}]}"#
        XCTAssertEqual(
            try MetadataBLOB(jws: Self.rsa.blob(payload: u2f), roots: try roots(Self.rsa), now: now).entries.count, 0)
        XCTAssertThrowsError(try MetadataBLOB.certificates(pem: "no certificate here"))
    }

    /// A model's metadataStatement.attestationRootCertificates become the roots its attestation must chain to.
    func testAModelsAttestationRootsComeFromItsEntry() throws {
        let maker = CertificateAuthority(notBefore: Self.issued - 86_400)
        let stranger = CertificateAuthority(notBefore: Self.issued - 86_400)
        let text = MetadataBLOBMaker.payload(
            nextUpdate: "2025-11-01", entries: [(certified, [("FIDO_CERTIFIED", "2025-01-01")])],
            roots: [certified: [maker.rootCertificate]])
        let blob = try MetadataBLOB(jws: Self.rsa.blob(payload: text), roots: try roots(Self.rsa), now: now)
        XCTAssertEqual(blob.attestationRoots[certified]?.map(\.derEncoded), [maker.rootCertificate])
        var trust = AttestationTrust(requireTrustedAttestation: true)
        trust.rootsByAAGUID = blob.attestationRoots
        let challenge: [UInt8] = Array(repeating: 5, count: 32)
        let attestationKey = SigningKey(algorithm: .es256)
        func register(issuedBy authority: CertificateAuthority) throws -> VerifiedRegistration {
            let x5c = authority.issue(
                subject: [("C", "US"), ("O", "Maker"), ("OU", "Authenticator Attestation"), ("CN", "Maker Key")],
                subjectKey: attestationKey, notBefore: Self.issued,
                extensions: [CertificateAuthority.aaguidExtension(certified)])
            let response = SoftwareAuthenticator(aaguid: certified).makeRegistration(
                challenge: challenge, rpID: "example.com", origin: "https://example.com",
                attestation: .packed(key: attestationKey, x5c: [x5c]))
            return try RegistrationVerifier(trust: trust).verify(
                response: response,
                expectation: RegistrationExpectation(
                    challenge: challenge, relyingPartyID: "example.com",
                    origins: OriginPolicy(allowedOrigins: ["https://example.com"])),
                now: now)
        }
        XCTAssertEqual(try register(issuedBy: maker).attestationTrust, .trusted)
        XCTAssertThrowsError(try register(issuedBy: stranger)) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, .attestationUntrusted)
        }
        // A root that is not a certificate makes the whole BLOB malformed.
        let broken = text.replacingOccurrences(
            of: Base64URL.encodeStandard(maker.rootCertificate), with: Base64URL.encodeStandard([1, 2, 3]))
        try assertRefused(Self.rsa.blob(payload: broken), "malformed")
    }

    /// At registration: a model the BLOB reports compromised is refused, with attestation or without it.
    func testARegistrationOfACompromisedModelIsRefused() throws {
        let blob = try MetadataBLOB(jws: Self.rsa.blob(payload: payload()), roots: try roots(Self.rsa), now: now)
        var trust = AttestationTrust()
        trust.refusedAAGUIDs = blob.refusedAAGUIDs
        let challenge: [UInt8] = Array(repeating: 9, count: 32)
        let authority = CertificateAuthority(notBefore: Self.issued - 86_400)
        let attestationKey = SigningKey(algorithm: .es256)
        func register(_ aaguid: AAGUID, attested: Bool) throws -> VerifiedRegistration {
            let authenticator = SoftwareAuthenticator(aaguid: aaguid)
            let x5c = authority.issue(
                subject: [("C", "US"), ("O", "Maker"), ("OU", "Authenticator Attestation"), ("CN", "Maker Key")],
                subjectKey: attestationKey, notBefore: Self.issued,
                extensions: [CertificateAuthority.aaguidExtension(aaguid)])
            let response = authenticator.makeRegistration(
                challenge: challenge, rpID: "example.com", origin: "https://example.com",
                attestation: attested ? .packed(key: attestationKey, x5c: [x5c]) : .none)
            return try RegistrationVerifier(trust: trust).verify(
                response: response,
                expectation: RegistrationExpectation(
                    challenge: challenge, relyingPartyID: "example.com",
                    origins: OriginPolicy(allowedOrigins: ["https://example.com"])),
                now: now)
        }
        for attested in [true, false] {
            for model in [revoked, bypassed] {
                XCTAssertThrowsError(try register(model, attested: attested)) {
                    XCTAssertEqual(($0 as? WebAuthnError)?.code, .attestationUntrusted)
                }
            }
            XCTAssertNoThrow(try register(certified, attested: attested))
            XCTAssertNoThrow(try register(recovered, attested: attested))
        }
    }
}
