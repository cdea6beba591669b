import Crypto
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class COSEKeyTests: XCTestCase {
    let credentialAlgorithms: [COSEAlgorithm] = [
        .es256, .es384, .es512, .esp256, .esp384, .esp512, .edDSA, .ed25519, .rs256, .rs384, .rs512, .ps256, .ps384,
        .ps512,
    ]

    /// Every algorithm: a key made here, signed through OpenSSL, verified through a full assertion ceremony.
    func testEveryAlgorithmVerifiesThroughTheCeremony() throws {
        for algorithm in credentialAlgorithms {
            var authenticator = SoftwareAuthenticator(algorithm: algorithm)
            let key = try CredentialPublicKey(coseKey: authenticator.key.coseKey)
            XCTAssertEqual(key.algorithm, algorithm)
            let challenge: [UInt8] = Array(repeating: 5, count: 32)
            let response = authenticator.makeAssertion(
                challenge: challenge, rpID: "example.com", origin: "https://example.com")
            let credential = StoredCredential(
                id: authenticator.credentialID, publicKey: key, userHandle: authenticator.userHandle, signCount: 0,
                backupEligible: false)
            let expectation = AuthenticationExpectation(
                challenge: challenge, relyingPartyID: "example.com",
                origins: OriginPolicy(allowedOrigins: ["https://example.com"]))
            XCTAssertNoThrow(
                try AuthenticationVerifier().verify(
                    response: response, expectation: expectation, credential: credential),
                "\(algorithm)")
            var tampered = response
            tampered.clientDataJSON[10] ^= 1
            XCTAssertThrowsError(
                try AuthenticationVerifier().verify(
                    response: tampered, expectation: expectation, credential: credential)
            )
        }
    }

    func testEveryAlgorithmRegistersWithPackedSelfAttestation() throws {
        for algorithm in credentialAlgorithms {
            let authenticator = SoftwareAuthenticator(algorithm: algorithm)
            let challenge: [UInt8] = Array(repeating: 6, count: 32)
            let response = authenticator.makeRegistration(
                challenge: challenge, rpID: "example.com", origin: "https://example.com", attestation: .packedSelf)
            let expectation = RegistrationExpectation(
                challenge: challenge, relyingPartyID: "example.com",
                origins: OriginPolicy(allowedOrigins: ["https://example.com"]))
            let record = try RegistrationVerifier(trust: AttestationTrust()).verify(
                response: response, expectation: expectation, now: Date())
            XCTAssertEqual(record.algorithm, algorithm.rawValue)
            XCTAssertEqual(record.attestationType, .self)
        }
    }

    func testSignatureFromAnotherKeyFails() throws {
        let signer = SigningKey(algorithm: .es256)
        let other = try CredentialPublicKey(coseKey: SigningKey(algorithm: .es256).coseKey)
        XCTAssertFalse(other.verify(signature: signer.sign([1, 2, 3]), message: [1, 2, 3]))
        let own = try CredentialPublicKey(coseKey: signer.coseKey)
        XCTAssertTrue(own.verify(signature: signer.sign([1, 2, 3]), message: [1, 2, 3]))
    }

    private func replacing(_ key: [UInt8], _ label: Int, with value: CBORValue?) throws -> [UInt8] {
        let entries = try XCTUnwrap(CBORDecoder.decode(key).mapEntries)
        var result = entries.filter { $0.key != CBORValue(label) }
        if let value { result.append(CBORMapEntry(CBORValue(label), value)) }
        return CBOREncoder.encode(.map(result))
    }

    private func assertRejected(
        _ key: [UInt8], _ code: WebAuthnError.Code, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try CredentialPublicKey(coseKey: key), file: file, line: line) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", file: file, line: line)
        }
    }

    func testKeyTypeCurveAndAlgorithmMismatchesAreRejected() throws {
        let p256 = SigningKey(algorithm: .es256).coseKey
        assertRejected(try replacing(p256, 3, with: CBORValue(-35)), .unsupportedAlgorithm)  // ES384 on P-256
        assertRejected(try replacing(p256, -1, with: CBORValue(2)), .unsupportedAlgorithm)  // crv P-384, alg ES256
        assertRejected(try replacing(p256, 3, with: CBORValue(-8)), .unsupportedAlgorithm)  // EdDSA on EC2
        assertRejected(try replacing(p256, 3, with: CBORValue(-257)), .unsupportedAlgorithm)  // RS256 on EC2
        assertRejected(try replacing(p256, 3, with: CBORValue(-999)), .unsupportedAlgorithm)
        assertRejected(try replacing(p256, 1, with: CBORValue(9)), .unsupportedAlgorithm)
        assertRejected(try replacing(p256, 3, with: nil), .malformedCBOR)
        assertRejected(
            try replacing(p256, -2, with: .bytes(Array(repeating: 1, count: 31))), .malformedAuthenticatorData)
        assertRejected(try replacing(p256, -3, with: .text("y")), .malformedCBOR)
        // A point that is not on the curve.
        assertRejected(
            try replacing(p256, -3, with: .bytes(Array(repeating: 1, count: 32))), .malformedAuthenticatorData)

        let ed = SigningKey(algorithm: .edDSA).coseKey
        assertRejected(try replacing(ed, -1, with: CBORValue(1)), .unsupportedAlgorithm)  // crv P-256 on OKP
        assertRejected(try replacing(ed, 3, with: CBORValue(-7)), .unsupportedAlgorithm)
        assertRejected(try replacing(ed, -2, with: .bytes([1, 2, 3])), .malformedAuthenticatorData)

        let rsa = SigningKey(algorithm: .rs256).coseKey
        assertRejected(try replacing(rsa, 3, with: CBORValue(-7)), .unsupportedAlgorithm)
        // RS1 is a key algorithm a relying party may offer (registration refuses it unless it did).
        XCTAssertEqual(try CredentialPublicKey(coseKey: try replacing(rsa, 3, with: CBORValue(-65535))).algorithm, .rs1)
        assertRejected(
            try replacing(SigningKey(algorithm: .es256).coseKey, 3, with: CBORValue(-65535)), .unsupportedAlgorithm)
    }

    func testShortRSAModulusIsRejected() {
        assertRejected(SigningKey(algorithm: .rs256, rsaBits: 1024).coseKey, .unsupportedAlgorithm)
        XCTAssertNoThrow(try CredentialPublicKey(coseKey: SigningKey(algorithm: .ps256, rsaBits: 2048).coseKey))
    }

    func testKeyMustBeExactlyOneMap() throws {
        let key = SigningKey(algorithm: .es256).coseKey
        assertRejected(key + [0], .malformedCBOR)
        assertRejected(CBOREncoder.encode(.array([])), .malformedCBOR)
    }
}
