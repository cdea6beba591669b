import Configuration
import Foundation
import GatewayCore
import VerificationServiceCore
import XCTest

/// `PASSKEY_ANDROID_APPS` read once for both processes that use it, the `android:apk-key-hash:` origins made from
/// it, `PASSKEY_RELATED_ORIGINS`, and the start-up checks of the origins (`OriginChecks`).
final class AndroidAppAndOriginCheckTests: XCTestCase {
    // Fingerprints with their origins, worked out independently (Python's hashlib and base64).
    static let upload =
        "DA:2C:9B:75:75:77:6E:B9:33:77:88:2E:ED:31:59:FD:61:4F:82:6A:69:97:C0:2E:12:80:0F:50:8E:27:CB:FC"
    static let uploadOrigin = "android:apk-key-hash:2iybdXV3brkzd4gu7TFZ_WFPgmppl8AuEoAPUI4ny_w"
    static let signing =
        "3B:8A:2D:7C:07:F4:13:6D:BA:40:C7:B0:C5:C5:39:15:A8:1A:98:37:AC:BF:CB:5D:09:CD:FF:4D:51:C0:C3:A2"
    static let signingOrigin = "android:apk-key-hash:O4otfAf0E226QMewxcU5FagamDesv8tdCc3_TVHAw6I"
    static let other = "3E:81:16:DB:E5:38:30:21:60:DA:7E:1B:1C:91:78:B7:50:CF:53:0F:B8:CB:84:DF:17:55:9F:F8:E2:6A:B5:09"
    static let otherOrigin = "android:apk-key-hash:PoEW2-U4MCFg2n4bHJF4t1DPUw-4y4TfF1Wf-OJqtQk"

    func apps(_ value: String) throws -> [AndroidApp] {
        try EnvironmentReader(["PASSKEY_ANDROID_APPS": value]).androidApps()
    }

    func assertRefused(
        _ value: String, mentioning parts: [String], file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try apps(value), file: file, line: line) { error in
            let error = error as? ConfigurationError
            XCTAssertEqual(error?.variable, "PASSKEY_ANDROID_APPS", file: file, line: line)
            for part in parts {
                XCTAssertTrue(
                    error?.problem.contains(part) == true, "\(part) in \(error?.problem ?? "")", file: file, line: line)
            }
        }
    }

    // MARK: PASSKEY_ANDROID_APPS

    func testOneCertificateAnAppIsTheOldFormAndStillReads() throws {
        XCTAssertEqual(try apps(""), [])
        let read = try apps("com.example.app:\(Self.upload)")
        XCTAssertEqual(read, [AndroidApp(packageName: "com.example.app", sha256Fingerprints: [Self.upload])])
        XCTAssertEqual(read.first?.origins, [Self.uploadOrigin])
    }

    func testSeveralCertificatesByBarOrByRepeatedEntriesAreOneApp() throws {
        let joined = try apps("com.example.app:\(Self.upload)|\(Self.signing), org.other.app:\(Self.other)")
        let repeated = try apps(
            "com.example.app:\(Self.upload),org.other.app:\(Self.other),com.example.app:\(Self.signing)")
        let expected = [
            AndroidApp(packageName: "com.example.app", sha256Fingerprints: [Self.upload, Self.signing]),
            AndroidApp(packageName: "org.other.app", sha256Fingerprints: [Self.other]),
        ]
        XCTAssertEqual(joined, expected)
        XCTAssertEqual(repeated, expected)
        XCTAssertEqual(joined.first?.origins, [Self.uploadOrigin, Self.signingOrigin])
    }

    func testFingerprintsAreUppercasedAndCountedOnce() throws {
        let read = try apps(
            "com.example.app:\(Self.upload.lowercased()) | \(Self.upload),com.example.app:\(Self.upload)")
        XCTAssertEqual(read, [AndroidApp(packageName: "com.example.app", sha256Fingerprints: [Self.upload])])
    }

    func testTheOriginAndTheFingerprintConvertBothWays() {
        for (fingerprint, origin) in [
            (Self.upload, Self.uploadOrigin), (Self.signing, Self.signingOrigin), (Self.other, Self.otherOrigin),
        ] {
            XCTAssertEqual(AndroidApp.origin(fingerprint: fingerprint), origin)
            XCTAssertEqual(AndroidApp.fingerprint(origin: origin), fingerprint)
        }
        XCTAssertNil(AndroidApp.origin(fingerprint: "AB:CD"))
        XCTAssertNil(AndroidApp.fingerprint(origin: "android:apk-key-hash:short"))
        XCTAssertNil(
            AndroidApp.fingerprint(origin: Self.uploadOrigin + "="), "padded base64url is not the origin's form")
        XCTAssertNil(AndroidApp.fingerprint(origin: "https://example.com"))
    }

    func testAMalformedEntryNamesTheVariableAndTheExpectedForm() {
        let thirtyOne = Self.upload.split(separator: ":").dropLast().joined(separator: ":")
        let packageForm = "package name like com.example.app"
        let fingerprintForm = "32 colon-separated hex bytes, as keytool"
        assertRefused("com.example.app", mentioning: ["package:FINGERPRINT", packageForm, fingerprintForm])
        assertRefused("example:\(Self.upload)", mentioning: [packageForm, "got example"])
        assertRefused("com.1example.app:\(Self.upload)", mentioning: [packageForm, "com.1example.app"])
        assertRefused("com..app:\(Self.upload)", mentioning: [packageForm])
        assertRefused("com.example-app.x:\(Self.upload)", mentioning: [packageForm])
        assertRefused("com.example.app:AB:CD", mentioning: ["com.example.app", fingerprintForm, "got AB:CD"])
        assertRefused("com.example.app:\(thirtyOne)", mentioning: [fingerprintForm])
        assertRefused("com.example.app:\(Self.upload):00", mentioning: [fingerprintForm])
        assertRefused(
            "com.example.app:\(Self.upload.replacingOccurrences(of: "DA", with: "GZ"))", mentioning: [fingerprintForm])
        assertRefused(
            "com.example.app:\(Self.upload.replacingOccurrences(of: ":", with: ""))", mentioning: [fingerprintForm])
        assertRefused("com.example.app:\(Self.upload)|", mentioning: [fingerprintForm, "got nothing"])
        assertRefused("com.example.app:\(Self.uploadOrigin)", mentioning: [fingerprintForm])
        // Bounded: 16 certificates an app.
        let many = (0..<17).map { index in
            (0..<32).map { String(format: "%02X", ($0 + index) % 256) }.joined(separator: ":")
        }
        assertRefused("com.example.app:" + many.joined(separator: "|"), mentioning: ["at most 16"])
        XCTAssertNoThrow(try apps("com.example.app:" + many.prefix(16).joined(separator: "|")))
    }

    func testBothProcessesThatUseTheAppsReadThem() throws {
        XCTAssertEqual(Processes.readers(of: "PASSKEY_ANDROID_APPS"), ["gateway", "verification-service"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_RELATED_ORIGINS"), ["gateway", "verification-service"])
        let environment = [
            "PASSKEY_RP_ID": "example.com", "PASSKEY_ORIGINS": "https://example.com",
            "PASSKEY_ANDROID_APPS": "com.example.app:\(Self.upload)|\(Self.signing)",
            "PASSKEY_RELATED_ORIGINS": "https://example.net",
        ]
        let gateway = try GatewayConfiguration(environment: environment)
        let verification = try VerificationServiceConfiguration(environment: environment)
        XCTAssertEqual(gateway.androidApps, verification.androidApps)
        XCTAssertEqual(verification.origins, ["https://example.com"], "PASSKEY_ORIGINS as listed")
        XCTAssertEqual(
            verification.allowedOrigins,
            ["https://example.com", "https://example.net", Self.uploadOrigin, Self.signingOrigin],
            "verification accepts the related origins and every app's origins without their being listed")
        XCTAssertEqual(gateway.webAuthnOrigins, ["https://example.com", "https://example.net"])
        // Listed as well changes nothing: each origin once.
        var listed = environment
        listed["PASSKEY_ORIGINS"] = "https://example.com,\(Self.uploadOrigin),https://example.net"
        XCTAssertEqual(
            try VerificationServiceConfiguration(environment: listed).allowedOrigins,
            ["https://example.com", Self.uploadOrigin, "https://example.net", Self.signingOrigin])
        XCTAssertEqual(
            try GatewayConfiguration(environment: listed).webAuthnOrigins,
            ["https://example.com", "https://example.net"])
    }

    func testARelatedOriginMustBeAWebOrigin() {
        for value in [
            "example.net", "ftp://example.net", "http://example.net", "https://example.net/path", Self.uploadOrigin,
        ] {
            for read in [
                { _ = try GatewayConfiguration(environment: ["PASSKEY_RELATED_ORIGINS": value]) },
                { _ = try VerificationServiceConfiguration(environment: ["PASSKEY_RELATED_ORIGINS": value]) },
            ] {
                XCTAssertThrowsError(try read(), value) {
                    XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_RELATED_ORIGINS", value)
                }
            }
        }
    }

    // MARK: Start-up checks

    func check(
        rpID: String, origins: [String], related: [String] = [], apps: [AndroidApp] = []
    ) -> ConfigurationError? {
        do {
            try OriginChecks.check(relyingPartyID: rpID, origins: origins, relatedOrigins: related, androidApps: apps)
            return nil
        } catch {
            return error
        }
    }

    func testOriginsOnTheRelyingPartyIDOrUnderItPass() {
        XCTAssertNil(check(rpID: "localhost", origins: ["http://localhost:8080"]), "the local defaults")
        XCTAssertNil(check(rpID: "localhost", origins: ["http://localhost:39123", "http://app.localhost:8080"]))
        XCTAssertNil(check(rpID: "example.com", origins: ["https://example.com", "https://login.example.com:8443"]))
        XCTAssertNil(check(rpID: "example.com", origins: ["https://a.b.example.com", "ios:bundle-id:com.example.app"]))
    }

    func testAWebOriginOutsideTheRelyingPartyIDIsRefusedUnlessItIsARelatedOrigin() {
        for (rpID, origin) in [
            ("example.com", "https://example.net"), ("example.com", "https://notexample.com"),
            ("example.com", "https://example.com.evil.net"), ("login.example.com", "https://example.com"),
            ("login.example.com", "https://www.example.com"), ("localhost", "http://127.0.0.1:8080"),
            ("localhost", "https://example.com"),
        ] {
            let error = check(rpID: rpID, origins: [origin])
            XCTAssertEqual(error?.variable, "PASSKEY_ORIGINS", "\(origin) for \(rpID)")
            XCTAssertTrue(
                error?.problem.hasPrefix("\(origin) is neither PASSKEY_RP_ID (\(rpID))") == true,
                "\(error?.problem ?? "")")
            XCTAssertTrue(error?.problem.contains("PASSKEY_RELATED_ORIGINS") == true)
            XCTAssertNil(
                check(rpID: rpID, origins: [origin], related: [origin]), "\(origin) for \(rpID), listed as related")
        }
        // Another related origin does not cover it.
        XCTAssertEqual(
            check(rpID: "example.com", origins: ["https://example.net"], related: ["https://example.org"])?.variable,
            "PASSKEY_ORIGINS")
    }

    func testAnAppOriginNoConfiguredAppAccountsForIsRefusedNamingBoth() throws {
        let app = AndroidApp(packageName: "com.example.app", sha256Fingerprints: [Self.upload, Self.signing])
        let error = try XCTUnwrap(
            check(rpID: "example.com", origins: ["https://example.com", Self.otherOrigin], apps: [app]))
        XCTAssertEqual(error.variable, "PASSKEY_ORIGINS")
        XCTAssertTrue(error.problem.hasPrefix("\(Self.otherOrigin) (the certificate \(Self.other))"), error.problem)
        XCTAssertTrue(error.problem.contains("com.example.app: \(Self.upload)|\(Self.signing)"), error.problem)
        XCTAssertTrue(error.problem.contains("PASSKEY_ANDROID_APPS"), error.problem)
        // A listed origin that an app accounts for passes, as does the app's without being listed.
        XCTAssertNil(check(rpID: "example.com", origins: ["https://example.com", Self.signingOrigin], apps: [app]))
        XCTAssertNil(check(rpID: "example.com", origins: ["https://example.com"], apps: [app]))
        // With no app configured, listed app origins are the old way to allow them, and keep working.
        XCTAssertNil(check(rpID: "example.com", origins: ["https://example.com", Self.otherOrigin]))
    }

    func testTheProcessesRunTheChecksOnWhatTheyRead() throws {
        let environment = [
            "PASSKEY_RP_ID": "example.com", "PASSKEY_ORIGINS": "https://example.com,\(Self.otherOrigin)",
            "PASSKEY_ANDROID_APPS": "com.example.app:\(Self.upload)",
        ]
        XCTAssertThrowsError(try GatewayConfiguration(environment: environment).checkOrigins()) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_ORIGINS")
        }
        XCTAssertThrowsError(try VerificationServiceConfiguration(environment: environment).checkOrigins()) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_ORIGINS")
        }
        var related = environment
        related["PASSKEY_ORIGINS"] = "https://example.com,https://shop.example.net"
        related["PASSKEY_RELATED_ORIGINS"] = "https://shop.example.net"
        XCTAssertNoThrow(try GatewayConfiguration(environment: related).checkOrigins())
        XCTAssertNoThrow(try VerificationServiceConfiguration(environment: related).checkOrigins())
        XCTAssertNoThrow(try GatewayConfiguration(environment: [:]).checkOrigins(), "the defaults pass")
        XCTAssertNoThrow(try VerificationServiceConfiguration(environment: [:]).checkOrigins())
    }

    // MARK: The RP ID left at localhost

    func testALocalhostRelyingPartyIDBeyondLoopbackIsAWarning() throws {
        for listen in ["0.0.0.0:8080", "[::]:8080", "10.0.0.5:8080", "gateway.internal:8080"] {
            let configuration = try GatewayConfiguration(environment: ["GATEWAY_LISTEN": listen])
            let warning = try XCTUnwrap(configuration.relyingPartyIDWarning, listen)
            XCTAssertTrue(warning.hasPrefix("PASSKEY_RP_ID is localhost while the gateway listens on"), warning)
            XCTAssertTrue(warning.contains(configuration.gatewayListen.description), warning)
        }
        for listen in ["127.0.0.1:8080", "127.0.0.2:8080", "[::1]:8080", "localhost:8080"] {
            XCTAssertNil(
                try GatewayConfiguration(environment: ["GATEWAY_LISTEN": listen]).relyingPartyIDWarning, listen)
        }
        XCTAssertNil(
            try GatewayConfiguration(environment: [
                "GATEWAY_LISTEN": "0.0.0.0:8080", "PASSKEY_RP_ID": "example.com",
                "PASSKEY_ORIGINS": "https://example.com",
            ]).relyingPartyIDWarning)
    }
}
