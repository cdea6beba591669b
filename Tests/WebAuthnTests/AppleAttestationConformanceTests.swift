import WebAuthn
import XCTest

/// The apple format as deployed iPhones send it: the real `apple-passkey` vector from the shared vectors, read in
/// place, with its attStmt re-encoded. The Apple statement has no signature (the nonce extension binds the
/// certificate to authData and clientDataHash), so members added to attStmt leave the rest valid.
extension AttestationFormatTests {
    func testAppleStatementMayCarryTheCredentialKeysAlg() throws {
        let apple = try load("apple-passkey")
        let plain = try verify(apple)
        XCTAssertEqual(plain.attestationType, .anonymizationCA)
        // As real iPhones have sent it: x5c and alg, alg being the credential key's algorithm.
        let withAlg = replacingStatement(apple.object, "alg", CBORValue(plain.algorithm))
        let record = try verify(apple, object: withAlg)
        XCTAssertEqual(record.attestationFormat, .apple)
        XCTAssertEqual(record.attestationType, .anonymizationCA)
        XCTAssertEqual(record.attestationTrust, .trusted)
        XCTAssertEqual(record.credentialPublicKey, plain.credentialPublicKey)
    }

    func testAppleStatementRefusesAnotherAlgOrOtherMembers() throws {
        let apple = try load("apple-passkey")
        let algorithm = try verify(apple).algorithm
        let other = algorithm == -7 ? -257 : -7
        assertInvalid(apple, object: replacingStatement(apple.object, "alg", CBORValue(other)))
        assertInvalid(apple, object: replacingStatement(apple.object, "alg", .text("ES256")))
        assertInvalid(apple, object: replacingStatement(apple.object, "alg", .bytes([0xF9])))
        // Members that neither §8.8 nor deployed devices send.
        for member in ["sig", "ver", "certInfo"] {
            assertInvalid(apple, object: replacingStatement(apple.object, member, .bytes([1, 2, 3])))
        }
        let withAlg = replacingStatement(apple.object, "alg", CBORValue(algorithm))
        assertInvalid(apple, object: replacingStatement(withAlg, "sig", .bytes([1])))
        // alg does not stand in for x5c.
        assertInvalid(apple, object: replacingStatement(withAlg, "x5c", nil))
    }
}
