import AccountRecovery
import Crypto
import Domain
import Foundation
import XCTest

/// Bytes from a fixed list, then zeros: drives the generators through chosen values.
struct ScriptedRandom: RandomSource {
    let script: [UInt8]
    let position = LockedCounter()

    func bytes(count: Int) -> [UInt8] {
        (0..<count).map { _ in
            let index = position.next()
            return index < script.count ? script[index] : 0
        }
    }
}

final class LockedCounter: @unchecked Sendable {
    // Only the test's own thread calls it; the lock keeps it correct anyway.
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value - 1
    }
}

final class OneTimeCodeTests: XCTestCase {
    func testCodesAreEightDigitsAndRejectTheBiasedTail() {
        // 0xFFFFFFFF is at or above the largest multiple of 10^8 below 2^32: drawn again, then 0x00000001.
        let random = ScriptedRandom(script: [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1])
        XCTAssertEqual(OneTimeCodes.generate(random: random), "00000001")
        for _ in 0..<200 {
            let code = OneTimeCodes.generate(random: SecureRandom())
            XCTAssertTrue(OneTimeCodes.isWellFormed(code), code)
        }
    }

    func testShapeIsExactlyEightASCIIDigits() {
        for bad in ["", "1234567", "123456789", "1234567a", "١٢٣٤٥٦٧٨", " 12345678", "1234-5678"] {
            XCTAssertFalse(OneTimeCodes.isWellFormed(bad), bad)
        }
        XCTAssertTrue(OneTimeCodes.isWellFormed("01234567"))
    }

    func testOnlyASaltedDigestIsKeptAndOnlyTheRightCodeMatches() {
        let target = RecoveryTarget(
            accountID: AccountID(UUID()), emailID: UUID(), address: "ada@example.com", verified: true,
            displayName: "Ada")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let delivery = OneTimeCodes.delivery(for: target, purpose: .recovery, random: SecureRandom(), now: now)
        guard let code = delivery.message.code else { return XCTFail("the message carries the code") }
        XCTAssertEqual(delivery.code.salt.count, 16)
        XCTAssertNotEqual(delivery.code.codeDigest, sha256(Array(code.utf8)), "salted")
        XCTAssertTrue(OneTimeCodes.matches(code, delivery.code))
        let wrong = String(code.dropLast()) + (code.hasSuffix("0") ? "1" : "0")
        XCTAssertFalse(OneTimeCodes.matches(wrong, delivery.code))
        XCTAssertEqual(delivery.code.expiresAt.timeIntervalSince(now), 600)
        XCTAssertEqual(delivery.message.template, .recoveryCode)
        XCTAssertEqual(delivery.code.emailID, target.emailID)
    }
}

final class RecoveryCodeTests: XCTestCase {
    func testTenCodesInFourGroupsThatNormalizeAndMatchOnce() {
        let accountID = AccountID(UUID())
        let codes = RecoveryCodes.generate(random: SecureRandom())
        XCTAssertEqual(codes.count, 10)
        XCTAssertEqual(Set(codes).count, 10)
        for code in codes {
            XCTAssertEqual(code.split(separator: "-").map(\.count), [4, 4, 4, 4], code)
        }
        let records = codes.enumerated().map { index, code in
            RecoveryCodeRecord(
                id: UUID(), codeDigest: RecoveryCodes.digest(RecoveryCodes.normalized(code)!, accountID: accountID))
        }
        let typed = codes[3].lowercased().replacingOccurrences(of: "-", with: " ")
        XCTAssertEqual(RecoveryCodes.match(typed, accountID: accountID, among: records), records[3])
        XCTAssertNil(RecoveryCodes.match(codes[3], accountID: AccountID(UUID()), among: records), "another account's")
        XCTAssertNil(RecoveryCodes.match("0000-0000-0000-0000", accountID: accountID, among: records))
    }

    func testLookalikeLettersReadAsDigitsAndOthersAreRefused() {
        XCTAssertEqual(RecoveryCodes.normalized("oOiI-lL00-ABCD-EFGH"), "001111" + "00ABCDEFGH")
        XCTAssertNil(RecoveryCodes.normalized("UUUU-0000-0000-0000"), "U is not in the alphabet")
        XCTAssertNil(RecoveryCodes.normalized("0000-0000-0000"), "too short")
        XCTAssertNil(RecoveryCodes.normalized(String(repeating: "0", count: 65)), "too long to read")
    }
}

final class MailCompositionTests: XCTestCase {
    func testMessageCarriesCodeExpiryAndServiceWithCRLFAndAStableMessageID() throws {
        let composer = try MailComposer(sender: "no-reply@example.com", serviceName: "Passkey Démo")
        let id = UUID()
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        let message = OutboxMessage(
            id: id, recipient: "ada@example.com", template: .emailVerification, code: "01234567",
            expiresAt: created.addingTimeInterval(600), createdAt: created)
        let mail = composer.compose(message, now: created)
        let text = String(decoding: mail.data, as: UTF8.self)
        XCTAssertEqual(mail.recipient, "ada@example.com")
        XCTAssertTrue(text.contains("Message-ID: <\(id.uuidString.lowercased())@example.com>\r\n"), text)
        XCTAssertTrue(text.contains("To: <ada@example.com>\r\n"))
        XCTAssertTrue(text.contains("Subject: =?UTF-8?B?"), "a non-ASCII service name is an encoded word")
        XCTAssertTrue(text.contains("Date: Fri, 15 Jan 2027 08:00:00 +0000\r\n"), text)
        XCTAssertTrue(text.contains("    01234567\r\n"))
        XCTAssertTrue(text.contains("expires in 10 minutes (at 2027-01-15T08:10:00Z)"), text)
        XCTAssertTrue(text.contains("Passkey Démo"))
        XCTAssertFalse(text.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "only CRLF line ends")
        XCTAssertFalse(text.contains("{{"), "every placeholder is filled")
    }
}

final class OutboxRetryTests: XCTestCase {
    func testBackoffDoublesFromOneSecondToAMinute() {
        XCTAssertEqual((1...8).map { OutboxRetry.delay(afterAttempt: $0) }, [1, 2, 4, 8, 16, 32, 60, 60])
    }
}
