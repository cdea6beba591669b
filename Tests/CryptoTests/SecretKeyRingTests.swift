import Crypto
import XCTest

/// HKDF-SHA256 against RFC 5869's vectors, and the secret key ring: seals and digests under the current key, opens
/// and checks under any key it holds, one key per purpose, boxes bound to their context.
final class SecretKeyRingTests: XCTestCase {
    func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    func testHKDFMatchesRFC5869() {
        // Test cases 1 and 3 of RFC 5869, Appendix A.
        XCTAssertEqual(
            hkdfSHA256(
                key: bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), salt: bytes("000102030405060708090a0b0c"),
                info: bytes("f0f1f2f3f4f5f6f7f8f9"), length: 42),
            bytes(
                "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
        XCTAssertEqual(
            hkdfSHA256(key: bytes("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), salt: [], info: [], length: 42),
            bytes(
                "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"))
    }

    let first = Array(repeating: UInt8(1), count: 32)
    let second = Array(repeating: UInt8(2), count: 32)

    func testOnlyRingsOfDifferent32ByteKeysAreMade() {
        XCTAssertNil(SecretKeyRing(keys: []))
        XCTAssertNil(SecretKeyRing(keys: [Array(repeating: 1, count: 31)]))
        XCTAssertNil(SecretKeyRing(keys: [first, first]))
        XCTAssertNil(SecretKeyRing(keys: (0...SecretKeyRing.capacity).map { Array(repeating: UInt8($0), count: 32) }))
        let ring = SecretKeyRing(keys: [first, second])
        XCTAssertEqual(ring?.currentKeyID, SecretKeyRing.keyID(of: first))
        XCTAssertEqual(ring?.keyIDs, [SecretKeyRing.keyID(of: first), SecretKeyRing.keyID(of: second)])
        XCTAssertEqual(SecretKeyRing.keyID(of: first).count, 16)
        XCTAssertNotEqual(SecretKeyRing.keyID(of: first), SecretKeyRing.keyID(of: second))
    }

    func testABoxOpensForItsPurposeAndContextUnderAnyKeyTheRingHolds() throws {
        let old = SecretKeyRing(keys: [first])!
        let rotated = SecretKeyRing(keys: [second, first])!
        let sealed = try old.seal(Array("01234567".utf8), for: .outboxCode, context: [1, 2, 3])
        XCTAssertEqual(sealed.keyID, old.currentKeyID)
        XCTAssertEqual(rotated.open(sealed, for: .outboxCode, context: [1, 2, 3]), Array("01234567".utf8))
        XCTAssertNil(rotated.open(sealed, for: .outboxCode, context: [1, 2, 4]), "another row")
        XCTAssertNil(rotated.open(sealed, for: .webhookSecret, context: [1, 2, 3]), "another purpose")
        XCTAssertNil(SecretKeyRing(keys: [second])!.open(sealed, for: .outboxCode, context: [1, 2, 3]), "key gone")
        var changed = sealed.box
        changed[changed.count / 2] ^= 1
        XCTAssertNil(
            rotated.open(SealedSecret(keyID: sealed.keyID, box: changed), for: .outboxCode, context: [1, 2, 3]))
        // The ring key itself never seals: the box does not open under it directly.
        XCTAssertNil(SealedBox.open(sealed.box, key: first))
        XCTAssertEqual(try rotated.seal([9], for: .outboxCode, context: []).keyID, rotated.currentKeyID)
    }

    func testDigestsAreKeyedPerPurposeAndCheckableUnderAPreviousKey() {
        let old = SecretKeyRing(keys: [first])!
        let rotated = SecretKeyRing(keys: [second, first])!
        let (keyID, code) = old.authenticationCode([1, 2, 3], for: .codeDigest)
        XCTAssertEqual(code.count, 32)
        XCTAssertEqual(rotated.authenticationCode([1, 2, 3], for: .codeDigest, keyID: keyID), code)
        XCTAssertNotEqual(rotated.authenticationCode([1, 2, 3], for: .codeDigest).code, code, "new digests, new key")
        XCTAssertNotEqual(old.authenticationCode([1, 2, 3], for: .outboxCode).code, code, "one key per purpose")
        XCTAssertNotEqual(hmacSHA256(key: first, data: [1, 2, 3]), code, "never the ring key as it is")
        XCTAssertNil(SecretKeyRing(keys: [second])!.authenticationCode([1, 2, 3], for: .codeDigest, keyID: keyID))
    }
}
