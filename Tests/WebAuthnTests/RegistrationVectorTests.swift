import Crypto
import Encoding
import Foundation
import WebAuthn
import XCTest

final class RegistrationVectorTests: XCTestCase {
    /// The reason code each failing vector must give; the vectors describe the failure in prose.
    private let expectedCodes: [String: WebAuthnError.Code] = [
        "none-up0-presence-required": .userPresentFlagNotSet,
        "unsupported-fmt-not-real-fmt": .unsupportedAttestationFormat,
        "packed-yubikey-wrong-root": .attestationUntrusted,
        "empty-attestation-object": .malformedCBOR,
        "fido-u2f-token-binding-not-supported": .tokenBindingInvalid,
    ]

    func testEveryRegistrationVectorGivesItsVerdict() throws {
        let vectors = try Vectors.load("registrations.json")
        XCTAssertEqual(vectors.count, 24)
        for vector in vectors {
            let name = vector["name"] as? String ?? "?"
            let outcome = Vectors.expectedOutcome(vector)
            let result = Result { () throws -> VerifiedRegistration in try verify(vector) }
            switch (outcome.success, result) {
            case (true, .success(let registration)):
                if let id = vector["expectedCredentialID"] as? String {
                    XCTAssertEqual(registration.credentialID, try Vectors.bytes(id), name)
                }
                if let count = vector["expectedSignCount"] as? Int {
                    XCTAssertEqual(registration.signCount, UInt32(count), name)
                }
                if let aaguid = vector["expectedAAGUID"] as? String {
                    XCTAssertEqual(registration.aaguid, AAGUID(aaguid), name)
                }
                if let key = vector["expectedCredentialPublicKey"] as? String {
                    XCTAssertEqual(registration.credentialPublicKey, try Vectors.bytes(key), name)
                }
                if let backedUp = vector["expectedBackedUp"] as? Bool {
                    XCTAssertEqual(registration.backedUp, backedUp, name)
                }
                XCTAssertEqual(registration.attestationFormat.rawValue, vector["format"] as? String, name)
            case (false, .failure(let error)):
                guard let error = error as? WebAuthnError else {
                    XCTFail("\(name): unexpected error type \(error)")
                    continue
                }
                let expected = outcome.code.flatMap(WebAuthnError.Code.init(rawValue:)) ?? expectedCodes[name]
                XCTAssertNotNil(expected, "\(name): no expected code recorded")
                XCTAssertEqual(error.code, expected, "\(name): \(error)")
            case (true, .failure(let error)):
                XCTFail("\(name): expected success, got \(error)")
            case (false, .success):
                XCTFail("\(name): expected failure, got success")
            }
        }
    }

    func testVectorsWithPlatformRootsPassWithBuiltInDefaults() throws {
        let vectors = try Vectors.load("registrations.json")
        for name in ["apple-passkey", "android-key-pixel-8a-2025", "android-safetynet-2021"] {
            let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == name })
            let registration = try verify(vector, trust: .platformDefaults)
            XCTAssertEqual(registration.attestationTrust, .trusted, name)
        }
    }

    func testTrustedChainBecomesUntrustedOutsideItsValidity() throws {
        let vectors = try Vectors.load("registrations.json")
        let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == "apple-passkey" })
        XCTAssertThrowsError(try verify(vector, now: Date(timeIntervalSince1970: 1_900_000_000))) { error in
            XCTAssertEqual((error as? WebAuthnError)?.code, .attestationUntrusted)
        }
    }

    func testAttestationWithoutRootsIsUnverifiedOrRejectedByPolicy() throws {
        let vectors = try Vectors.load("registrations.json")
        let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == "packed-yubikey-firefox" })
        XCTAssertEqual(try verify(vector).attestationTrust, .unverified)
        var strict = AttestationTrust()
        strict.requireTrustedAttestation = true
        XCTAssertThrowsError(try verify(vector, trust: strict)) { error in
            XCTAssertEqual((error as? WebAuthnError)?.code, .attestationUntrusted)
        }
        var allowList = AttestationTrust()
        allowList.allowedAAGUIDs = [AAGUID.zero]
        XCTAssertThrowsError(try verify(vector, trust: allowList)) { error in
            XCTAssertEqual((error as? WebAuthnError)?.code, .attestationUntrusted)
        }
    }

    func testAttestationTypesOfVectors() throws {
        let vectors = try Vectors.load("registrations.json")
        let expected: [String: AttestationType] = [
            "none-basic": .none, "packed-yubikey-firefox": .basic, "fido-u2f-yubikey-firefox": .basic,
            "apple-passkey": .anonymizationCA, "tpm-surface-pro-4-sha1": .attestationCA,
            "android-key-pixel-8a-2025": .basic, "android-safetynet-2021": .basic,
        ]
        for (name, type) in expected {
            let vector = try XCTUnwrap(vectors.first { $0["name"] as? String == name })
            XCTAssertEqual(try verify(vector).attestationType, type, name)
        }
        let android = try XCTUnwrap(vectors.first { $0["name"] as? String == "android-key-pixel-8a-2025" })
        XCTAssertEqual(try verify(android).clientExtensionOutputs.residentKey, false)
    }

    /// Builds the request exactly from the vector's fields and verifies it.
    private func verify(
        _ vector: [String: Any], trust explicitTrust: AttestationTrust? = nil, now explicitNow: Date? = nil
    ) throws -> VerifiedRegistration {
        let response = try XCTUnwrap(vector["response"] as? [String: Any])
        let inner = try XCTUnwrap(response["response"] as? [String: Any])
        var extensions: [UInt8] = []
        if let results = response["clientExtensionResults"] as? [String: Any] {
            extensions = Array(try JSONSerialization.data(withJSONObject: results))
        }
        let attestationText = inner["attestationObject"] as? String ?? ""
        let request = RegistrationResponse(
            credentialID: try Vectors.bytes(response["rawId"]),
            clientDataJSON: try Vectors.bytes(inner["clientDataJSON"]),
            attestationObject: try XCTUnwrap(Base64URL.decode(attestationText)),
            transports: inner["transports"] as? [String] ?? [], clientExtensionResultsJSON: extensions)
        let expectation = RegistrationExpectation(
            challenge: try Vectors.bytes(vector["challenge"]), relyingPartyID: try XCTUnwrap(vector["rpID"] as? String),
            origins: OriginPolicy(allowedOrigins: Vectors.origins(vector["origin"])),
            userVerification: vector["requireUserVerification"] as? Bool == true ? .required : .preferred,
            mediation: vector["requireUserPresence"] as? Bool == false ? .conditional : .modal,
            allowedAlgorithms: vector["supportedAlgorithms"] as? [Int] ?? COSEAlgorithm.defaultAllowed)
        var trust = AttestationTrust()
        if let format = (vector["format"] as? String).flatMap(AttestationFormat.init(rawValue:)) {
            let roots = try Vectors.certificates(vector["trustAnchorsPEM"] ?? vector["implicitTrustAnchorsPEM"])
            if !roots.isEmpty { trust.rootsByFormat[format] = roots }
        }
        let now = explicitNow ?? Vectors.date(vector["verificationTime"]) ?? Date()
        return try RegistrationVerifier(trust: explicitTrust ?? trust).verify(
            response: request, expectation: expectation, now: now)
    }
}
