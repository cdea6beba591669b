import Crypto
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// Cutting any structure at any offset gives an error, never a crash.
final class TruncationTests: XCTestCase {
    let authenticator = SoftwareAuthenticator(algorithm: .rs256)

    func testAuthenticatorDataAtEveryOffset() throws {
        let full = authenticator.authenticatorData(
            rpID: "example.com", flags: [.userPresent, .attestedCredentialData], signCount: 1,
            extensions: .map([CBORMapEntry(.text("credProtect"), CBORValue(1))]))
        XCTAssertNoThrow(try AuthenticatorData(bytes: full))
        for length in 0..<full.count {
            XCTAssertThrowsError(try AuthenticatorData(bytes: Array(full.prefix(length))), "length \(length)") {
                XCTAssertNotNil($0 as? WebAuthnError)
            }
        }
    }

    func testAttestationObjectAtEveryOffset() throws {
        let response = authenticator.makeRegistration(
            challenge: [1, 2, 3], rpID: "example.com", origin: "https://example.com", attestation: .packedSelf)
        let full = response.attestationObject
        XCTAssertNoThrow(try AttestationObject(bytes: full))
        for length in 0..<full.count {
            XCTAssertThrowsError(try AttestationObject(bytes: Array(full.prefix(length))), "length \(length)")
        }
    }

    func testCOSEKeyAtEveryOffset() throws {
        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256, .es512] {
            let full = SigningKey(algorithm: algorithm).coseKey
            XCTAssertNoThrow(try CredentialPublicKey(coseKey: full))
            for length in 0..<full.count {
                XCTAssertThrowsError(
                    try CredentialPublicKey(coseKey: Array(full.prefix(length))), "\(algorithm) \(length)")
            }
        }
    }

    func testClientDataAtEveryOffset() throws {
        let full = SoftwareAuthenticator.clientDataJSON(
            type: "webauthn.get", challenge: Array(repeating: 1, count: 32), origin: "https://example.com",
            crossOrigin: false)
        XCTAssertNoThrow(try ClientData(json: full))
        for length in 0..<full.count {
            XCTAssertThrowsError(try ClientData(json: Array(full.prefix(length))), "length \(length)")
        }
    }

    func testSingleByteFlipsNeverCrash() throws {
        let response = authenticator.makeRegistration(
            challenge: [1, 2, 3], rpID: "example.com", origin: "https://example.com", attestation: .packedSelf)
        let expectation = RegistrationExpectation(
            challenge: [1, 2, 3], relyingPartyID: "example.com",
            origins: OriginPolicy(allowedOrigins: ["https://example.com"]))
        let verifier = RegistrationVerifier(trust: AttestationTrust())
        for index in 0..<response.attestationObject.count {
            var mutated = response
            mutated.attestationObject[index] ^= 0x80
            _ = try? verifier.verify(response: mutated, expectation: expectation, now: Date())
        }
    }
}
