import AdminAccess
import XCTest

/// What the admin API's listing parameters admit before anything reaches the database.
final class AdminQueryBoundsTests: XCTestCase {
    let id = "0f8e2f5c-4a57-4c5e-9d4e-2a3f1c7b9e10"

    func testACursorNamesAMomentADatabaseTimestampHolds() throws {
        XCTAssertEqual(AccountCursor(text: "1700000000000000_\(id)")?.createdMicroseconds, 1_700_000_000_000_000)
        XCTAssertEqual(AccountCursor(text: "0_\(id)")?.createdMicroseconds, 0)
        let last = AccountCursor.maximumMicroseconds
        XCTAssertEqual(AccountCursor(text: "\(last)_\(id)")?.createdMicroseconds, last)
        // Well-formed 64-bit numbers past year 9999 overflowed Postgres's timestamp range (a 500 before).
        for micros in [
            "\(last + 1)", "9223372036854775806", "9223372036854775807", "9223372036854775808",
            "99999999999999999999",
        ] {
            XCTAssertNil(AccountCursor(text: "\(micros)_\(id)"), micros)
        }
        for bad in ["-1_\(id)", "+1_\(id)", "1_\(id)_1", "1", "_\(id)", "1_not-a-uuid", "1_\(id)\u{0}"] {
            XCTAssertNil(AccountCursor(text: bad), bad)
        }
        XCTAssertEqual(AccountCursor(text: "1700000000123456_\(id)")?.text, "1700000000123456_\(id)")
    }

    func testAnEventTypeIsPlainASCIIWithoutControlCharacters() {
        let types = [
            "audit.sign_in.failed", "audit.admin_token.created", "audit.email.verification_sent", "audit", "a",
            String(repeating: "a", count: 64), "x-y_z.1", "Audit.Session.Revoked",
        ]
        for type in types {
            XCTAssertTrue(AuditEventQuery.isWellFormedType(type), type)
        }
        for type in [
            "", "audit.\u{0}", "audit.\u{0}x", "\u{0}", "audit.\u{7F}", "audit.\n", "audit. x", "audit.é",
            "audit.\u{FFFD}", "audit%00", String(repeating: "a", count: 65), "audit'; --",
        ] {
            XCTAssertFalse(AuditEventQuery.isWellFormedType(type), type.debugDescription)
        }
    }
}
