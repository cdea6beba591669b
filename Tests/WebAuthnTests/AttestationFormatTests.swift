import Crypto
import Foundation
import WebAuthn
import XCTest

/// Real attestation statements from the shared vectors, each changed in one place.
final class AttestationFormatTests: XCTestCase {
    struct Case {
        let response: RegistrationResponse
        let expectation: RegistrationExpectation
        let trust: AttestationTrust
        let now: Date
        let object: CBORValue
    }

    func load(_ name: String) throws -> Case {
        let vectors = try Vectors.load("registrations.json")
        let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == name })
        let outer = try XCTUnwrap(vector["response"] as? [String: Any])
        let inner = try XCTUnwrap(outer["response"] as? [String: Any])
        let attestation = try Vectors.bytes(inner["attestationObject"])
        let response = RegistrationResponse(
            credentialID: try Vectors.bytes(outer["rawId"]), clientDataJSON: try Vectors.bytes(inner["clientDataJSON"]),
            attestationObject: attestation)
        let expectation = RegistrationExpectation(
            challenge: try Vectors.bytes(vector["challenge"]), relyingPartyID: try XCTUnwrap(vector["rpID"] as? String),
            origins: OriginPolicy(allowedOrigins: Vectors.origins(vector["origin"])))
        return Case(
            response: response, expectation: expectation, trust: .platformDefaults,
            now: Vectors.date(vector["verificationTime"]) ?? Date(), object: try CBORDecoder.decode(attestation))
    }

    func verify(_ testCase: Case, object: CBORValue? = nil, now: Date? = nil, policy: RegistrationPolicy = .init())
        throws -> VerifiedRegistration
    {
        var response = testCase.response
        if let object { response.attestationObject = CBOREncoder.encode(object) }
        return try RegistrationVerifier(policy: policy, trust: testCase.trust).verify(
            response: response, expectation: testCase.expectation, now: now ?? testCase.now)
    }

    func assertInvalid(
        _ testCase: Case, object: CBORValue? = nil, now: Date? = nil, _ code: WebAuthnError.Code = .attestationInvalid,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try verify(testCase, object: object, now: now), file: file, line: line) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    /// The attestation object with one top-level member replaced.
    func replacing(_ object: CBORValue, _ key: String, _ value: CBORValue) -> CBORValue {
        .map((object.mapEntries ?? []).map { $0.key == .text(key) ? CBORMapEntry($0.key, value) : $0 })
    }

    /// The attestation object with one attStmt member replaced (or removed when `value` is nil).
    func replacingStatement(_ object: CBORValue, _ key: String, _ value: CBORValue?) -> CBORValue {
        var entries = (object[text: "attStmt"]?.mapEntries ?? []).filter { $0.key != .text(key) }
        if let value { entries.append(CBORMapEntry(.text(key), value)) }
        return replacing(object, "attStmt", .map(entries))
    }

    /// authData with its signature counter changed: every signature or nonce over authData must then fail.
    func withChangedCounter(_ object: CBORValue) throws -> CBORValue {
        var authData = try XCTUnwrap(object[text: "authData"]?.byteString)
        authData[36] ^= 0x01
        return replacing(object, "authData", .bytes(authData))
    }

    func testEveryFormatDetectsChangedAuthenticatorData() throws {
        for name in [
            "packed-yubikey-firefox", "packed-okp", "apple-passkey",
            "android-key-pixel-8a-2025", "android-safetynet-2021", "tpm-surface-pro-4-sha1", "tpm-ecc-public-area-sha1",
        ] {
            let testCase = try load(name)
            XCTAssertNoThrow(try verify(testCase), name)
            assertInvalid(testCase, object: try withChangedCounter(testCase.object))
        }
    }

    func testFIDOU2FSignatureCoversItsFieldsButNotTheCounter() throws {
        // U2F signs rpIdHash, clientDataHash, credential ID and key, not the counter (§8.6).
        let testCase = try load("fido-u2f-yubikey-firefox")
        XCTAssertNoThrow(try verify(testCase, object: try withChangedCounter(testCase.object)))
        var sig = try XCTUnwrap(testCase.object[text: "attStmt"]?[text: "sig"]?.byteString)
        sig[sig.count - 1] ^= 0x01
        assertInvalid(testCase, object: replacingStatement(testCase.object, "sig", .bytes(sig)))
    }

    func testEveryFormatRejectsAMissingSignatureOrCertificate() throws {
        for (name, member) in [
            ("packed-yubikey-firefox", "sig"), ("fido-u2f-yubikey-firefox", "x5c"), ("apple-passkey", "x5c"),
            ("android-key-pixel-8a-2025", "x5c"), ("android-safetynet-2021", "response"),
            ("tpm-surface-pro-4-sha1", "certInfo"), ("tpm-surface-pro-4-sha1", "pubArea"),
        ] {
            let testCase = try load(name)
            assertInvalid(testCase, object: replacingStatement(testCase.object, member, nil))
        }
    }

    func testUnexpectedStatementMembersAreRejected() throws {
        let testCase = try load("packed-yubikey-firefox")
        assertInvalid(testCase, object: replacingStatement(testCase.object, "extra", .null))
    }

    func testTPMVersionAndStructures() throws {
        let testCase = try load("tpm-dell-xps-13-sha1")
        assertInvalid(testCase, object: replacingStatement(testCase.object, "ver", .text("1.2")))
        var certInfo = try XCTUnwrap(testCase.object[text: "attStmt"]?[text: "certInfo"]?.byteString)
        certInfo[0] ^= 0xFF
        assertInvalid(testCase, object: replacingStatement(testCase.object, "certInfo", .bytes(certInfo)))
        let pubArea = try XCTUnwrap(testCase.object[text: "attStmt"]?[text: "pubArea"]?.byteString)
        for length in [0, 2, 10, pubArea.count - 1] {
            assertInvalid(
                testCase, object: replacingStatement(testCase.object, "pubArea", .bytes(Array(pubArea.prefix(length)))))
        }
        assertInvalid(testCase, object: replacingStatement(testCase.object, "pubArea", .bytes(pubArea + [0])))
    }

    func testFIDOU2FNeedsExactlyOneCertificate() throws {
        let testCase = try load("fido-u2f-yubikey-firefox")
        let x5c = try XCTUnwrap(testCase.object[text: "attStmt"]?[text: "x5c"]?.arrayItems)
        assertInvalid(testCase, object: replacingStatement(testCase.object, "x5c", .array(x5c + x5c)))
    }

    func testSafetyNetTimestampMustBeFresh() throws {
        let testCase = try load("android-safetynet-2021")
        assertInvalid(testCase, now: testCase.now.addingTimeInterval(120))
        assertInvalid(testCase, now: testCase.now.addingTimeInterval(-60))
        XCTAssertNoThrow(try verify(testCase, now: testCase.now.addingTimeInterval(30)))
    }

    func testAndroidKeyStatementMustUseTheCredentialKey() throws {
        let testCase = try load("android-key-pixel-8a-2025")
        XCTAssertNoThrow(try verify(testCase, policy: RegistrationPolicy(androidKeyRequiresTrustedEnvironment: true)))
        var sig = try XCTUnwrap(testCase.object[text: "attStmt"]?[text: "sig"]?.byteString)
        sig[sig.count - 2] ^= 0x01
        assertInvalid(testCase, object: replacingStatement(testCase.object, "sig", .bytes(sig)))
        assertInvalid(testCase, object: replacingStatement(testCase.object, "alg", CBORValue(-257)))
    }

    func testAppleCertificateFromAnotherAttestationIsRejected() throws {
        let apple = try load("apple-passkey")
        let android = try load("android-key-pixel-8a-2025")
        let foreign = try XCTUnwrap(android.object[text: "attStmt"]?[text: "x5c"])
        assertInvalid(apple, object: replacingStatement(apple.object, "x5c", foreign))
    }
}
