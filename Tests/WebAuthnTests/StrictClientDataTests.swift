import Crypto
import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn
import XCTest

/// Where the spec is exact, so is the verifier: the challenge's spelling, topOrigin, empty credential IDs, and
/// algorithms (only those offered are accepted, RS1 only when offered).
final class StrictClientDataTests: XCTestCase {
    let rpID = "example.com"
    let origin = "https://example.com"
    /// Bytes whose base64url spelling has both `-` and `_`, so the standard alphabet spells them differently.
    let challenge: [UInt8] = [0xFB, 0xFF, 0xBF] + Array(repeating: 0x3E, count: 28) + [0xFF]
    let authenticator = SoftwareAuthenticator(algorithm: .es256)

    func clientData(type: String, challengeText: String, extra: String = "") -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challengeText)","origin":"\#(origin)"\#(extra)}"#.utf8)
    }

    var spellings: (exact: String, padded: String, standard: String) {
        let exact = Base64URL.encode(challenge)
        var padded = exact
        while padded.utf8.count % 4 != 0 { padded += "=" }
        let standard = exact.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        return (exact, padded, standard)
    }

    func registration(clientData: [UInt8], authenticator: SoftwareAuthenticator? = nil) -> RegistrationResponse {
        let authenticator = authenticator ?? self.authenticator
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .userVerified, .attestedCredentialData], signCount: 0)
        return RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData,
            attestationObject: authenticator.attestationObject(
                authenticatorData: authData, clientDataHash: sha256(clientData), attestation: .none))
    }

    func register(
        _ response: RegistrationResponse, origins: OriginPolicy? = nil,
        algorithms: [Int] = CeremonyOptions.standard.algorithms
    ) throws -> VerifiedRegistration {
        try RegistrationVerifier(trust: AttestationTrust()).verify(
            response: response,
            expectation: RegistrationExpectation(
                challenge: challenge, relyingPartyID: rpID, origins: origins ?? OriginPolicy(allowedOrigins: [origin]),
                allowedAlgorithms: algorithms),
            now: Date())
    }

    func authenticate(_ clientData: [UInt8], origins: OriginPolicy? = nil) throws -> VerifiedAuthentication {
        let response = authenticator.assertion(
            clientDataJSON: clientData,
            authenticatorData: authenticator.authenticatorData(rpID: rpID, flags: [.userPresent], signCount: 0))
        return try AuthenticationVerifier().verify(
            response: response,
            expectation: AuthenticationExpectation(
                challenge: challenge, relyingPartyID: rpID, origins: origins ?? OriginPolicy(allowedOrigins: [origin])),
            credential: StoredCredential(
                id: authenticator.credentialID, publicKey: try CredentialPublicKey(coseKey: authenticator.key.coseKey),
                userHandle: authenticator.userHandle, signCount: 0, backupEligible: false))
    }

    func assertCode(_ code: WebAuthnError.Code, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), line: line) {
            XCTAssertEqual(($0 as? WebAuthnError)?.code, code, "\($0)", line: line)
        }
    }

    func testTheChallengeMustBeTheExactUnpaddedBase64URL() throws {
        let (exact, padded, standard) = spellings
        XCTAssertNotEqual(padded, exact)
        XCTAssertNotEqual(standard, exact)
        XCTAssertNoThrow(
            try register(registration(clientData: clientData(type: "webauthn.create", challengeText: exact))))
        XCTAssertNoThrow(try authenticate(clientData(type: "webauthn.get", challengeText: exact)))
        for text in [padded, standard, exact + "A", String(exact.dropLast())] {
            assertCode(.challengeMismatch) {
                _ = try register(registration(clientData: clientData(type: "webauthn.create", challengeText: text)))
            }
            assertCode(.challengeMismatch) {
                _ = try authenticate(clientData(type: "webauthn.get", challengeText: text))
            }
        }
    }

    func testATopOriginMeansAnEmbeddedCeremonyEvenWhenItEqualsOrigin() throws {
        let (exact, _, _) = spellings
        for extra in [#","topOrigin":"\#(origin)""#, #","crossOrigin":false,"topOrigin":"\#(origin)""#] {
            let create = clientData(type: "webauthn.create", challengeText: exact, extra: extra)
            let get = clientData(type: "webauthn.get", challengeText: exact, extra: extra)
            assertCode(.crossOriginNotAllowed) { _ = try register(registration(clientData: create)) }
            assertCode(.crossOriginNotAllowed) { _ = try authenticate(get) }
            // Allowed when the cross-origin policy names that top origin, and only then.
            let allowing = OriginPolicy(allowedOrigins: [origin], allowCrossOrigin: true, allowedTopOrigins: [origin])
            XCTAssertNoThrow(try register(registration(clientData: create), origins: allowing))
            XCTAssertNoThrow(try authenticate(get, origins: allowing))
            let elsewhere = OriginPolicy(
                allowedOrigins: [origin], allowCrossOrigin: true, allowedTopOrigins: ["https://shop.example.net"])
            assertCode(.crossOriginNotAllowed) { _ = try authenticate(get, origins: elsewhere) }
        }
        // No topOrigin and crossOrigin false (or absent): an ordinary ceremony.
        XCTAssertNoThrow(
            try authenticate(clientData(type: "webauthn.get", challengeText: exact, extra: #","crossOrigin":false"#)))
    }

    func testAZeroLengthCredentialIDIsRefused() throws {
        var empty = SoftwareAuthenticator(algorithm: .es256)
        empty.credentialID = []
        let create = SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        assertCode(.malformedAuthenticatorData) {
            _ = try register(registration(clientData: create, authenticator: empty))
        }
        // At sign-in: a response naming an empty credential ID, even against a stored credential with that ID.
        let get = SoftwareAuthenticator.clientDataJSON(type: "webauthn.get", challenge: challenge, origin: origin)
        let response = empty.assertion(
            clientDataJSON: get,
            authenticatorData: empty.authenticatorData(rpID: rpID, flags: [.userPresent], signCount: 0))
        assertCode(.credentialIDMismatch) {
            _ = try AuthenticationVerifier().verify(
                response: response,
                expectation: AuthenticationExpectation(
                    challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin])),
                credential: StoredCredential(
                    id: [], publicKey: try CredentialPublicKey(coseKey: empty.key.coseKey),
                    userHandle: empty.userHandle,
                    signCount: 0, backupEligible: false))
        }
    }

    func testOnlyOfferedAlgorithmsAreAccepted() throws {
        let create = SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        let eddsa = SoftwareAuthenticator(algorithm: .edDSA)
        XCTAssertNoThrow(try register(registration(clientData: create, authenticator: eddsa)))
        assertCode(.algorithmNotAllowed) {
            _ = try register(registration(clientData: create, authenticator: eddsa), algorithms: [-7, -257])
        }
    }

    func testRS1IsAcceptedOnlyWhereOffered() throws {
        var windowsHello = SoftwareAuthenticator(algorithm: .rs1)
        let create = SoftwareAuthenticator.clientDataJSON(type: "webauthn.create", challenge: challenge, origin: origin)
        // Not in the standard list, so refused by default.
        XCTAssertFalse(CeremonyOptions.standard.algorithms.contains(-65535))
        assertCode(.algorithmNotAllowed) {
            _ = try register(registration(clientData: create, authenticator: windowsHello))
        }
        let record = try register(
            registration(clientData: create, authenticator: windowsHello),
            algorithms: CeremonyOptions.standard.algorithms + [-65535])
        XCTAssertEqual(record.algorithm, -65535)
        // And its assertions verify (RSASSA-PKCS1-v1_5 with SHA-1).
        let assertion = windowsHello.makeAssertion(challenge: challenge, rpID: rpID, origin: origin)
        XCTAssertNoThrow(
            try AuthenticationVerifier().verify(
                response: assertion,
                expectation: AuthenticationExpectation(
                    challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin])),
                credential: StoredCredential(
                    id: windowsHello.credentialID, publicKey: record.publicKey, userHandle: windowsHello.userHandle,
                    signCount: 0, backupEligible: false)))
    }
}
