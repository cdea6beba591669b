import Crypto
import Foundation
import Webhooks
import XCTest

/// An endpoint's secret at rest: sealed under the key ring and bound to its endpoint; one stored in clear before
/// sealing opens as it is.
final class SealedSecretTests: XCTestCase {
    let keys = SecretKeyRing(keys: [Array(repeating: 6, count: 32)])!

    func testASealedSecretOpensOnlyForItsEndpointUnderTheRing() throws {
        let secret = WebhookSecret(random: SecureRandom())
        let endpoint = UUID()
        let sealed = try secret.sealed(for: endpoint, with: keys)
        XCTAssertEqual(sealed.box.count, 12 + 32 + 16)
        XCTAssertNil(sealed.box.firstRange(of: secret.bytes))
        XCTAssertEqual(StoredWebhookSecret.sealed(sealed).open(for: endpoint, with: keys), secret)
        XCTAssertEqual(StoredWebhookSecret.sealed(sealed).keyID, keys.currentKeyID)
        XCTAssertNil(StoredWebhookSecret.sealed(sealed).open(for: UUID(), with: keys), "another endpoint's")
        XCTAssertNil(
            StoredWebhookSecret.sealed(sealed).open(
                for: endpoint, with: SecretKeyRing(keys: [Array(repeating: 7, count: 32)])!),
            "a ring without its key")
        XCTAssertEqual(StoredWebhookSecret.clear(secret).open(for: endpoint, with: keys), secret)
        XCTAssertNil(StoredWebhookSecret.clear(secret).keyID)
    }
}
