import GatewayCore
import XCTest

/// The recovery routes' code shapes in `openapi.json` against the gateway's own checks.
extension FieldRuleTests {
    func testEmailCodeSchemaIsTheGatewaysRule() throws {
        let schema = try schema("EmailCode")
        var strings = Strings(state: 16)
        let alphabet: [Unicode.Scalar] = Array("0123456789a ".unicodeScalars) + ["\u{0660}", "\u{FF11}"]
        var samples = ["01234567", "1234567", "123456789", "", "0123456a", "\u{0660}1234567"]
        for _ in 0..<3000 { samples.append(strings.string(from: alphabet, lengths: 6...10)) }
        for text in samples {
            XCTAssertEqual(schema.accepts(text), FieldRules.isEmailCode(text), "\(text.debugDescription)")
        }
    }

    func testRecoveryCodeSchemaIsTheGatewaysRule() throws {
        let schema = try schema("RecoveryCode")
        var strings = Strings(state: 17)
        let alphabet: [Unicode.Scalar] =
            Array("0189AHJKMNPTVZahjzIiLlOoUu- _".unicodeScalars) + ["\u{DF}", "\u{131}", "\u{FF21}", "\t"]
        var samples = [
            "ABCD-EFGH-JKMN-PQRS", "abcd efgh jkmn pqrs", "ABCDEFGHJKMNPQRS", "ABCD-EFGH-JKMN-PQR",
            "UUUU-0000-0000-0000",
            "ooooIIIIllll0000", "ß000-0000-0000-000", String(repeating: "-", count: 48) + "0000000000000000",
        ]
        for _ in 0..<5000 { samples.append(strings.string(from: alphabet, lengths: 12...24)) }
        for text in samples {
            XCTAssertEqual(schema.accepts(text), FieldRules.isRecoveryCode(text), "\(text.debugDescription)")
        }
    }
}
