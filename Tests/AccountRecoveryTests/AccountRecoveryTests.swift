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

    static let keys = SecretKeyRing(keys: [Array(repeating: 3, count: 32)])!

    func testTheCodeIsKeptOnlyAsAKeyedDigestAndSealedInItsMessageAndOnlyTheRightCodeMatches() throws {
        let target = RecoveryTarget(
            accountID: AccountID(UUID()), emailID: UUID(), address: "ada@example.com", verified: true,
            displayName: "Ada")
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let delivery = try OneTimeCodes.delivery(
            for: target, purpose: .recovery, random: SecureRandom(), keys: Self.keys, now: now)
        guard case .sealed(let keyID, let box) = delivery.message.code,
            case .code(let code) = OneTimeCodes.open(delivery.message, keys: Self.keys)
        else { return XCTFail("the message carries the code, sealed") }
        XCTAssertEqual(keyID, Self.keys.currentKeyID)
        XCTAssertNil(box.firstRange(of: Array(code.utf8)), "not in clear")
        XCTAssertEqual(delivery.code.salt.count, 16)
        XCTAssertEqual(delivery.code.digestKeyID, Self.keys.currentKeyID)
        // The unkeyed digest, which 10^8 guesses would reverse, is not what is kept.
        XCTAssertNotEqual(delivery.code.codeDigest, sha256(delivery.code.salt + Array(code.utf8)))
        XCTAssertTrue(OneTimeCodes.matches(code, delivery.code, keys: Self.keys))
        let wrong = String(code.dropLast()) + (code.hasSuffix("0") ? "1" : "0")
        XCTAssertFalse(OneTimeCodes.matches(wrong, delivery.code, keys: Self.keys))
        XCTAssertFalse(
            OneTimeCodes.matches(code, delivery.code, keys: SecretKeyRing(keys: [Array(repeating: 4, count: 32)])!),
            "a ring without the digest's key matches nothing")
        XCTAssertEqual(delivery.code.expiresAt.timeIntervalSince(now), 600)
        XCTAssertEqual(delivery.message.template, .recoveryCode)
        XCTAssertEqual(delivery.code.emailID, target.emailID)
    }

    func testAfterARotationThePreviousKeyStillChecksAndOpensWhatItMade() throws {
        let target = RecoveryTarget(
            accountID: AccountID(UUID()), emailID: UUID(), address: "ada@example.com", verified: true,
            displayName: "Ada")
        let before = try OneTimeCodes.delivery(
            for: target, purpose: .verification, random: SecureRandom(), keys: Self.keys, now: Date())
        guard case .code(let code) = OneTimeCodes.open(before.message, keys: Self.keys) else { return XCTFail() }
        let rotated = SecretKeyRing(keys: [Array(repeating: 5, count: 32), Array(repeating: 3, count: 32)])!
        XCTAssertTrue(OneTimeCodes.matches(code, before.code, keys: rotated))
        XCTAssertEqual(OneTimeCodes.open(before.message, keys: rotated), .code(code))
        let after = try OneTimeCodes.delivery(
            for: target, purpose: .verification, random: SecureRandom(), keys: rotated, now: Date())
        XCTAssertEqual(after.code.digestKeyID, rotated.currentKeyID, "new codes under the new key")
        XCTAssertEqual(OneTimeCodes.open(after.message, keys: Self.keys), .keyNotHeld(rotated.currentKeyID))
    }

    func testACodeStoredWithAnUnkeyedDigestBeforeKeyingStillMatchesUntilItExpires() {
        let salt = Array(repeating: UInt8(9), count: 16)
        let legacy = EmailCode(
            id: UUID(), accountID: AccountID(UUID()), emailID: UUID(), purpose: .recovery, salt: salt,
            codeDigest: sha256(salt + Array("01234567".utf8)), digestKeyID: nil, attempts: 1, createdAt: Date(),
            expiresAt: Date().addingTimeInterval(600))
        XCTAssertTrue(OneTimeCodes.matches("01234567", legacy, keys: Self.keys))
        XCTAssertFalse(OneTimeCodes.matches("01234568", legacy, keys: Self.keys))
        // A keyed digest is never taken for an unkeyed one.
        var keyed = legacy
        keyed.digestKeyID = Self.keys.currentKeyID
        XCTAssertFalse(OneTimeCodes.matches("01234567", keyed, keys: Self.keys))
    }

    func testASealedCodeOpensOnlyInItsOwnMessage() throws {
        let target = RecoveryTarget(
            accountID: AccountID(UUID()), emailID: UUID(), address: "ada@example.com", verified: true,
            displayName: "Ada")
        var message = try OneTimeCodes.delivery(
            for: target, purpose: .recovery, random: SecureRandom(), keys: Self.keys, now: Date()
        ).message
        message.id = UUID()
        XCTAssertEqual(OneTimeCodes.open(message, keys: Self.keys), .unreadable)
        message.code = nil
        XCTAssertEqual(OneTimeCodes.open(message, keys: Self.keys), OneTimeCodes.Opened.none)
        message.code = .clear("01234567")
        XCTAssertEqual(
            OneTimeCodes.open(message, keys: Self.keys), .code("01234567"), "a message queued before sealing")
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
            id: id, recipient: "ada@example.com", template: .emailVerification, code: .clear("01234567"),
            expiresAt: created.addingTimeInterval(600), createdAt: created)
        let mail = composer.compose(message, code: "01234567", now: created)
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
