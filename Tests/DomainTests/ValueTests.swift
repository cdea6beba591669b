import Domain
import XCTest

final class ValueTests: XCTestCase {
    func testEmailsAreTrimmedAndCompareCaseInsensitively() {
        let email = EmailAddress("  Ada.Lovelace@Example.COM \n")
        XCTAssertEqual(email?.address, "Ada.Lovelace@Example.COM")
        XCTAssertEqual(email?.normalized, "ada.lovelace@example.com")
        XCTAssertEqual(EmailAddress("ADA@example.com")?.normalized, EmailAddress("ada@EXAMPLE.com ")?.normalized)
    }

    func testMalformedEmailsAreRejected() {
        for raw in [
            "", "   ", "ada", "@example.com", "ada@", "a@b@c", "ada lovelace@example.com", "a\u{0}@b.c",
            String(repeating: "a", count: 250) + "@b.co",
        ] {
            XCTAssertNil(EmailAddress(raw), raw)
        }
        // The limit counts characters (as the database's char_length does), before and after lowercasing.
        let local = String(repeating: "é", count: 243)
        XCTAssertEqual(EmailAddress(local + "@example.co")?.address.unicodeScalars.count, 254)
        XCTAssertNil(EmailAddress(local + "@example.com"))
        XCTAssertNotNil(EmailAddress(String(repeating: "\u{130}", count: 121) + "@example.co"))
        XCTAssertNil(EmailAddress(String(repeating: "\u{130}", count: 122) + "@example.co"), "255 once lowercased")
    }

    func testDisplayNamesAreTrimmedAndBounded() {
        XCTAssertEqual(DisplayName("  Ada  ")?.value, "Ada")
        XCTAssertNil(DisplayName("   "))
        XCTAssertNil(DisplayName("bell\u{7}"))
        XCTAssertNotNil(DisplayName(String(repeating: "あ", count: 128)))
        XCTAssertNil(DisplayName(String(repeating: "あ", count: 129)))
    }

    func testIdentifierLengthLimits() {
        XCTAssertNil(CredentialID([]))
        XCTAssertNotNil(CredentialID([UInt8](repeating: 1, count: 1023)))
        XCTAssertNil(CredentialID([UInt8](repeating: 1, count: 1024)))
        XCTAssertNil(UserHandle([]))
        XCTAssertNotNil(UserHandle([UInt8](repeating: 1, count: 64)))
        XCTAssertNil(UserHandle([UInt8](repeating: 1, count: 65)))
    }

    func testSessionLiveness() {
        let now = Date()
        var session = AuthenticationSession(
            id: .random(), accountID: .random(), tokenDigest: [], authenticationMethod: .password, createdAt: now,
            expiresAt: now.addingTimeInterval(60), revokedAt: nil)
        XCTAssertTrue(session.isLive(at: now))
        XCTAssertFalse(session.isLive(at: now.addingTimeInterval(60)))
        session.revokedAt = now
        XCTAssertFalse(session.isLive(at: now))
    }
}
