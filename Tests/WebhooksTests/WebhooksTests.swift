import Crypto
import Encoding
import Foundation
import IPAddresses
import Webhooks
import XCTest

final class WebhookSignatureTests: XCTestCase {
    /// The example of the Standard Webhooks specification (its reference libraries' test vector).
    func testTheSpecificationsExampleSignature() throws {
        let secret = WebhookSecret(bytes: try XCTUnwrap(Base64URL.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")))
        let signature = WebhookSignature.signature(
            messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            payload: Array(#"{"test": 2432232314}"#.utf8), secret: secret)
        XCTAssertEqual(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    func testHeadersAndSecretText() {
        let secret = WebhookSecret(bytes: Array(repeating: 7, count: 32))
        XCTAssertTrue(secret.text.hasPrefix("whsec_"))
        XCTAssertEqual(Base64URL.decode(secret.text.dropFirst(6)), secret.bytes)
        let headers = WebhookSignature.headers(messageID: "msg_1", timestamp: 5, payload: [1], secret: secret)
        XCTAssertEqual(headers.map(\.name), ["webhook-id", "webhook-timestamp", "webhook-signature"])
        XCTAssertEqual(headers[1].value, "5")
        // Another timestamp, body or secret signs differently.
        let base = WebhookSignature.signature(messageID: "msg_1", timestamp: 5, payload: [1], secret: secret)
        XCTAssertNotEqual(
            base, WebhookSignature.signature(messageID: "msg_1", timestamp: 6, payload: [1], secret: secret))
        XCTAssertNotEqual(
            base, WebhookSignature.signature(messageID: "msg_1", timestamp: 5, payload: [2], secret: secret))
        XCTAssertNotEqual(
            base,
            WebhookSignature.signature(
                messageID: "msg_1", timestamp: 5, payload: [1],
                secret: WebhookSecret(bytes: Array(repeating: 8, count: 32))))
    }

    func testHMACMatchesRFC4231() {
        // RFC 4231 test case 2.
        let mac = hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        XCTAssertEqual(Hex.encode(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

final class WebhookURLTests: XCTestCase {
    func testAcceptedURLs() throws {
        let url = try WebhookURL(parsing: "https://Hooks.Example.com:8443/in?x=1", allowHTTP: false)
        XCTAssertEqual(url.host, "hooks.example.com")
        XCTAssertEqual(url.port, 8443)
        XCTAssertEqual(url.scheme, .https)
        XCTAssertEqual(try WebhookURL(parsing: "https://example.com", allowHTTP: false).port, 443)
        XCTAssertEqual(try WebhookURL(parsing: "http://[2001:db8::1]:80/x", allowHTTP: true).host, "2001:db8::1")
        XCTAssertEqual(try WebhookURL(parsing: "http://example.com/x", allowHTTP: true).port, 80)
    }

    func testRefusedURLs() {
        let refused: [(String, Bool)] = [
            ("http://example.com/x", false), ("ftp://example.com/x", true), ("https://user:pw@example.com/", false),
            ("https://example.com/#frag", false), ("https://exa mple.com/", false), ("https://exämple.com/", false),
            ("https:///x", false), ("https://example.com:0/", false), ("https://example.com:65536/", false),
            ("https://example.com:80a/", false), ("https://[::1/", false), ("https://[example]/", false),
            ("https://-bad.example/", false), ("https://" + String(repeating: "a", count: 2048), false), ("", false),
            ("javascript:alert(1)", true), ("https://example.com\u{0}/", false),
        ]
        for (text, allowHTTP) in refused {
            XCTAssertThrowsError(try WebhookURL(parsing: text, allowHTTP: allowHTTP), text)
        }
    }
}

final class DestinationPolicyTests: XCTestCase {
    func reason(_ text: String, _ policy: DestinationPolicy = DestinationPolicy()) -> String? {
        policy.refusal(of: IPAddress(parsing: text)!)
    }

    func testInternalAddressesAreRefused() {
        let refused = [
            "127.0.0.1": "loopback", "127.9.9.9": "loopback", "10.0.0.1": "private", "172.16.0.1": "private",
            "172.31.255.255": "private", "192.168.0.1": "private", "169.254.169.254": "link-local",
            "100.64.0.1": "shared (CGNAT)", "0.0.0.0": "this-network", "224.0.0.1": "multicast",
            "255.255.255.255": "reserved", "::1": "loopback", "::": "unspecified", "fe80::1": "link-local",
            "fd00::1": "unique local", "ff02::1": "multicast", "::ffff:127.0.0.1": "loopback",
            "::ffff:10.0.0.1": "private", "64:ff9b::a9fe:a9fe": "link-local", "2002:7f00:1::": "loopback",
            "::7f00:1": "IPv4-compatible",
        ]
        for (address, expected) in refused { XCTAssertEqual(reason(address), expected, address) }
    }

    func testPublicAddressesPass() {
        for address in ["93.184.216.34", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "1.1.1.1"] {
            XCTAssertNil(reason(address), address)
        }
    }

    func testAllowedNetworksOpenOnlyThemselves() {
        let policy = DestinationPolicy(allowed: [IPNetwork(parsing: "10.1.0.0/16")!, IPNetwork(parsing: "::1")!])
        XCTAssertNil(reason("10.1.2.3", policy))
        XCTAssertEqual(reason("10.2.0.1", policy), "private")
        XCTAssertNil(reason("::1", policy))
        XCTAssertEqual(reason("127.0.0.1", policy), "loopback")
        XCTAssertNil(IPNetwork(parsing: "10.0.0.0/33"))
        XCTAssertNil(IPNetwork(parsing: "10.0.0.0/8/8"))
        XCTAssertNil(IPNetwork(parsing: "example.com/8"))
    }

    func testEveryResolvedAddressMustPass() {
        let policy = DestinationPolicy()
        let mixed = ["93.184.216.34", "10.0.0.1"].map { IPAddress(parsing: $0)! }
        XCTAssertThrowsError(try policy.check(host: "mixed.example", addresses: mixed)) { error in
            XCTAssertTrue(String(describing: error).contains("10.0.0.1"), "\(error)")
        }
        XCTAssertThrowsError(try policy.check(host: "nothing.example", addresses: []))
        XCTAssertNoThrow(try policy.check(host: "ok.example", addresses: [IPAddress(parsing: "8.8.8.8")!]))
    }
}

final class WebhookRetryTests: XCTestCase {
    func testBackoffDoublesUpToTheCap() {
        let retry = WebhookRetry(maximumDelay: 60, disableAfter: 3600)
        XCTAssertEqual((1...8).map { retry.delay(afterFailures: $0) }, [1, 2, 4, 8, 16, 32, 60, 60])
        XCTAssertEqual(retry.delay(afterFailures: 10_000), 60)
        XCTAssertEqual(retry.delay(afterFailures: 0), 1)
    }
}
