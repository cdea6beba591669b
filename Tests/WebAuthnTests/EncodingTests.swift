import Encoding
import JSON
import WebAuthn
import XCTest

final class EncodingTests: XCTestCase {
    func testUnpaddedBase64URLHasOneSpellingPerByteString() {
        XCTAssertEqual(Base64URL.decodeUnpadded("-_8"), [0xFB, 0xFF])
        XCTAssertEqual(Base64URL.decodeUnpadded(""), [])
        for other in ["+/8", "-_8=", "+_8", "-/8", "-_9", "-_8A", "-_", "Zg==", "Zg"] {
            XCTAssertNotEqual(Base64URL.decodeUnpadded(other), [0xFB, 0xFF], other)
        }
        XCTAssertNil(Base64URL.decodeUnpadded("Zg=="))
        XCTAssertNil(Base64URL.decodeUnpadded("+/8"))
        XCTAssertNil(Base64URL.decodeUnpadded("-_9"), "non-zero unused bits")
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            XCTAssertEqual(Base64URL.decodeUnpadded(Base64URL.encode(bytes)), bytes)
            XCTAssertNil(
                Base64URL.decodeUnpadded(Base64URL.encodeStandard(bytes).replacingOccurrences(of: "-", with: "+") + "=")
            )
        }
    }

    func testBase64URLAcceptsBothAlphabetsAndOptionalPadding() {
        XCTAssertEqual(Base64URL.decode("-_8"), [0xFB, 0xFF])
        XCTAssertEqual(Base64URL.decode("+/8="), [0xFB, 0xFF])
        XCTAssertEqual(Base64URL.decode("+/8"), [0xFB, 0xFF])
        XCTAssertEqual(Base64URL.decode(""), [])
        XCTAssertEqual(Base64URL.decode("YWJj"), Array("abc".utf8))
        XCTAssertNil(Base64URL.decode("YW=j"))
        XCTAssertNil(Base64URL.decode("Y"))
        XCTAssertNil(Base64URL.decode("YR"))  // non-zero unused bits
        XCTAssertNil(Base64URL.decode("a b"))
        XCTAssertEqual(Base64URL.decode("Zg=="), [0x66])
        XCTAssertEqual(Base64URL.decode("Zm8="), [0x66, 0x6F])
        XCTAssertEqual(Base64URL.decode("xZm8x".dropFirst().dropLast()), [0x66, 0x6F], "a substring")
        XCTAssertNil(Base64URL.decode("Zg="), "padding that does not complete a quantum")
        XCTAssertNil(Base64URL.decode("===="))
        XCTAssertNil(Base64URL.decode("Zg==Zg=="), "padding inside")
        XCTAssertNil(Base64URL.decode("Zh=="), "non-zero unused bits before padding")
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF]), "-_8")
        XCTAssertEqual(Base64URL.encodeStandard([0xFB, 0xFF]), "+/8=")
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
        }
    }

    func testJSONReaderIsStrict() throws {
        XCTAssertEqual(
            try JSONReader.parse(Array(#"{"a":"\u00e9\ud83d\ude00\n","b":[1,-2.5e3,true,null]}"#.utf8))["a"],
            .string("é😀\n"))
        XCTAssertEqual(try JSONReader.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)), .object([:]))
        for bad in [
            #"{"a":1,"a":2}"#, #"{"a":01}"#, "[1,]", #"{"a":"\ud800"}"#, "{} x", "\"\u{01}\"",
            "[" + String(repeating: "[", count: 40),
        ] {
            XCTAssertThrowsError(try JSONReader.parse(Array(bad.utf8)), bad)
        }
        XCTAssertThrowsError(try JSONReader.parse([0x22, 0xC3, 0x28, 0x22]))
    }

    func testAAGUIDText() {
        let aaguid = AAGUID("6d44ba9b-f6ec-2e49-b930-0c8fe920cb73")
        XCTAssertEqual(aaguid?.description, "6d44ba9b-f6ec-2e49-b930-0c8fe920cb73")
        XCTAssertNil(AAGUID("6d44ba9b"))
        XCTAssertEqual(AAGUID.zero.description, "00000000-0000-0000-0000-000000000000")
    }

    func testErrorCodesAreTheGatewayReasons() {
        let reasons = Set(WebAuthnError.Code.allCases.map(\.rawValue))
        for reason in [
            "type_mismatch", "challenge_mismatch", "origin_mismatch", "cross_origin_not_allowed", "rp_id_hash_mismatch",
            "user_present_flag_not_set", "user_verification_required", "backup_state_invalid", "unsupported_algorithm",
            "algorithm_not_allowed", "credential_id_too_long", "attestation_invalid", "attestation_untrusted",
            "signature_invalid", "sign_count_regressed", "user_handle_mismatch", "malformed_cbor",
            "malformed_client_data", "malformed_authenticator_data",
        ] {
            XCTAssertTrue(reasons.contains(reason), reason)
        }
        let error = WebAuthnError(.signatureInvalid, "bad")
        XCTAssertTrue(error.description.hasPrefix("signature_invalid: bad"))
        XCTAssertTrue(error.file.hasSuffix("EncodingTests.swift"))
    }
}
