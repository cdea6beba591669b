import Encoding
import JSON
import XCTest

final class JSONWriterTests: XCTestCase {
    func testMembersKeepTheOrderGiven() {
        let value: JSONValue = ["z": 1, "a": ["y": true, "b": nil], "m": [1, "two", 3.5]]
        XCTAssertEqual(JSONWriter.string(value), #"{"z":1,"a":{"y":true,"b":null},"m":[1,"two",3.5]}"#)
    }

    func testStringsAreEscaped() {
        let text = "quote\" backslash\\ newline\n tab\t cr\r bell\u{07} del\u{7F} é 😀 </script>"
        let written = JSONWriter.serialize(.string(text))
        XCTAssertEqual(
            String(decoding: written, as: UTF8.self),
            #""quote\" backslash\\ newline\n tab\t cr\r bell\u0007 del\u007f é 😀 </script>""#)
        XCTAssertEqual(try JSONReader.parse(written), .string(text))
    }

    func testNumbers() {
        XCTAssertEqual(JSONWriter.string(.integer(1_798_000_000_000 as Int64)), "1798000000000")
        XCTAssertEqual(JSONWriter.string(-257), "-257")
        XCTAssertEqual(JSONWriter.string(0.25), "0.25")
        XCTAssertEqual(JSONWriter.string(.number(.nan)), "null")
        XCTAssertEqual(JSONWriter.string(.number(.infinity)), "null")
    }

    func testRoundTripThroughTheReaderKeepsOrder() throws {
        let text = #"{"b":[{"d":"x","c":false}],"a":-1.5e-7}"#
        let value = try JSONReader.parse(Array(text.utf8))
        XCTAssertEqual(value.objectValue?.keys, ["b", "a"])
        XCTAssertEqual(try JSONReader.parse(value.serialized()), value)
        XCTAssertEqual(value["b"]?.arrayValue?.first?.objectValue?.keys, ["d", "c"])
    }

    func testNumbersBeyondADoubleAreRefused() {
        XCTAssertThrowsError(try JSONReader.parse(Array("21e1222".utf8)))
        XCTAssertThrowsError(try JSONReader.parse(Array("[-1e400]".utf8)))
        XCTAssertEqual(try JSONReader.parse(Array("1e-400".utf8)), 0)
    }

    func testObjectEqualityIgnoresOrderAndSettingReplacesInPlace() {
        var object: JSONObject = ["a": 1, "b": 2]
        XCTAssertEqual(object, ["b": 2, "a": 1])
        object["a"] = 3
        object["c"] = 4
        XCTAssertEqual(object.keys, ["a", "b", "c"])
        object["b"] = nil
        XCTAssertEqual(object.keys, ["a", "c"])
        XCTAssertEqual(object["c"], 4)
        XCTAssertFalse(object.insertNew("a", 5))
    }

    func testBase64URLRoundTrip() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            let text = Base64URL.encode(bytes)
            XCTAssertFalse(text.contains("=") || text.contains("+") || text.contains("/"))
            XCTAssertEqual(Base64URL.decode(text), bytes)
        }
    }
}

final class JSONObjectTests: XCTestCase {
    /// Small objects are scanned and large ones indexed; both must find, replace, remove and refuse duplicates alike,
    /// including across the size where the index is built and dropped.
    func testLookupsReplacementsAndRemovalsAtEverySize() {
        for size in [0, 1, 5, 15, 16, 17, 40, 300] {
            var object = JSONObject()
            for index in 0..<size { XCTAssertTrue(object.insertNew("k\(index)", .integer(index))) }
            XCTAssertEqual(object.count, size)
            for index in 0..<size {
                XCTAssertEqual(object["k\(index)"], .integer(index), "size \(size)")
                XCTAssertFalse(object.insertNew("k\(index)", .null), "duplicate at size \(size)")
            }
            XCTAssertNil(object["missing"])
            if size > 2 {
                object["k1"] = .string("replaced")
                XCTAssertEqual(object.keys[1], "k1", "replaced in place")
                XCTAssertEqual(object["k1"], .string("replaced"))
                object["k0"] = nil
                XCTAssertEqual(object.count, size - 1)
                XCTAssertNil(object["k0"])
                XCTAssertEqual(object["k\(size - 1)"], .integer(size - 1), "positions follow the removal")
                XCTAssertEqual(object.keys.first, "k1")
                object["k0"] = .boolean(true)
                XCTAssertEqual(object.keys.last, "k0", "a new key goes last")
            }
        }
    }

    func testTheParserRefusesADuplicateAmongThousandsOfKeys() {
        let members = (0..<5_000).map { "\"key\($0)\":\($0)" }
        XCTAssertNoThrow(try JSONReader.parse(Array(("{" + members.joined(separator: ",") + "}").utf8)))
        let duplicated = members + ["\"key4321\":0"]
        XCTAssertThrowsError(try JSONReader.parse(Array(("{" + duplicated.joined(separator: ",") + "}").utf8)))
    }
}
