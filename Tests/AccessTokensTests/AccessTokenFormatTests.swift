import AccessTokens
import Crypto
import Encoding
import JSON
import SessionIssuance
import XCTest

/// The token format: what issuers write and what every verifier refuses before a signature is even checked.
final class AccessTokenFormatTests: XCTestCase {
    static let claims = AccessTokenClaims(
        issuer: "https://auth.example.com", subject: "acc", audience: "https://auth.example.com",
        clientID: "example.com",
        expiresAt: 1_000_600, issuedAt: 1_000_000, tokenID: "jti-1", sessionID: "sid-1", authenticatedAt: 999_000,
        methods: ["pop", "user"])

    /// A compact token of `header` and `payload` JSON with a 64-byte signature of zeros.
    func token(header: String, payload: String, signature: [UInt8] = Array(repeating: 0, count: 64)) -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "."
            + Base64URL.encode(signature)
    }

    var payload: String {
        let input = AccessTokenFormat.signingInput(claims: Self.claims, algorithm: .es256, keyID: "k1")
        let part = String(decoding: input, as: UTF8.self).split(separator: ".")[1]
        return String(decoding: Base64URL.decodeUnpadded(part)!, as: UTF8.self)
    }

    func testTheSigningInputHasTheProfilesHeaderAndEveryClaim() throws {
        let input = AccessTokenFormat.signingInput(claims: Self.claims, algorithm: .es256, keyID: "k1")
        let parts = String(decoding: input, as: UTF8.self).split(separator: ".")
        XCTAssertEqual(parts.count, 2)
        let header = try JSONReader.parse(Base64URL.decodeUnpadded(parts[0])!)
        XCTAssertEqual(header, ["alg": "ES256", "typ": "at+jwt", "kid": "k1"])
        let payload = try XCTUnwrap(JSONReader.parse(Base64URL.decodeUnpadded(parts[1])!).objectValue)
        XCTAssertEqual(
            payload.keys, ["iss", "sub", "aud", "client_id", "exp", "iat", "jti", "sid", "auth_time", "amr"])
        XCTAssertEqual(payload["amr"], ["pop", "user"])
        XCTAssertEqual(payload["exp"], 1_000_600)
        let parsed = try AccessTokenFormat.parse(
            AccessTokenFormat.assemble(signingInput: input, signature: Array(repeating: 1, count: 64)),
            allowing: [.es256])
        XCTAssertEqual(parsed.claims, Self.claims)
        XCTAssertEqual(parsed.keyID, "k1")
        XCTAssertEqual(parsed.signingInput, input)
    }

    func testHeadersOfOtherAlgorithmsTypesOrExtrasAreRefused() {
        let cases: [(String, AccessTokenError.Code)] = [
            (#"{"alg":"none","typ":"at+jwt","kid":"k1"}"#, .algorithmNotAllowed),
            (#"{"alg":"HS256","typ":"at+jwt","kid":"k1"}"#, .algorithmNotAllowed),
            (#"{"alg":"RS256","typ":"at+jwt","kid":"k1"}"#, .algorithmNotAllowed),
            (#"{"alg":"EdDSA","typ":"at+jwt","kid":"k1"}"#, .algorithmNotAllowed),
            (#"{"typ":"at+jwt","kid":"k1"}"#, .algorithmNotAllowed),
            (#"{"alg":"ES256","typ":"JWT","kid":"k1"}"#, .wrongType),
            (#"{"alg":"ES256","kid":"k1"}"#, .wrongType),
            (#"{"alg":"ES256","typ":"at+jwt"}"#, .unknownKey),
            (#"{"alg":"ES256","typ":"at+jwt","kid":""}"#, .unknownKey),
            (#"{"alg":"ES256","typ":"at+jwt","kid":"k1","crit":["exp"]}"#, .malformed),
            (#"{"alg":"ES256","typ":"at+jwt","kid":"k1","jwk":{}}"#, .malformed),
            (#"{"alg":"ES256","typ":"at+jwt","kid":"k1","jku":"https://evil"}"#, .malformed),
            (#"["alg"]"#, .malformed),
        ]
        for (header, code) in cases {
            XCTAssertThrowsError(
                try AccessTokenFormat.parse(token(header: header, payload: payload), allowing: [.es256])
            ) {
                XCTAssertEqual(($0 as? AccessTokenError)?.code, code, header)
            }
        }
    }

    func testShapesThatAreNotACompactTokenAreMalformed() {
        let good = token(header: #"{"alg":"ES256","typ":"at+jwt","kid":"k1"}"#, payload: payload)
        let cases = [
            "", "a.b", "a.b.c.d", "..", good + "x!", String(repeating: "a", count: 5000) + ".b.c",
            "prt_" + String(repeating: "A", count: 70), String(repeating: "A", count: 64),
        ]
        for text in cases {
            XCTAssertThrowsError(try AccessTokenFormat.parse(text, allowing: [.es256]), text.prefix(20).description) {
                XCTAssertTrue([.malformed, .signatureInvalid].contains(($0 as? AccessTokenError)?.code), "\($0)")
            }
        }
        // A signature of the wrong length is refused before any key is looked at.
        let short = token(header: #"{"alg":"ES256","typ":"at+jwt","kid":"k1"}"#, payload: payload, signature: [1, 2])
        XCTAssertThrowsError(try AccessTokenFormat.parse(short, allowing: [.es256])) {
            XCTAssertEqual(($0 as? AccessTokenError)?.code, .signatureInvalid)
        }
        XCTAssertFalse(AccessTokenFormat.looksLikeJWT("prt_" + String(repeating: "A", count: 70)))
        XCTAssertTrue(AccessTokenFormat.looksLikeJWT(good))
    }

    func testEveryRequiredClaimMustBeThereWithItsType() {
        let header = #"{"alg":"ES256","typ":"at+jwt","kid":"k1"}"#
        for claim in ["iss", "sub", "aud", "client_id", "exp", "iat", "jti", "sid", "auth_time"] {
            var object = try! JSONReader.parse(Array(payload.utf8)).objectValue!
            object[claim] = nil
            let without = String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
            XCTAssertThrowsError(
                try AccessTokenFormat.parse(token(header: header, payload: without), allowing: [.es256])
            ) {
                XCTAssertEqual(($0 as? AccessTokenError)?.code, .missingClaim, claim)
            }
            object[claim] = ["exp", "iat", "auth_time"].contains(claim) ? "soon" : 42
            let mistyped = String(decoding: JSONValue.object(object).serialized(), as: UTF8.self)
            XCTAssertThrowsError(
                try AccessTokenFormat.parse(token(header: header, payload: mistyped), allowing: [.es256]))
        }
    }

    func testClaimChecksAllowTheLeewayAndNoMore() throws {
        func check(
            _ claims: AccessTokenClaims, now: Int64, issuer: String = "https://auth.example.com",
            audience: String = "https://auth.example.com"
        ) -> AccessTokenError.Code? {
            do {
                try AccessTokenFormat.check(
                    claims, expecting: .init(issuer: issuer, audience: audience, now: now, leeway: 30))
                return nil
            } catch { return error.code }
        }
        XCTAssertNil(check(Self.claims, now: 1_000_100))
        XCTAssertNil(check(Self.claims, now: 1_000_629), "within the leeway after exp")
        XCTAssertEqual(check(Self.claims, now: 1_000_630), .expired)
        XCTAssertEqual(check(Self.claims, now: 999_969), .notYetValid, "issued in the future beyond the leeway")
        XCTAssertNil(check(Self.claims, now: 999_970))
        var later = Self.claims
        later.notBefore = 1_000_200
        XCTAssertEqual(check(later, now: 1_000_100), .notYetValid)
        XCTAssertNil(check(later, now: 1_000_170))
        XCTAssertEqual(check(Self.claims, now: 1_000_100, issuer: "https://other"), .wrongIssuer)
        XCTAssertEqual(check(Self.claims, now: 1_000_100, audience: "https://other"), .wrongAudience)
        var many = Self.claims
        many.audience = "https://a https://auth.example.com"
        XCTAssertNil(check(many, now: 1_000_100), "one of several audiences")
    }

    func testJSONWebKeysRoundTripAndSkipKeysOfOtherKinds() throws {
        let key = try XCTUnwrap(
            JSONWebKey(
                keyID: "k", algorithm: .es256, x: Array(repeating: 1, count: 32), y: Array(repeating: 2, count: 32)))
        let set = JSONWebKey.keySet([key]).serialized()
        XCTAssertEqual(JSONWebKey.keys(inKeySet: set), [key])
        let mixed =
            Array(#"{"keys":[{"kty":"RSA","kid":"r","n":"AQ","e":"AQAB"},{"kty":"oct","kid":"s","k":"c2VjcmV0"},"#.utf8)
            + Array(String(decoding: key.json.serialized(), as: UTF8.self).utf8) + Array("]}".utf8)
        XCTAssertEqual(JSONWebKey.keys(inKeySet: mixed), [key], "RSA and symmetric keys are skipped")
        XCTAssertNil(JSONWebKey(keyID: "k", algorithm: .es256, x: [1], y: [2]))
        XCTAssertNil(JSONWebKey(keyID: "", algorithm: .edDSA, x: Array(repeating: 1, count: 32), y: []))
        XCTAssertNil(JSONWebKey.keys(inKeySet: Array("[]".utf8)))
    }
}
