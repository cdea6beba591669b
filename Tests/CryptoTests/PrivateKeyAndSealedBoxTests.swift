import Crypto
import XCTest

/// Signing keys and sealed boxes: what signs access tokens and keeps their keys and refresh successors at rest.
final class PrivateKeyAndSealedBoxTests: XCTestCase {
    func testBothKindsSignWhatTheirPublicHalfVerifiesAndSurviveTheirEncoding() throws {
        for kind in [PrivateKey.Kind.p256, .ed25519] {
            let key = try PrivateKey.generate(kind)
            let message = Array("header.payload".utf8)
            let signature = try key.sign(message)
            XCTAssertEqual(signature.count, 64, "\(kind): r ‖ s or the Ed25519 signature")
            let scheme: SignatureScheme = kind == .p256 ? .ecdsa(.sha256) : .ed25519
            let wire = kind == .p256 ? try XCTUnwrap(ECDSASignature.der(raw: signature)) : signature
            XCTAssertTrue(try key.publicKey().verify(signature: wire, message: message, scheme: scheme))
            XCTAssertFalse(try key.publicKey().verify(signature: wire, message: message + [0], scheme: scheme))
            // Concurrent signatures share the pooled contexts and each verifies.
            let signatures = try (0..<20).map { _ in try key.sign(message) }
            for signature in signatures {
                let checked = kind == .p256 ? ECDSASignature.der(raw: signature)! : signature
                XCTAssertTrue(try key.publicKey().verify(signature: checked, message: message, scheme: scheme))
            }
            let reread = try PrivateKey(pkcs8: key.pkcs8())
            XCTAssertEqual(reread.kind, kind)
            XCTAssertEqual(try reread.publicCoordinates().x, try key.publicCoordinates().x)
        }
        XCTAssertThrowsError(try PrivateKey(pkcs8: [0x30, 0x03, 0x02, 0x01, 0x00]))
        XCTAssertNil(ECDSASignature.der(raw: [1, 2, 3]))
    }

    func testASealedBoxOpensOnlyWithItsKeyAndItsAdditionalDataAndUnchanged() throws {
        let key = Array(repeating: UInt8(3), count: 32)
        let box = try SealedBox.seal(Array("secret".utf8), key: key, additionalData: Array("kid-1".utf8))
        XCTAssertEqual(SealedBox.open(box, key: key, additionalData: Array("kid-1".utf8)), Array("secret".utf8))
        XCTAssertNil(SealedBox.open(box, key: Array(repeating: 4, count: 32), additionalData: Array("kid-1".utf8)))
        XCTAssertNil(SealedBox.open(box, key: key, additionalData: Array("kid-2".utf8)))
        for index in box.indices {
            var changed = box
            changed[index] ^= 1
            XCTAssertNil(SealedBox.open(changed, key: key, additionalData: Array("kid-1".utf8)), "byte \(index)")
        }
        XCTAssertNil(SealedBox.open(Array(box.prefix(20)), key: key))
        XCTAssertNotEqual(
            try SealedBox.seal([1], key: key), try SealedBox.seal([1], key: key), "a fresh nonce each time")
        XCTAssertThrowsError(try SealedBox.seal([1], key: [1, 2, 3]))
    }
}
