import AccessTokenSigning
import AccessTokens
import COpenSSL
import Encoding
import Foundation
import JSON
import PasskeySessionVerifier
import XCTest

/// What a verifier accepts and what it refuses, each refusal by its code, with a key set in memory.
final class VerificationTests: XCTestCase {
    func assertRefused(
        _ token: String, by verifier: PasskeySessionVerifier, _ code: SessionVerifierError.Code,
        file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            let session = try await verifier.verify(token)
            XCTFail("verified, for session \(session.sessionID)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        }
    }

    func testAGoodES256TokenVerifiesToItsSession() async throws {
        let harness = Harness()
        let claims = harness.claims(sessionID: "ses_42")
        let session = try await harness.verifier.verify(harness.es256.token(claims))
        XCTAssertEqual(session.accountID, claims.subject)
        XCTAssertEqual(session.sessionID, "ses_42")
        XCTAssertEqual(session.expiresAt, Date(timeIntervalSince1970: TimeInterval(claims.expiresAt)))
        XCTAssertEqual(session.issuedAt, Date(timeIntervalSince1970: TimeInterval(claims.issuedAt)))
        XCTAssertEqual(session.authenticatedAt, Date(timeIntervalSince1970: TimeInterval(claims.authenticatedAt)))
        XCTAssertEqual(session.methods, ["pop", "user"])
        XCTAssertEqual(session.tokenID, claims.tokenID)
        XCTAssertEqual(session.clientID, claims.clientID)
        XCTAssertEqual(session.issuer, Harness.issuer)
        XCTAssertEqual(session.audience, Harness.audience)
        XCTAssertEqual(harness.fetcher.requests, 1)
    }

    func testAGoodEdDSATokenVerifiesWhenEdDSAIsAllowed() async throws {
        let harness = Harness(algorithms: [.es256, .edDSA])
        let session = try await harness.verifier.verify(harness.edDSA.token(harness.claims()))
        XCTAssertEqual(session.sessionID, "ses_01")
        _ = try await harness.verifier.verify(harness.es256.token(harness.claims()))
    }

    func testAnEdDSATokenIsRefusedByTheDefaultES256Only() async {
        let harness = Harness()
        await assertRefused(harness.edDSA.token(harness.claims()), by: harness.verifier, .algorithmNotAllowed)
        XCTAssertEqual(harness.fetcher.requests, 0, "a refused algorithm costs no fetch")
    }

    func testAlgNoneIsRefused() async {
        let harness = Harness()
        let input = TestSigningKey.signingInput(
            header: harness.header(harness.es256) { $0["alg"] = "none" }, payload: harness.payload())
        await assertRefused(input + ".", by: harness.verifier, .algorithmNotAllowed)
        await assertRefused(
            input + "." + Base64URL.encode([UInt8](repeating: 1, count: 64)), by: harness.verifier,
            .algorithmNotAllowed)
    }

    func testHS256SignedWithThePublicKeyAsTheSecretIsRefused() async {
        let harness = Harness()
        // The classic confusion: an HMAC keyed with the published key, hoping the verifier uses it as a secret.
        let input = TestSigningKey.signingInput(
            header: harness.header(harness.es256) { $0["alg"] = "HS256" }, payload: harness.payload())
        let secret = harness.es256.publicKey.json.serialized()
        var mac = [UInt8](repeating: 0, count: 32)
        var length = 0
        XCTAssertNotNil(
            EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, secret, secret.count, input, input.utf8.count, &mac, 32, &length)
        )
        await assertRefused(input + "." + Base64URL.encode(mac), by: harness.verifier, .algorithmNotAllowed)
    }

    func testAnExpiredTokenIsRefusedOnceTheLeewayIsOver() async throws {
        let harness = Harness()
        let token = harness.es256.token(harness.claims())
        harness.clock.advance(by: .seconds(600 + 29))
        _ = try await harness.verifier.verify(token)
        harness.clock.advance(by: .seconds(1))
        await assertRefused(token, by: harness.verifier, .expired)
    }

    func testATokenNotValidYetIsRefused() async throws {
        let harness = Harness()
        let now = harness.clock.seconds
        let notBefore = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["nbf"] = .integer(now + 31) })
        await assertRefused(notBefore, by: harness.verifier, .notYetValid)
        let issuedLater = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["iat"] = .integer(now + 31) })
        await assertRefused(issuedLater, by: harness.verifier, .notYetValid)
        let withinLeeway = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["nbf"] = .integer(now + 30) })
        _ = try await harness.verifier.verify(withinLeeway)
    }

    func testAnotherAudienceIsRefusedAndAnAudienceListWithOursAccepted() async throws {
        let harness = Harness()
        let other = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["aud"] = "https://other.example.com" })
        await assertRefused(other, by: harness.verifier, .wrongAudience)
        let list = harness.es256.token(
            header: harness.header(harness.es256),
            payload: harness.payload { $0["aud"] = ["https://other.example.com", .string(Harness.audience)] })
        _ = try await harness.verifier.verify(list)
        // One name holding ours after a space is not a list.
        let spaced = harness.es256.token(
            header: harness.header(harness.es256),
            payload: harness.payload { $0["aud"] = .string("https://other.example.com " + Harness.audience) })
        await assertRefused(spaced, by: harness.verifier, .missingClaim)
    }

    func testAnotherIssuerIsRefused() async {
        let harness = Harness()
        let token = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["iss"] = "https://passkeys.example" })
        await assertRefused(token, by: harness.verifier, .wrongIssuer)
    }

    func testAChangedPayloadByteBreaksTheSignature() async throws {
        let harness = Harness()
        let token = harness.es256.token(harness.claims())
        _ = try await harness.verifier.verify(token)
        let parts = token.split(separator: ".").map(String.init)
        var payload = try XCTUnwrap(Base64URL.decodeUnpadded(parts[1]))
        let subject = try XCTUnwrap(payload.firstRange(of: Array(#""acc_01""#.utf8)))
        payload[subject.upperBound - 2] = UInt8(ascii: "2")
        let changed = [parts[0], Base64URL.encode(payload), parts[2]].joined(separator: ".")
        await assertRefused(changed, by: harness.verifier, .signatureInvalid)
    }

    func testAChangedSignatureByteIsRefused() async {
        let harness = Harness(algorithms: [.es256, .edDSA])
        for key in [harness.es256, harness.edDSA] {
            let parts = key.token(harness.claims()).split(separator: ".").map(String.init)
            var signature = Base64URL.decodeUnpadded(parts[2]) ?? []
            signature[10] ^= 0x01
            let changed = [parts[0], parts[1], Base64URL.encode(signature)].joined(separator: ".")
            await assertRefused(changed, by: harness.verifier, .signatureInvalid)
        }
    }

    func testASignatureByAnotherKeyUnderAKnownKidIsRefused() async {
        let harness = Harness()
        let impostor = TestSigningKey(.es256)
        let token = impostor.token(header: harness.header(harness.es256), payload: harness.payload())
        await assertRefused(token, by: harness.verifier, .signatureInvalid)
    }

    func testAKidNamingAKeyOfAnotherAlgorithmIsRefused() async {
        let harness = Harness()
        let token = harness.es256.token(
            header: harness.header(harness.es256) { $0["kid"] = .string(harness.edDSA.keyID) },
            payload: harness.payload())
        await assertRefused(token, by: harness.verifier, .unknownKey)
    }

    func testARefreshTokenIsNotAnAccessToken() async {
        let harness = Harness()
        let refreshToken = "prt_" + Base64URL.encode([UInt8](repeating: 7, count: 52))
        await assertRefused(refreshToken, by: harness.verifier, .notAnAccessToken)
        XCTAssertEqual(harness.fetcher.requests, 0)
    }

    func testAnOpaqueSessionTokenIsNotAnAccessToken() async {
        let harness = Harness()
        let opaque = Base64URL.encode([UInt8](repeating: 9, count: 48))
        XCTAssertEqual(opaque.count, 64)
        await assertRefused(opaque, by: harness.verifier, .notAnAccessToken)
        await assertRefused("", by: harness.verifier, .notAnAccessToken)
    }

    func testATypOtherThanAtJWTIsRefused() async {
        let harness = Harness()
        for typ: JSONValue? in ["JWT", "jwt", "at+JWS", nil] {
            let token = harness.es256.token(
                header: harness.header(harness.es256) { $0["typ"] = typ }, payload: harness.payload())
            await assertRefused(token, by: harness.verifier, .wrongType)
        }
    }

    func testAHeaderWithAnEmbeddedKeyOrCriticalExtensionsIsRefused() async {
        let harness = Harness()
        // The attacker's own key, embedded and named, hoping the verifier trusts what the token brings.
        let attacker = TestSigningKey(.es256)
        let embedded = attacker.token(
            header: harness.header(attacker) { $0["jwk"] = attacker.publicKey.json }, payload: harness.payload())
        await assertRefused(embedded, by: harness.verifier, .malformed)
        let critical = harness.es256.token(
            header: harness.header(harness.es256) {
                $0["crit"] = ["exp"]
                $0["exp"] = 1
            }, payload: harness.payload())
        await assertRefused(critical, by: harness.verifier, .malformed)
        let pointed = harness.es256.token(
            header: harness.header(harness.es256) { $0["jku"] = "https://attacker.example/jwks.json" },
            payload: harness.payload())
        await assertRefused(pointed, by: harness.verifier, .malformed)
    }

    func testAnOversizedTokenIsRefusedBeforeAnythingElse() async throws {
        let harness = Harness()
        let padding = String(repeating: "a", count: 3000)
        let large = harness.es256.token(
            header: harness.header(harness.es256), payload: harness.payload { $0["pad"] = .string(padding) })
        XCTAssertGreaterThan(large.utf8.count, AccessTokenFormat.maximumTokenLength)
        await assertRefused(large, by: harness.verifier, .malformed)
        await assertRefused(String(repeating: "x", count: 5000), by: harness.verifier, .malformed)
        XCTAssertEqual(harness.fetcher.requests, 0)
    }

    func testAMissingClaimIsRefused() async {
        let harness = Harness()
        for claim in ["sid", "sub", "exp", "iat", "jti", "auth_time", "client_id", "aud", "iss"] {
            let token = harness.es256.token(
                header: harness.header(harness.es256), payload: harness.payload { $0[claim] = nil })
            await assertRefused(token, by: harness.verifier, .missingClaim)
        }
    }

    func testTruncatedTokensAreRefusedAtEveryLength() async {
        let harness = Harness()
        let token = harness.es256.token(harness.claims())
        let utf8 = Array(token.utf8)
        for length in 0..<utf8.count {
            do {
                _ = try await harness.verifier.verify(String(decoding: utf8[..<length], as: UTF8.self))
                XCTFail("a token cut to \(length) bytes verified")
            } catch {
                XCTAssertNotEqual(error.code, .keySetUnavailable, "at \(length): \(error)")
            }
        }
    }
}
