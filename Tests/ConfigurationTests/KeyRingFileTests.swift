import Configuration
import Foundation
import XCTest

/// `PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE` as a key ring: the current key first, previous keys after it (a
/// rotation in progress), comments and blank lines skipped; anything else in the file stops the process.
final class KeyRingFileTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func configuration(_ text: String) throws -> SessionTokenConfiguration {
        let file = directory.appendingPathComponent(UUID().uuidString)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return try SessionTokenConfiguration(EnvironmentReader(["PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": file.path]))
    }

    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    func testTheFirstKeyIsCurrentAndTheOthersArePrevious() throws {
        let current = (0..<32).map { UInt8($0) }
        let previous = (0..<32).map { UInt8(255 - $0) }
        let ring = try configuration(
            "# rotated 2026-12-07\n\(hex(current))\n\n  \(Data(previous).base64EncodedString())  \n")
        XCTAssertEqual(ring.keyEncryptionKeys, [current, previous])
        XCTAssertEqual(ring.keyEncryptionKey, current, "the current key seals the signing keys")
        XCTAssertEqual(try ring.requireKeyEncryptionKeys(), [current, previous])
        XCTAssertEqual(try configuration(hex(current)).keyEncryptionKeys, [current], "one key, as before rotation")
    }

    func testAKeyRingIsRequiredInEveryTokenMode() throws {
        for kind in ["jwt", "opaque"] {
            let none = try SessionTokenConfiguration(EnvironmentReader(["PASSKEY_SESSION_TOKENS": kind]))
            XCTAssertThrowsError(try none.requireKeyEncryptionKeys(), kind) {
                XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE")
            }
        }
    }

    func testARingThatDoesNotReadStopsTheProcess() throws {
        let key = hex((0..<32).map { UInt8($0) })
        let other = hex((0..<32).map { UInt8($0 + 1) })
        let tooMany = (0...SessionTokenConfiguration.keyRingCapacity).map { index in
            hex((0..<32).map { UInt8(($0 + index * 32) & 0xff) ^ UInt8(index) })
        }
        for text in [
            "# only a comment\n", "\(key)\n\(key)\n", "\(key)\nnot a key\n", "\(key)\n\(other)00\n",
            tooMany.joined(separator: "\n"),
        ] {
            XCTAssertThrowsError(try configuration(text), text) {
                XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE")
            }
        }
    }
}
