import Encoding
import Foundation
import GatewayCore
import JSON
import XCTest

/// `openapi.json` against the gateway's ``FieldRules``: each schema's pattern and lengths accept exactly the strings
/// the gateway accepts, on hand-picked edge cases and on thousands of strings drawn (with a fixed seed) from the
/// characters that matter: every whitespace and control character, `@`, base64 of both alphabets, padding, letters
/// and scalars beyond ASCII.
final class FieldRuleTests: XCTestCase {
    let document: JSONValue = (try? JSONReader.parse(OpenAPIDocument.bytes)) ?? .null

    /// A components schema with its `pattern` (anchors removed, for a whole match) and lengths.
    struct StringSchema {
        let regex: Regex<AnyRegexOutput>
        let minLength: Int
        let maxLength: Int

        func accepts(_ text: String) -> Bool {
            let count = text.unicodeScalars.count
            return count >= minLength && count <= maxLength && text.wholeMatch(of: regex) != nil
        }
    }

    func schema(_ name: String, file: StaticString = #filePath, line: UInt = #line) throws -> StringSchema {
        let schema = try XCTUnwrap(document["components"]?["schemas"]?[name], name, file: file, line: line)
        XCTAssertEqual(schema["type"], "string", name, file: file, line: line)
        var pattern = try XCTUnwrap(schema["pattern"]?.stringValue, name, file: file, line: line)
        // JSON Schema patterns are unanchored searches; each of ours is anchored at both ends on purpose.
        XCTAssertTrue(pattern.hasPrefix("^") && pattern.hasSuffix("$"), name, file: file, line: line)
        pattern = String(pattern.dropFirst().dropLast())
        return StringSchema(
            regex: try Regex(pattern).matchingSemantics(.unicodeScalar),
            minLength: schema["minLength"]?.numberValue.map { Int($0) } ?? 0,
            maxLength: schema["maxLength"]?.numberValue.map { Int($0) } ?? Int.max)
    }

    /// A deterministic source of test strings.
    struct Strings {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        mutating func string(from alphabet: [Unicode.Scalar], lengths: ClosedRange<Int>) -> String {
            let count = lengths.lowerBound + Int(next() % UInt64(lengths.count))
            var scalars = String.UnicodeScalarView()
            for _ in 0..<count { scalars.append(alphabet[Int(next() % UInt64(alphabet.count))]) }
            return String(scalars)
        }
    }

    static let whitespace: [Unicode.Scalar] = [
        "\t", "\n", "\u{0B}", "\u{0C}", "\r", " ", "\u{85}", "\u{A0}", "\u{1680}", "\u{2000}", "\u{200A}", "\u{2028}",
        "\u{2029}", "\u{202F}", "\u{205F}", "\u{3000}",
    ]
    static let controls: [Unicode.Scalar] = ["\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}"]
    static let others: [Unicode.Scalar] = [
        "a", "Z", "0", ".", "-", "_", "+", "é", "\u{130}", "あ", "\u{FEFF}", "\u{200B}", "\u{1F600}", "\u{301}",
    ]

    func testEmailAddressPatternIsTheGatewaysRule() throws {
        let email = try schema("EmailAddress")
        XCTAssertEqual(email.maxLength, FieldRules.emailMaximumLength)
        let cases = [
            "a@b", " a@b ", "\u{3000}a@b\t", "Ada.Lovelace@Example.COM", "é@ü.de", "\u{FEFF}@b", "a\u{200B}@b",
            "", "a", "@b", "a@", "a@b@c", "a b@c", "a@b c", "a\u{A0}b@c", "\u{A0}@b", "a\u{1}@b", "a@b\u{7F}",
            "a@b\u{85}", "a\u{85}b@c", "\u{0}a@b", String(repeating: "a", count: 252) + "@b",
            String(repeating: "a", count: 253) + "@b", " " + String(repeating: "a", count: 251) + "@b",
            String(repeating: "é", count: 252) + "@b",
        ]
        for text in cases { XCTAssertEqual(email.accepts(text), FieldRules.isEmail(text), "\(text.debugDescription)") }
        var strings = Strings(state: 18)
        let alphabet =
            Self.whitespace + Self.controls + Self.others + ["@", "@"] + Array("abcdefghijklmnop".unicodeScalars)
        var accepted = 0
        for _ in 0..<20_000 {
            let text = strings.string(from: alphabet, lengths: 0...8)
            XCTAssertEqual(email.accepts(text), FieldRules.isEmail(text), "\(text.debugDescription)")
            if FieldRules.isEmail(text) { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 200, "the drawn strings reach both sides of the rule")
    }

    func testDisplayNamePatternIsTheGatewaysRule() throws {
        let name = try schema("DisplayName")
        XCTAssertEqual(name.minLength, 1)
        XCTAssertEqual(name.maxLength, FieldRules.displayNameMaximumLength)
        let cases = [
            "Ada", " Ada ", "", " ", "\u{3000}", "\u{FEFF}", "a\u{2028}b", "\u{2028}", "bell\u{7}", "\u{9F}x",
            "\u{85}", String(repeating: "あ", count: 128), String(repeating: "あ", count: 129),
        ]
        for text in cases {
            XCTAssertEqual(name.accepts(text), FieldRules.isDisplayName(text), "\(text.debugDescription)")
        }
        var strings = Strings(state: 128)
        let alphabet = Self.whitespace + Self.whitespace + Self.controls + Self.others
        for _ in 0..<20_000 {
            let text = strings.string(from: alphabet, lengths: 0...5)
            XCTAssertEqual(name.accepts(text), FieldRules.isDisplayName(text), "\(text.debugDescription)")
        }
    }

    func testBase64URLPatternIsWhatTheDecoderAccepts() throws {
        let base64 = try schema("Base64URL")
        let credentialID = try schema("CredentialID")
        XCTAssertEqual(credentialID.minLength, Base64URL.encode([0]).count)
        XCTAssertEqual(credentialID.maxLength, Base64URL.encode([UInt8](repeating: 0, count: 1023)).count)
        let alphabet =
            Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/".unicodeScalars)
            + ["=", "=", "=", "A", "Q", "g", "w", "E", "*", " ", "\n", "é"]
        var strings = Strings(state: 4648)
        var decodable = 0
        for _ in 0..<50_000 {
            let text = strings.string(from: alphabet, lengths: 0...9)
            let decoded = Base64URL.decode(text)
            XCTAssertEqual(base64.accepts(text), decoded != nil, "\(text.debugDescription)")
            XCTAssertEqual(
                credentialID.accepts(text), decoded.map { FieldRules.credentialIDLengths.contains($0.count) } ?? false,
                "\(text.debugDescription)")
            if decoded != nil { decodable += 1 }
        }
        XCTAssertGreaterThan(decodable, 2_000)
        for count in [0, 1, 2, 3, 1022, 1023, 1024] {
            let bytes = [UInt8](repeating: 0xFF, count: count)
            for text in [Base64URL.encode(bytes), Base64URL.encodeStandard(bytes)] {
                XCTAssertEqual(credentialID.accepts(text), FieldRules.credentialIDLengths.contains(count), "\(count)")
            }
        }
    }

    func testUUIDPatternIsTheGatewaysRule() throws {
        let uuid = try schema("UUID")
        XCTAssertEqual(document["components"]?["schemas"]?["UUID"]?["format"], "uuid")
        let cases = [
            "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c", "3F2A1C9E-5B7D-4C1E-9A3B-6D8E0F1A2B3C",
            "3f2a1c9e5b7d4c1e9a3b6d8e0f1a2b3c", "{3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c}",
            "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3", "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3cd",
            "3f2a1c9e-5b7d-4c1e-9a3b_6d8e0f1a2b3c", "g f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c", "",
        ]
        for text in cases { XCTAssertEqual(uuid.accepts(text), FieldRules.isUUID(text), text) }
        var strings = Strings(state: 36)
        let alphabet = Array("0123456789abcdefABCDEF-".unicodeScalars) + ["g", " "]
        for _ in 0..<5_000 {
            var text = strings.string(from: alphabet, lengths: 36...36)
            if strings.next() % 2 == 0 {
                // Mostly well placed hyphens, so both sides of the rule are reached.
                var scalars = Array(text.unicodeScalars)
                for index in [8, 13, 18, 23] { scalars[index] = "-" }
                text = String(String.UnicodeScalarView(scalars))
            }
            XCTAssertEqual(uuid.accepts(text), FieldRules.isUUID(text), text)
        }
    }

    func testPasswordAndTransportSchemasAreTheGatewaysRules() throws {
        let schemas = try XCTUnwrap(document["components"]?["schemas"])
        let password = try XCTUnwrap(schemas["PasswordAccountRequest"]?["properties"]?["password"])
        XCTAssertEqual(password["minLength"]?.numberValue, Double(FieldRules.passwordLengths.lowerBound))
        XCTAssertEqual(password["maxLength"]?.numberValue, Double(FieldRules.passwordLengths.upperBound))
        XCTAssertNil(password["pattern"], "any character may be in a password")
        XCTAssertLessThanOrEqual(FieldRules.passwordLengths.upperBound * 4, 1024, "the hasher takes 1,024 bytes")
        let transport = try XCTUnwrap(schemas["Transports"]?["items"]?["pattern"]?.stringValue)
        let regex = try Regex(String(transport.dropFirst().dropLast())).matchingSemantics(.unicodeScalar)
        for text in ["internal", "smart-card", "", "é", "a\u{0}", "\u{9F}", "\t"] {
            XCTAssertEqual(text.wholeMatch(of: regex) != nil, FieldRules.isTransport(text), text.debugDescription)
        }
    }
}
