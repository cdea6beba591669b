import AccessTokens
import Foundation
import SessionIssuance
import XCTest

/// The key-encryption key while its file is rotated: the current key seals new signing keys, and the previous keys
/// the file still holds open the ones sealed before.
final class KeyEncryptionKeyRotationTests: XCTestCase {
    let first = Array(repeating: UInt8(1), count: 32)
    let second = Array(repeating: UInt8(2), count: 32)

    func testPreviousKeysOpenWhatTheySealedAndOnlyTheCurrentOneSeals() throws {
        let before = try XCTUnwrap(KeyEncryptionKey(bytes: first))
        let sealedBefore = try before.newKey(.es256, now: Date(), activatingAfter: 0)
        let rotated = try XCTUnwrap(KeyEncryptionKey(bytes: second, previous: [first]))
        XCTAssertNoThrow(try rotated.open(sealedBefore))
        let sealedAfter = try rotated.newKey(.edDSA, now: Date(), activatingAfter: 0)
        XCTAssertThrowsError(try before.open(sealedAfter), "sealed under the new key")
        XCTAssertNoThrow(try XCTUnwrap(KeyEncryptionKey(bytes: second)).open(sealedAfter))
        XCTAssertThrowsError(try XCTUnwrap(KeyEncryptionKey(bytes: second)).open(sealedBefore), "the old key removed")
        XCTAssertNil(KeyEncryptionKey(bytes: second, previous: [Array(repeating: 1, count: 31)]))
    }
}
