import Encoding
import Foundation
import PasskeyProviders
import XCTest

final class PasskeyProviderCatalogTests: XCTestCase {
    private let svg =
        "data:image/svg+xml;base64,"
        + Base64URL.encodeStandard(Array("<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8))

    private func catalog(_ json: String) throws -> PasskeyProviderCatalog {
        try PasskeyProviderCatalog(json: Array(json.utf8))
    }

    private func refusal(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            _ = try catalog(json)
            XCTFail("accepted \(json.prefix(80))", file: file, line: line)
            return nil
        } catch { return String(describing: error) }
    }

    func testTheShippedListNamesTheBigProvidersAndHasTheirIcons() throws {
        let shipped = try PasskeyProviderCatalog.shipped.get()
        XCTAssertEqual(shipped.count, 52)
        let google = try XCTUnwrap(shipped.provider(forText: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"))
        XCTAssertEqual(google.name, "Google Password Manager")
        XCTAssertEqual(google.lightIcon?.mediaType, "image/svg+xml")
        XCTAssertTrue(String(decoding: google.darkIcon?.bytes ?? [], as: UTF8.self).contains("<svg"))
        XCTAssertEqual(shipped.provider(forText: "fbfc3007-154e-4ecc-8c0b-6e020557d7bd")?.name, "Apple Passwords")
        XCTAssertEqual(
            shipped.provider(forText: "FBFC3007-154E-4ECC-8C0B-6E020557D7BD")?.name, "Apple Passwords",
            "the text form is read in either case")
        XCTAssertNil(shipped.provider(forText: "00000000-0000-0000-0000-000000000000"), "no AAGUID names nobody")
        XCTAssertNil(shipped.provider(forText: "not-a-uuid"))
    }

    func testAnEmptyListIsNoNamesNotAnError() throws {
        let empty = try catalog("{}")
        XCTAssertEqual(empty.count, 0)
        XCTAssertNil(empty.provider(forText: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"))
    }

    func testAnEntryWithoutIconsHasANameOnly() throws {
        let list = try catalog(#"{"12345678-1234-1234-1234-123456789abc": {"name": "Vault", "icon_light": "\#(svg)"}}"#)
        let provider = try XCTUnwrap(list.provider(forText: "12345678-1234-1234-1234-123456789abc"))
        XCTAssertEqual(provider.name, "Vault")
        XCTAssertNotNil(provider.icon(.light))
        XCTAssertNil(provider.icon(.dark))
    }

    func testMalformedListsAreRefusedWithTheReason() {
        XCTAssertTrue(refusal("[]")?.contains("must be a JSON object") == true)
        XCTAssertTrue(refusal("{")?.contains("not valid JSON") == true)
        XCTAssertTrue(refusal(#"{"not-a-uuid": {"name": "x"}}"#)?.contains("lowercase AAGUID") == true)
        XCTAssertTrue(
            refusal(#"{"12345678-1234-1234-1234-123456789ABC": {"name": "x"}}"#)?.contains("lowercase AAGUID") == true)
        XCTAssertTrue(refusal(#"{"12345678-1234-1234-1234-123456789abc": "x"}"#)?.contains("must be an object") == true)
        XCTAssertTrue(refusal(#"{"12345678-1234-1234-1234-123456789abc": {}}"#)?.contains("needs a name") == true)
        XCTAssertNotNil(refusal(#"{"12345678-1234-1234-1234-123456789abc": {"name": " padded "}}"#))
        XCTAssertNotNil(refusal(#"{"12345678-1234-1234-1234-123456789abc": {"name": "a\u0007b"}}"#))
        XCTAssertNotNil(
            refusal(#"{"12345678-1234-1234-1234-123456789abc": {"name": "\#(String(repeating: "n", count: 129))"}}"#))
        XCTAssertTrue(
            refusal(#"{"12345678-1234-1234-1234-123456789abc": {"name": "x", "url": "y"}}"#)?.contains("unknown member")
                == true)
        for icon in [
            "https://example.com/icon.svg", "data:text/html;base64,PHNjcmlwdD4=", "data:image/svg+xml,<svg/>",
            "data:image/svg+xml;base64,!!!", "data:image/svg+xml;base64,",
        ] {
            XCTAssertTrue(
                refusal(#"{"12345678-1234-1234-1234-123456789abc": {"name": "x", "icon_dark": "\#(icon)"}}"#)?
                    .contains("invalid icon_dark") == true, icon)
        }
    }

    func testLimitsOnSizeAndCount() {
        let big =
            "data:image/png;base64,"
            + Base64URL.encodeStandard([UInt8](repeating: 7, count: ProviderIcon.maximumBytes + 1))
        XCTAssertNil(ProviderIcon(dataURI: big), "an icon over 64 KiB")
        let fits =
            "data:image/png;base64," + Base64URL.encodeStandard([UInt8](repeating: 7, count: ProviderIcon.maximumBytes))
        XCTAssertEqual(ProviderIcon(dataURI: fits)?.bytes.count, ProviderIcon.maximumBytes)
        let tooMany = (0...PasskeyProviderCatalog.maximumEntries).map { index in
            let hex = String(format: "%012x", index)
            return "\"00000000-0000-0000-0000-\(hex)\": {\"name\": \"p\"}"
        }.joined(separator: ",")
        XCTAssertTrue(refusal("{" + tooMany + "}")?.contains("more than") == true)
        let huge = [UInt8](repeating: UInt8(ascii: " "), count: PasskeyProviderCatalog.maximumFileBytes + 1)
        XCTAssertThrowsError(try PasskeyProviderCatalog(json: huge))
    }
}
