import Crypto
import Foundation
import WebAuthn
import XCTest

final class AuthenticationVectorTests: XCTestCase {
    private let expectedCodes: [String: WebAuthnError.Code] = [
        "auth-wrong-public-key": .signatureInvalid,
        "auth-ec2-uv-required-missing": .userVerificationRequired,
    ]

    func testEveryAuthenticationVectorGivesItsVerdict() throws {
        let vectors = try Vectors.load("authentications.json")
        XCTAssertEqual(vectors.count, 9)
        for vector in vectors {
            let name = vector["name"] as? String ?? "?"
            let outcome = Vectors.expectedOutcome(vector)
            let result = Result { () throws -> VerifiedAuthentication in try verify(vector) }
            switch (outcome.success, result) {
            case (true, .success(let verified)):
                if let count = vector["expectedNewSignCount"] as? Int {
                    XCTAssertEqual(verified.newSignCount, UInt32(count), name)
                }
                if let id = vector["expectedCredentialID"] as? String {
                    XCTAssertEqual(verified.credentialID, try Vectors.bytes(id), name)
                }
                if let uv = vector["expectedUserVerified"] as? Bool { XCTAssertEqual(verified.userVerified, uv, name) }
                if let backedUp = vector["expectedBackedUp"] as? Bool {
                    XCTAssertEqual(verified.backedUp, backedUp, name)
                }
                XCTAssertFalse(verified.possiblyCloned, name)
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

    private func verify(_ vector: [String: Any]) throws -> VerifiedAuthentication {
        let response = try XCTUnwrap(vector["response"] as? [String: Any])
        let inner = try XCTUnwrap(response["response"] as? [String: Any])
        let credentialID = try Vectors.bytes(response["rawId"])
        let userHandle = try (inner["userHandle"] as? String).map { try Vectors.bytes($0) }
        let request = AuthenticationResponse(
            credentialID: credentialID, clientDataJSON: try Vectors.bytes(inner["clientDataJSON"]),
            authenticatorData: try Vectors.bytes(inner["authenticatorData"]),
            signature: try Vectors.bytes(inner["signature"]), userHandle: userHandle)
        let expectation = AuthenticationExpectation(
            challenge: try Vectors.bytes(vector["challenge"]), relyingPartyID: try XCTUnwrap(vector["rpID"] as? String),
            origins: OriginPolicy(allowedOrigins: Vectors.origins(vector["origin"])),
            userVerification: vector["requireUserVerification"] as? Bool == true ? .required : .preferred,
            allowedCredentialIDs: [credentialID])
        let stored = StoredCredential(
            id: credentialID,
            publicKey: try CredentialPublicKey(coseKey: try Vectors.bytes(vector["credentialPublicKey"])),
            userHandle: userHandle ?? [], signCount: UInt32(try XCTUnwrap(vector["currentSignCount"] as? Int)),
            backupEligible: false)
        return try AuthenticationVerifier().verify(response: request, expectation: expectation, credential: stored)
    }
}
