import Domain
import XCTest

final class EmailLimitKeyTests: XCTestCase {
    func testAnAddressAndTextThatIsNotOneAreKeyedByTheSameRule() {
        XCTAssertEqual(EmailAddress.limitKey("  Ada@Example.COM "), "ada@example.com")
        XCTAssertEqual(EmailAddress.limitKey(" Not An Address "), "not an address")
        XCTAssertEqual(EmailAddress.limitKey("NOT-AN-ADDRESS"), EmailAddress.limitKey("not-an-address"))
        XCTAssertEqual(EmailAddress.limitKey(String(repeating: "A", count: 1000)).count, EmailAddress.maximumLength)
    }
}
