import Configuration
import GatewayCore
import XCTest

final class PasskeyEndpointPagesTests: XCTestCase {
    func testTheDefaultsAreTheGatewaysOwnSections() throws {
        let configuration = try GatewayConfiguration(environment: [:])
        XCTAssertEqual(configuration.passkeyPages.enroll, "/passkeys/enroll")
        XCTAssertEqual(configuration.passkeyPages.manage, "/passkeys/manage")
    }

    func testAbsoluteHTTPSURLsAndPathsAreTaken() throws {
        for value in [
            "https://accounts.example.com/passkeys/new", "https://example.com", "https://example.com:8443/a?b=c#d",
            "/settings/passkeys", "/", "/a/b?tab=passkeys#list", "/%E2%9C%93",
        ] {
            let configuration = try GatewayConfiguration(
                environment: ["PASSKEY_ENROLL_PAGE": value, "PASSKEY_MANAGE_PAGE": value])
            XCTAssertEqual(configuration.passkeyPages.enroll, value)
            XCTAssertEqual(configuration.passkeyPages.manage, value)
        }
    }

    func testABadPageStopsTheProcessNamingItsVariable() {
        for variable in ["PASSKEY_ENROLL_PAGE", "PASSKEY_MANAGE_PAGE"] {
            for value in [
                "http://example.com/passkeys", "passkeys/new", "//evil.example/passkeys", "javascript:alert(1)",
                "https://", "https://user@example.com/", "https://exa mple.com/", "/a b", "/a\u{7}b", "/ünicode",
                "https://example.com:0/", "https://example.com:70000/", "https://-bad.example/",
                "/" + String(repeating: "a", count: PasskeyEndpointPages.maximumLength),
                "ftp://example.com/", "data:text/html,hi", "https://example.com/<script>",
            ] {
                XCTAssertThrowsError(try GatewayConfiguration(environment: [variable: value]), "\(variable)=\(value)") {
                    error in
                    XCTAssertEqual((error as? ConfigurationError)?.variable, variable, value)
                }
            }
        }
    }
}
