import Configuration
import PasskeyPolicy
import WebAuthn
import XCTest

/// The policy variables: each read, each refused with its name when bad, and mapped to the verifier's terms.
final class PasskeyPolicyTests: XCTestCase {
    func configuration(_ environment: [String: String]) throws -> PasskeyPolicyConfiguration {
        try PasskeyPolicyConfiguration(EnvironmentReader(environment))
    }

    func assertRefused(_ environment: [String: String], naming variable: String, line: UInt = #line) {
        XCTAssertThrowsError(try PasskeyPolicy(configuration(environment)), line: line) { error in
            XCTAssertEqual((error as? ConfigurationError)?.variable, variable, "\(error)", line: line)
        }
    }

    func testDefaultsAreTheStandardOptionsWithUserVerificationRequired() throws {
        let policy = try PasskeyPolicy(configuration([:]))
        var expected = CeremonyOptions.standard
        expected.registrationUserVerification = .required
        expected.authenticationUserVerification = .required
        // The Automatic Passkey Upgrade keeps the rule it always had.
        expected.conditionalRegistrationUserVerification = .preferred
        XCTAssertEqual(policy.options, expected)
        XCTAssertEqual(policy.options.registrationUserVerification(for: .conditional), .preferred)
        XCTAssertEqual(policy.options.registrationUserVerification(for: .modal), .required)
        // Set explicitly, the value applies to the upgrade too.
        for value in ["required", "preferred", "discouraged"] {
            let set = try PasskeyPolicy(configuration(["PASSKEY_REGISTRATION_USER_VERIFICATION": value]))
            XCTAssertEqual(set.options.registrationUserVerification(for: .conditional).rawValue, value)
        }
        XCTAssertFalse(
            policy.options.algorithms.contains(COSEAlgorithm.rs1.rawValue), "RS1 is never offered by default")
        XCTAssertEqual(Set(policy.options.algorithms), Set(COSEAlgorithm.defaultAllowed))
        XCTAssertNil(policy.allowedAAGUIDs)
        XCTAssertEqual(policy.deniedAAGUIDs, [])
        XCTAssertFalse(policy.origins(allowing: ["https://example.com"]).allowCrossOrigin)
        guard case .reject = policy.signCount else { return XCTFail("sign count defaults to reject") }
    }

    func testEveryVariableIsRead() throws {
        let policy = try PasskeyPolicy(
            configuration([
                "PASSKEY_ALGORITHMS": "-7, -65535",
                "PASSKEY_REGISTRATION_USER_VERIFICATION": "required",
                "PASSKEY_AUTHENTICATION_USER_VERIFICATION": "discouraged",
                "PASSKEY_RESIDENT_KEY": "preferred",
                "PASSKEY_HINTS": "security-key,hybrid",
                "PASSKEY_ATTESTATION": "direct",
                "PASSKEY_AAGUID_ALLOW": "08987058-CADC-4B81-B6E1-30DE50DCBE96",
                "PASSKEY_AAGUID_DENY": "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4",
                "PASSKEY_TOP_ORIGINS": "https://shop.example.net",
                "PASSKEY_SIGN_COUNT": "flag",
            ]))
        XCTAssertEqual(policy.options.algorithms, [-7, -65535])
        XCTAssertEqual(policy.options.registrationUserVerification, .required)
        XCTAssertEqual(policy.options.authenticationUserVerification, .discouraged)
        XCTAssertEqual(policy.options.residentKey, .preferred)
        XCTAssertEqual(policy.options.hints, [.securityKey, .hybrid])
        XCTAssertEqual(policy.options.attestation, .direct)
        XCTAssertEqual(policy.allowedAAGUIDs?.map(\.description), ["08987058-cadc-4b81-b6e1-30de50dcbe96"])
        XCTAssertEqual(policy.deniedAAGUIDs.map(\.description), ["ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"])
        let origins = policy.origins(allowing: ["https://example.com"])
        XCTAssertTrue(origins.allowCrossOrigin)
        XCTAssertEqual(origins.allowedTopOrigins, ["https://shop.example.net"])
        guard case .acceptAndFlag = policy.signCount else { return XCTFail("flag maps to acceptAndFlag") }
        XCTAssertEqual(policy.trust().deniedAAGUIDs, policy.deniedAAGUIDs)
    }

    func testBadValuesNameTheirVariable() {
        for (variable, value) in [
            ("PASSKEY_ALGORITHMS", "-7,ES256"), ("PASSKEY_ALGORITHMS", "-7,-7"), ("PASSKEY_ALGORITHMS", "-1"),
            ("PASSKEY_ALGORITHMS", ","), ("PASSKEY_ALGORITHMS", "-48"),
            ("PASSKEY_REGISTRATION_USER_VERIFICATION", "always"),
            ("PASSKEY_AUTHENTICATION_USER_VERIFICATION", "Required"), ("PASSKEY_RESIDENT_KEY", "yes"),
            ("PASSKEY_HINTS", "usb"), ("PASSKEY_HINTS", "hybrid,hybrid"), ("PASSKEY_ATTESTATION", "basic"),
            ("PASSKEY_AAGUID_ALLOW", "08987058cadc4b81b6e130de50dcbe96"), ("PASSKEY_AAGUID_ALLOW", ","),
            ("PASSKEY_AAGUID_DENY", "08987058-cadc-4b81-b6e1-30de50dcbe9g"),
            ("PASSKEY_TOP_ORIGINS", "shop.example.net"), ("PASSKEY_TOP_ORIGINS", "http://shop.example.net"),
            ("PASSKEY_TOP_ORIGINS", "android:apk-key-hash:PoEW2-U4MCFg2n4bHJF4t1DPUw-4y4TfF1Wf-OJqtQk"),
            ("PASSKEY_SIGN_COUNT", "warn"),
        ] {
            assertRefused([variable: value], naming: variable)
        }
    }

    func testTheMetadataFilesGoTogether() throws {
        assertRefused(["PASSKEY_MDS_BLOB": "/etc/passkey/mds/blob.jwt"], naming: "PASSKEY_MDS_ROOT")
        assertRefused(["PASSKEY_MDS_ROOT": "/etc/passkey/mds/root.pem"], naming: "PASSKEY_MDS_BLOB")
        assertRefused(["PASSKEY_MDS_RELOAD_INTERVAL": "soon"], naming: "PASSKEY_MDS_RELOAD_INTERVAL")
        assertRefused(["PASSKEY_MDS_RELOAD_INTERVAL": "0"], naming: "PASSKEY_MDS_RELOAD_INTERVAL")
        let both = try configuration([
            "PASSKEY_MDS_BLOB": "/m/blob.jwt", "PASSKEY_MDS_ROOT": "/m/root.pem", "PASSKEY_MDS_RELOAD_INTERVAL": "10m",
        ])
        XCTAssertEqual(both.metadataBLOBPath, "/m/blob.jwt")
        XCTAssertEqual(both.metadataRootPath, "/m/root.pem")
        XCTAssertEqual(both.metadataReloadInterval, 600)
        let none = try configuration([:])
        XCTAssertNil(none.metadataBLOBPath)
        XCTAssertEqual(none.metadataReloadInterval, 3600)
    }

    func testOfferedAlgorithmsAreTheAcceptedOnes() throws {
        // Every algorithm the verifier accepts for a credential key may be configured, and nothing else.
        for algorithm in COSEAlgorithm.credentialAlgorithms {
            XCTAssertNil(CeremonyOptions.problem(withAlgorithms: [algorithm]))
        }
        XCTAssertNotNil(CeremonyOptions.problem(withAlgorithms: []))
        XCTAssertNotNil(CeremonyOptions.problem(withAlgorithms: [-257, -49]))
    }
}
