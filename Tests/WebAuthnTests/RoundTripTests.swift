import Crypto
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

final class RoundTripTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"

    /// Register, store what the record says, parse it back, then sign in several times.
    func testRegisterThenSignInWithEveryAuthenticatorKind() throws {
        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256] {
            var authenticator = SoftwareAuthenticator(algorithm: algorithm, keepsZeroCounter: algorithm == .edDSA)
            let registrationChallenge = SecureRandom().bytes(count: 32)
            let record = try RegistrationVerifier(trust: AttestationTrust()).verify(
                response: authenticator.makeRegistration(
                    challenge: registrationChallenge, rpID: rpID, origin: origin,
                    flags: [.userPresent, .userVerified, .backupEligible, .attestedCredentialData]),
                expectation: RegistrationExpectation(
                    challenge: registrationChallenge, relyingPartyID: rpID,
                    origins: OriginPolicy(allowedOrigins: [origin]), userVerification: .required),
                now: Date())
            var stored = StoredCredential(
                id: record.credentialID, publicKey: try CredentialPublicKey(coseKey: record.credentialPublicKey),
                userHandle: authenticator.userHandle, signCount: record.signCount,
                backupEligible: record.backupEligible)
            for _ in 0..<3 {
                let challenge = SecureRandom().bytes(count: 32)
                let result = try AuthenticationVerifier().verify(
                    response: authenticator.makeAssertion(
                        challenge: challenge, rpID: rpID, origin: origin,
                        flags: [.userPresent, .userVerified, .backupEligible, .backedUp]),
                    expectation: AuthenticationExpectation(
                        challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]),
                        userVerification: .required),
                    credential: stored)
                XCTAssertTrue(result.backedUp)
                XCTAssertFalse(result.possiblyCloned)
                stored.signCount = result.newSignCount
            }
            XCTAssertEqual(stored.signCount, algorithm == .edDSA ? 0 : 3)
        }
    }

    /// One cached key shared by many concurrent verifications (the Sendable claims of the key types).
    func testCachedKeyIsSafeToShareAcrossTasks() async throws {
        for algorithm in [COSEAlgorithm.es256, .ps256, .ed25519] {
            var authenticator = SoftwareAuthenticator(algorithm: algorithm, keepsZeroCounter: true)
            let challenge = SecureRandom().bytes(count: 32)
            let response = authenticator.makeAssertion(challenge: challenge, rpID: rpID, origin: origin)
            let credential = StoredCredential(
                id: authenticator.credentialID, publicKey: try CredentialPublicKey(coseKey: authenticator.key.coseKey),
                userHandle: authenticator.userHandle, signCount: 0, backupEligible: false)
            let expectation = AuthenticationExpectation(
                challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]))
            var tampered = response
            tampered.signature = authenticator.key.sign([1, 2, 3])
            let forged = tampered
            let verifier = AuthenticationVerifier()
            let failures = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var failures = 0
                        for index in 0..<100 {
                            let candidate = index % 10 == 0 ? forged : response
                            let ok =
                                (try? verifier.verify(
                                    response: candidate, expectation: expectation, credential: credential)) != nil
                            if ok == (index % 10 == 0) { failures += 1 }
                        }
                        return failures
                    }
                }
                return await group.reduce(0, +)
            }
            XCTAssertEqual(failures, 0, "\(algorithm)")
        }
    }
}
