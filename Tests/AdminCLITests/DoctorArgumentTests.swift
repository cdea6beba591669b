import XCTest

@testable import passkey_admin

/// What `doctor` reads before it fetches anything: the URL it checks and the deployment's `KEY=VALUE` file, each
/// bound and each refusal.
final class DoctorArgumentTests: XCTestCase {
    func testTheURLIsHTTPSToAHostAndAPort() throws {
        let target = try DoctorTarget(url: "https://Example.com/")
        XCTAssertEqual(target.host, "example.com")
        XCTAssertEqual(target.port, 443)
        XCTAssertEqual(target.origin, "https://example.com")
        XCTAssertEqual(try DoctorTarget(url: "https://example.com:8443").origin, "https://example.com:8443")
        for url in [
            "http://example.com", "example.com", "https://", "https://example.com/path", "https://example.com?x=1",
            "https://user@example.com", "https://example.com:0", "https://example.com:65536", "https://example.com:+1",
            "https://exa mple.com", "https://[::1]", "https://" + String(repeating: "a", count: 300) + ".com",
        ] {
            XCTAssertThrowsError(try DoctorTarget(url: url), url)
        }
    }

    func testTheEnvironmentFileIsKeyValueLines() throws {
        let values = try EnvironmentFile.parse(
            "# comment\n\nPASSKEY_RP_ID=example.com\r\n  PASSKEY_ORIGINS=https://a.example.com,https://b.example.com\n"
                + "PASSKEY_RP_NAME=\"Quoted\"\nPASSKEY_RP_ID=example.org\nEMPTY=\n")
        XCTAssertEqual(
            values,
            [
                "PASSKEY_RP_ID": "example.org", "PASSKEY_ORIGINS": "https://a.example.com,https://b.example.com",
                "PASSKEY_RP_NAME": "\"Quoted\"", "EMPTY": "",
            ])
        for (text, reason) in [
            ("PASSKEY_RP_ID example.com", "line 1 is not NAME=VALUE"), ("A=1\nexport B=2", "line 2: the name must"),
            ("=value", "line 1: the name must"), ("lower=1", "line 1: the name must"),
            (String(repeating: "\n", count: EnvironmentFile.lineLimit), "more than 10000 lines"),
            ("A=" + String(repeating: "x", count: EnvironmentFile.byteLimit), "larger than 1 MiB"),
        ] {
            XCTAssertThrowsError(try EnvironmentFile.parse(text)) {
                XCTAssertTrue(($0 as? EnvironmentFile.Invalid)?.reason.contains(reason) == true, "\(reason): \($0)")
            }
        }
    }
}
