import Configuration
import XCTest

@testable import DeploymentChecks

/// The doctor's checks as pure functions of what was fetched: every file's every refusal, the relying party's and
/// the certificate's, and a deployment that passes. The real fetch over sockets is `Tests/Doctor`.
final class DeploymentDoctorTests: XCTestCase {
    static let upload =
        "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let signing =
        "FA:C6:17:45:DC:09:03:78:6F:B9:ED:E6:2A:96:2B:39:9F:73:48:F0:BB:6F:89:9B:83:32:66:75:91:03:3B:9C"
    static let now: Int64 = 1_800_000_000

    let expectation = DeploymentExpectation(
        relyingPartyID: "example.com", origins: ["https://example.com", "https://shop.example.net"],
        relatedOrigins: ["https://shop.example.net"], appleAppIDs: ["ABCDE12345.com.example.app"],
        androidApps: [AndroidApp(packageName: "com.example.app", sha256Fingerprints: [upload, signing])])

    static func json(_ text: String, contentType: String? = "application/json") -> FetchedDocument {
        .response(status: 200, contentType: contentType, location: nil, body: Array(text.utf8), exceededLimit: false)
    }

    static let assetLinks = """
        [{"relation": ["delegate_permission/common.get_login_creds"],
          "target": {"namespace": "android_app", "package_name": "com.example.app",
                     "sha256_cert_fingerprints": ["\(upload)", "\(signing.lowercased())"]}},
         {"relation": ["delegate_permission/common.handle_all_urls"],
          "target": {"namespace": "android_app", "package_name": "com.example.app",
                     "sha256_cert_fingerprints": ["\(upload)", "\(signing)"]}}]
        """

    static var right: [WellKnownFile: FetchedDocument] {
        [
            .appleAppSiteAssociation: json(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#),
            .assetLinks: json(assetLinks, contentType: "application/json; charset=utf-8"),
            .relatedOrigins: json(#"{"origins": ["https://example.com", "https://shop.example.net"]}"#),
            .passkeyEndpoints: json(
                #"{"enroll": "https://example.com/passkeys/enroll", "manage": "https://example.com/passkeys/manage"}"#),
        ]
    }

    func findings(
        _ documents: [WellKnownFile: FetchedDocument] = right, host: String = "example.com", port: Int = 443,
        expectation: DeploymentExpectation? = nil,
        certificate: ServedCertificate = ServedCertificate(notAfterUnixSeconds: now + 90 * 86_400)
    ) -> [DeploymentFinding] {
        DeploymentDoctor.findings(
            host: host, port: port, expectation: expectation ?? self.expectation, certificate: certificate,
            documents: documents, now: Self.now)
    }

    /// The problems (failures and warnings) as check and code.
    func problems(_ findings: [DeploymentFinding]) -> [String] {
        findings.filter { $0.severity != .passed }.map { "\($0.check) \($0.code.rawValue) \($0.severity.rawValue)" }
    }

    func with(_ file: WellKnownFile, _ document: FetchedDocument) -> [WellKnownFile: FetchedDocument] {
        var documents = Self.right
        documents[file] = document
        return documents
    }

    func testARightDeploymentPassesEveryCheck() {
        let findings = findings()
        XCTAssertEqual(problems(findings), [])
        XCTAssertEqual(
            findings.map(\.check),
            ["relying-party", "tls", "apple-app-site-association", "assetlinks.json", "webauthn", "passkey-endpoints"])
        XCTAssertTrue(findings.allSatisfy { $0.fix == nil })
    }

    func testEveryResponseRuleIsRefusedForEachFile() {
        for file in WellKnownFile.allCases {
            let redirect = FetchedDocument.response(
                status: 301, contentType: "text/html", location: "https://www.example.com\(file.path)", body: [],
                exceededLimit: false)
            XCTAssertEqual(problems(findings(with(file, redirect))), ["\(file.rawValue) redirected failure"])
            XCTAssertTrue(findings(with(file, redirect)).contains { $0.problem.contains("https://www.example.com") })
            XCTAssertEqual(
                problems(findings(with(file, .failed("Connection refused")))), ["\(file.rawValue) unreachable failure"])
            let octets = Self.json(
                #"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#,
                contentType: "application/octet-stream")
            XCTAssertTrue(
                problems(findings(with(file, octets))).contains("\(file.rawValue) wrong_content_type failure"),
                file.rawValue)
            XCTAssertTrue(
                problems(findings(with(file, Self.json("{\"a\":", contentType: nil))))
                    .starts(with: ["\(file.rawValue) wrong_content_type failure", "\(file.rawValue) not_json failure"]))
            let large = FetchedDocument.response(
                status: 200, contentType: "application/json", location: nil,
                body: Array(repeating: 0x20, count: WellKnownFile.sizeLimit), exceededLimit: true)
            XCTAssertEqual(problems(findings(with(file, large))), ["\(file.rawValue) too_large failure"])
            let error = FetchedDocument.response(
                status: 500, contentType: "text/plain", location: nil, body: [], exceededLimit: false)
            XCTAssertEqual(problems(findings(with(file, error))), ["\(file.rawValue) unexpected_status failure"])
        }
    }

    func testAMissingFileFailsOnlyWhenTheConfigurationNeedsIt() {
        let missing = FetchedDocument.response(
            status: 404, contentType: "text/plain", location: nil, body: [], exceededLimit: false)
        XCTAssertEqual(
            problems(findings(with(.appleAppSiteAssociation, missing))),
            ["apple-app-site-association not_found failure"])
        XCTAssertEqual(problems(findings(with(.assetLinks, missing))), ["assetlinks.json not_found failure"])
        XCTAssertEqual(problems(findings(with(.relatedOrigins, missing))), ["webauthn not_found failure"])
        XCTAssertEqual(problems(findings(with(.passkeyEndpoints, missing))), ["passkey-endpoints not_found warning"])
        let bare = DeploymentExpectation(relyingPartyID: "example.com", origins: ["https://example.com"])
        let none = Dictionary(uniqueKeysWithValues: WellKnownFile.allCases.map { ($0, missing) })
        XCTAssertEqual(problems(findings(none, expectation: bare)), ["passkey-endpoints not_found warning"])
        XCTAssertEqual(findings(none, expectation: bare).filter { $0.code == .notChecked }.count, 3)
    }

    func testAppleAppSiteAssociationContent() {
        let other = Self.json(#"{"webcredentials": {"apps": ["ZZZZZ99999.com.example.other"]}}"#)
        XCTAssertEqual(
            problems(findings(with(.appleAppSiteAssociation, other))),
            [
                "apple-app-site-association app_id_missing failure",
                "apple-app-site-association app_id_not_configured warning",
            ])
        let message = findings(with(.appleAppSiteAssociation, other)).first { $0.code == .appIDMissing }
        XCTAssertEqual(
            message?.fix, "add ABCDE12345.com.example.app to PASSKEY_APPLE_APP_IDS on the gateway that serves this host"
        )
        for body in [
            #"{"applinks": {}}"#, #"{"webcredentials": {"apps": "ABCDE12345.com.example.app"}}"#,
            #"{"webcredentials": {"apps": [1]}}"#, "[]",
        ] {
            XCTAssertEqual(
                problems(findings(with(.appleAppSiteAssociation, Self.json(body)))),
                ["apple-app-site-association malformed failure"], body)
        }
    }

    func testAssetLinksContent() {
        let onlyUpload = Self.assetLinks.replacingOccurrences(of: "\"\(Self.signing.lowercased())\"", with: "")
            .replacingOccurrences(of: ", ]", with: "]")
        let missing = findings(with(.assetLinks, Self.json(onlyUpload)))
        XCTAssertEqual(problems(missing), ["assetlinks.json fingerprint_missing failure"])
        XCTAssertTrue(
            missing.contains { $0.problem.contains(Self.signing) && $0.problem.contains("android:apk-key-hash:") })
        let otherPackage = Self.assetLinks.replacingOccurrences(of: "com.example.app", with: "com.example.other")
        XCTAssertEqual(
            problems(findings(with(.assetLinks, Self.json(otherPackage)))), ["assetlinks.json package_missing failure"])
        let onlyLinks = Self.assetLinks.replacingOccurrences(
            of: "common.get_login_creds", with: "common.handle_all_urls")
        XCTAssertEqual(
            problems(findings(with(.assetLinks, Self.json(onlyLinks)))), ["assetlinks.json relation_missing failure"])
        let onlyCredentials = Self.assetLinks.replacingOccurrences(
            of: "common.handle_all_urls", with: "common.get_login_creds")
        XCTAssertEqual(
            problems(findings(with(.assetLinks, Self.json(onlyCredentials)))),
            ["assetlinks.json relation_missing warning"])
        let shortFingerprint = Self.assetLinks.replacingOccurrences(of: "\"\(Self.upload)\"", with: "\"14:6D:E9\"")
        XCTAssertEqual(
            problems(findings(with(.assetLinks, Self.json(shortFingerprint)))),
            [
                "assetlinks.json fingerprint_malformed failure", "assetlinks.json fingerprint_malformed failure",
                "assetlinks.json fingerprint_missing failure",
            ])
        for body in [#"{"relation": []}"#, #"[{"target": {"namespace": "android_app"}}]"#, #"[{"relation": ["x"]}]"#] {
            XCTAssertEqual(
                problems(findings(with(.assetLinks, Self.json(body)))).first, "assetlinks.json malformed failure", body)
        }
    }

    func testRelatedOriginsContentAndTheFiveLabelLimit() {
        let without = Self.json(#"{"origins": ["https://example.com"]}"#)
        XCTAssertEqual(problems(findings(with(.relatedOrigins, without))), ["webauthn origin_missing failure"])
        XCTAssertEqual(
            problems(findings(with(.relatedOrigins, Self.json(#"{"origins": "x"}"#)))), ["webauthn malformed failure"])
        // Five registrable domains before it: the browser never reaches shop.example.net.
        let late = Self.json(
            #"{"origins": ["https://a.one", "https://www.a.one", "https://two.test", "https://three.test", "https://four.test", "https://five.test", "https://shop.example.net", "https://example.net"]}"#
        )
        XCTAssertEqual(
            problems(findings(with(.relatedOrigins, late))),
            ["webauthn beyond_label_limit failure", "webauthn beyond_label_limit warning"])
        // The same label under other suffixes counts once.
        let sameLabel = Self.json(
            #"{"origins": ["https://shop.example.net", "https://example.org", "https://example.de", "https://b.test", "https://c.test", "https://d.test"]}"#
        )
        XCTAssertEqual(problems(findings(with(.relatedOrigins, sameLabel))), [])
        // Labels come from the Public Suffix List: names under co.uk are a label each (not all "co"), and so are
        // names under github.io; an IP address is none.
        let underSuffixes = Self.json(
            #"{"origins": ["https://one.co.uk", "https://www.two.co.uk", "https://me.github.io", "https://192.0.2.1", "https://you.github.io", "https://five.co.uk", "https://shop.example.net"]}"#
        )
        XCTAssertEqual(
            problems(findings(with(.relatedOrigins, underSuffixes))), ["webauthn beyond_label_limit failure"])
        XCTAssertEqual(RelatedOriginsCheck.registrableLabel(of: "www.shop.example.co.uk"), "example")
        XCTAssertEqual(RelatedOriginsCheck.registrableLabel(of: "me.github.io"), "me")
        XCTAssertNil(RelatedOriginsCheck.registrableLabel(of: "192.0.2.1"))
        XCTAssertNil(RelatedOriginsCheck.registrableLabel(of: "[2001:db8::1]"))
        XCTAssertNil(RelatedOriginsCheck.registrableLabel(of: "co.uk"))
    }

    func testPasskeyEndpointsContent() {
        XCTAssertEqual(
            problems(
                findings(with(.passkeyEndpoints, Self.json(#"{"enroll": "https://example.com/passkeys/enroll"}"#)))),
            ["passkey-endpoints malformed failure"])
        let moved = Self.json(
            #"{"enroll": "https://example.com/new", "manage": "https://example.com/passkeys/manage"}"#)
        XCTAssertEqual(
            problems(findings(with(.passkeyEndpoints, moved))), ["passkey-endpoints endpoint_mismatch warning"])
    }

    func testTheRelyingPartyAgainstTheHostThePortAndTheOrigins() {
        XCTAssertEqual(problems(findings(host: "www.example.com")), ["relying-party host_is_not_relying_party failure"])
        XCTAssertEqual(problems(findings(port: 8443)), ["relying-party non_standard_port warning"])
        var outside = expectation
        outside.origins.append("https://example.org")
        let refused = findings(expectation: outside)
        XCTAssertEqual(problems(refused), ["relying-party origin_outside_relying_party failure"])
        XCTAssertTrue(refused.contains { $0.problem.hasPrefix("https://example.org is neither example.com") })
        for id in ["localhost", "com", "127.0.0.1", "app.localhost", "co.uk", "github.io"] {
            let local = DeploymentExpectation(relyingPartyID: id, origins: [])
            XCTAssertTrue(
                problems(findings(host: id, expectation: local)).contains(
                    "relying-party relying_party_not_registrable failure"), id)
        }
        let suffix = findings(
            host: "github.io", expectation: DeploymentExpectation(relyingPartyID: "github.io", origins: []))
        XCTAssertTrue(
            suffix.contains {
                $0.problem.hasPrefix("the relying party ID github.io is a public suffix (Public Suffix List)")
            })
        for id in ["me.github.io", "example.co.uk"] {
            XCTAssertFalse(
                problems(findings(host: id, expectation: DeploymentExpectation(relyingPartyID: id, origins: [])))
                    .contains("relying-party relying_party_not_registrable failure"), id)
        }
    }

    func testTheCertificate() {
        let rejected = findings(
            certificate: ServedCertificate(rejection: "SSL certificate problem: certificate has expired"))
        XCTAssertEqual(problems(rejected), ["tls certificate_rejected failure"])
        XCTAssertTrue(rejected.contains { $0.problem.contains("certificate has expired") })
        let soon = findings(certificate: ServedCertificate(notAfterUnixSeconds: Self.now + 3 * 86_400))
        XCTAssertEqual(problems(soon), ["tls certificate_expires_soon warning"])
        XCTAssertTrue(soon.contains { $0.problem.hasSuffix("expires in 3 days") })
        XCTAssertEqual(problems(findings(certificate: ServedCertificate())), [])
        let down = Dictionary(
            uniqueKeysWithValues: WellKnownFile.allCases.map { ($0, FetchedDocument.failed("Couldn't connect")) })
        XCTAssertEqual(
            problems(findings(down)),
            ["tls unreachable failure"] + WellKnownFile.allCases.map { "\($0.rawValue) unreachable failure" })
    }

    func testTheExpectationIsReadAsTheGatewayReadsIt() throws {
        let expectation = try DeploymentExpectation(
            EnvironmentReader([
                "PASSKEY_RP_ID": "Example.com", "PASSKEY_ORIGINS": "https://example.com",
                "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
                "PASSKEY_ANDROID_APPS": "com.example.app:\(Self.upload.lowercased())",
            ]))
        XCTAssertEqual(expectation.relyingPartyID, "example.com")
        XCTAssertEqual(expectation.androidApps.first?.sha256Fingerprints, [Self.upload])
        for (name, value) in [
            ("PASSKEY_APPLE_APP_IDS", "com.example.app"), ("PASSKEY_ANDROID_APPS", "com.example.app:AB:CD"),
            ("PASSKEY_RELATED_ORIGINS", "example.net"), ("PASSKEY_RP_ID", "exa mple.com"),
        ] {
            XCTAssertThrowsError(try DeploymentExpectation(EnvironmentReader([name: value]))) {
                XCTAssertEqual(($0 as? ConfigurationError)?.variable, name)
            }
        }
    }
}
