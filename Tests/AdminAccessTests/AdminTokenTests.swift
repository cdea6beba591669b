import AdminAccess
import Crypto
import Foundation
import XCTest

final class AdminTokenTests: XCTestCase {
    struct FixedRandom: RandomSource {
        let byte: UInt8
        func bytes(count: Int) -> [UInt8] { Array(repeating: byte, count: count) }
    }

    func testATokenHasItsFormAndOnlyItsDigestIsKept() throws {
        let token = AdminTokenSecret(random: FixedRandom(byte: 0xAB))
        XCTAssertEqual(token.id, "abababababababab")
        XCTAssertTrue(token.text.hasPrefix("pkadm_abababababababab_"))
        XCTAssertEqual(token.text.utf8.count, AdminTokenSecret.textLength)
        XCTAssertEqual(token.digest, sha256(Array(token.text.utf8)))
        XCTAssertEqual(AdminTokenSecret(presented: token.text), token)
        let random = AdminTokenSecret(random: SecureRandom())
        XCTAssertNotEqual(random.text, AdminTokenSecret(random: SecureRandom()).text)
        XCTAssertEqual(AdminTokenSecret(presented: random.text)?.id, random.id)
    }

    func testAnythingElsePresentedIsNoToken() {
        let token = AdminTokenSecret(random: SecureRandom()).text
        let body = String(token.dropFirst(6))
        let bad: [String] = [
            "", "pkadm_", String(token.dropLast()), token + "A", "xxadm_" + body, "PKADM_" + body,
            "pkadm_ABABABABABABABAB" + String(token.dropFirst(22)),
            String(token.prefix(22)) + "-" + String(token.dropFirst(23)),
            String(token.dropLast()) + "=", String(token.dropLast()) + "é",
        ]
        for bad in bad {
            XCTAssertNil(AdminTokenSecret(presented: bad), bad)
        }
    }

    func testScopesParseStrictly() throws {
        XCTAssertEqual(try AdminScope.parseList("write,read"), [.read, .write])
        XCTAssertEqual(try AdminScope.parseList(" read , erase "), [.read, .erase])
        for bad in ["", "read,", "read,read", "admin", "read;write", String(repeating: "read,", count: 20)] {
            XCTAssertThrowsError(try AdminScope.parseList(bad), bad)
        }
    }

    func testAccessDependsOnRevocationExpiryAndScope() throws {
        let now = Date()
        var token = AdminToken(
            id: "0123456789abcdef", name: "support", scopes: [.read], createdBy: "cli:root", createdAt: now,
            expiresAt: now.addingTimeInterval(60))
        XCTAssertEqual(token.check(.read, at: now), .allowed)
        XCTAssertEqual(token.check(.write, at: now), .forbidden(missing: .write))
        XCTAssertEqual(token.check(.erase, at: now), .forbidden(missing: .erase))
        XCTAssertEqual(token.check(.read, at: now.addingTimeInterval(60)), .refused(.expired))
        token.revokedAt = now
        XCTAssertEqual(token.check(.read, at: now), .refused(.revoked))
    }

    func testNamesAreBounded() throws {
        XCTAssertEqual(try AdminToken.validateName("  on-call  "), "on-call")
        for bad in ["", "   ", String(repeating: "n", count: 65), "tab\there", "nl\n"] {
            XCTAssertThrowsError(try AdminToken.validateName(bad), bad)
        }
        XCTAssertEqual(try AdminToken.validateName(String(repeating: "n", count: 64)).count, 64)
    }
}
