import Crypto
import XCTest

final class DigestTests: XCTestCase {
    func testSHA256KnownAnswer() {
        XCTAssertEqual(
            hex(sha256(Array("abc".utf8))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex(sha256([UInt8]())), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testOtherDigestsHaveTheirLengths() {
        XCTAssertEqual(DigestAlgorithm.sha1.hash([1, 2, 3]).count, 20)
        XCTAssertEqual(DigestAlgorithm.sha384.hash([1, 2, 3]).count, 48)
        XCTAssertEqual(DigestAlgorithm.sha512.hash([1, 2, 3]).count, 64)
    }

    func testConstantTimeEquals() {
        XCTAssertTrue(constantTimeEquals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        XCTAssertFalse(constantTimeEquals([1, 2, 3] as [UInt8], [1, 2] as [UInt8]))
        XCTAssertTrue(constantTimeEquals([UInt8](), [UInt8]()))
    }

    func testSecureRandomGivesDistinctValues() {
        let random = SecureRandom()
        let a = random.bytes(count: 32)
        let b = random.bytes(count: 32)
        XCTAssertEqual(a.count, 32)
        XCTAssertNotEqual(a, b)
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
