import Configuration
import XCTest

final class ConfigurationTests: XCTestCase {
    func testDefaultsServeTheLocalStack() throws {
        let configuration = try ServerConfiguration(environment: [:])
        XCTAssertEqual(configuration.relyingPartyID, "localhost")
        XCTAssertNil(configuration.eventLoopThreads, "one loop per core unless set")
        XCTAssertEqual(try ServerConfiguration(environment: ["EVENT_LOOP_THREADS": "1"]).eventLoopThreads, 1)
        XCTAssertEqual(configuration.relyingPartyName, "Passkey Demo")
        XCTAssertEqual(configuration.origins, ["http://localhost:8080"])
        XCTAssertEqual(configuration.challengeLifetime, 300)
        XCTAssertEqual(configuration.accountRegistrationLifetime, 600)
        XCTAssertEqual(configuration.sessionLifetime, 30 * 86_400)
        XCTAssertEqual(configuration.passwordRateLimitPerEmail, Rate(count: 10, perSeconds: 60))
        XCTAssertEqual(configuration.passwordRateLimitPerEmail?.burst, 10)
        XCTAssertEqual(configuration.passkeyRateLimitPerAddress?.burst, 600)
        XCTAssertEqual(configuration.gatewayListen, ServiceAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(
            configuration.verificationServiceAddresses, [ServiceTarget(address: ServiceAddress(host: "127.0.0.1", port: 50052))])
        XCTAssertEqual(configuration.serviceDiscoveryInterval, 1)
        XCTAssertNil(configuration.databaseURL)
        XCTAssertThrowsError(try configuration.requireDatabaseURL()) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "DATABASE_URL")
        }
    }

    func testValuesAreParsed() throws {
        let configuration = try ServerConfiguration(environment: [
            "PASSKEY_RP_ID": "Example.com",
            "PASSKEY_ORIGINS":
                "https://example.com, https://login.example.com:8443,android:apk-key-hash:"
                + String(repeating: "A", count: 43) + ",ios:bundle-id:com.example.app",
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
            "PASSKEY_ANDROID_APPS": "com.example.app:" + Array(repeating: "ab", count: 32).joined(separator: ":"),
            "PASSKEY_CHALLENGE_LIFETIME": "90s", "PASSKEY_SESSION_LIFETIME": "12h",
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "50/s",
            "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:6001, [::1]:6002", "GATEWAY_LISTEN": "0.0.0.0:0",
        ])
        XCTAssertEqual(configuration.relyingPartyID, "example.com")
        XCTAssertEqual(configuration.origins.count, 4)
        XCTAssertEqual(configuration.androidApps.first?.sha256Fingerprint.prefix(5), "AB:AB")
        XCTAssertEqual(configuration.challengeLifetime, 90)
        XCTAssertEqual(configuration.sessionLifetime, 43_200)
        XCTAssertNil(configuration.passwordRateLimitPerEmail)
        XCTAssertEqual(configuration.passkeyRateLimitPerAddress?.perSecond, 50)
        XCTAssertEqual(
            configuration.verificationServiceAddresses,
            [
                ServiceTarget(address: ServiceAddress(host: "127.0.0.1", port: 6001)),
                ServiceTarget(address: ServiceAddress(host: "::1", port: 6002)),
            ])
        XCTAssertEqual(configuration.gatewayListen.port, 0)
    }

    func testEveryBadValueNamesItsVariable() {
        let cases: [(String, String)] = [
            ("PASSKEY_RP_ID", "exa mple.com"),
            ("PASSKEY_ORIGINS", "ftp://example.com"),
            ("PASSKEY_ORIGINS", "http://example.com"),
            ("PASSKEY_ORIGINS", "https://example.com/path"),
            ("PASSKEY_ORIGINS", "android:apk-key-hash:short"),
            ("PASSKEY_APPLE_APP_IDS", "com.example.app"),
            ("PASSKEY_ANDROID_APPS", "com.example.app:AB:CD"),
            ("PASSKEY_CHALLENGE_LIFETIME", "5 minutes"),
            ("PASSKEY_SESSION_LIFETIME", "-1d"),
            ("PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS", "10/fortnight"),
            ("GATEWAY_LISTEN", "8080"),
            ("SESSION_SERVICE_ADDRESSES", "127.0.0.1:0"),
            ("SESSION_SERVICE_ADDRESSES", "dns://resolver.example/session:50053"),
            ("SESSION_SERVICE_ADDRESSES", "dns:/session:50053"),
            ("SESSION_SERVICE_ADDRESSES", "dns://127.0.0.1:5353"),
            ("SERVICE_DISCOVERY_INTERVAL", "often"),
            ("DATABASE_POOL_SIZE", "1000"),
            ("EVENT_LOOP_THREADS", "0"),
            ("EVENT_LOOP_THREADS", "two"),
            ("GATEWAY_TLS_KEY", "/tmp/key.pem"),
        ]
        for (variable, value) in cases {
            XCTAssertThrowsError(try ServerConfiguration(environment: [variable: value]), "\(variable)=\(value)") {
                let error = $0 as? ConfigurationError
                XCTAssertTrue(
                    error?.variable == variable || (variable == "GATEWAY_TLS_KEY" && error?.variable == "GATEWAY_TLS_CERTIFICATE"),
                    "\(variable)=\(value) gave \(String(describing: error))")
            }
        }
    }

    func testStartAndSignUpLimitsAndSweepingHaveDefaultsAndAreParsed() throws {
        let defaults = try ServerConfiguration(environment: [:])
        XCTAssertEqual(defaults.startRateLimitPerAddress, Rate(count: 6000, perSeconds: 60))
        // 2,000 starts and 50 sign-ups a second on a replica, with bursts at least as large as one address's.
        XCTAssertEqual(defaults.startRateLimitGlobal, Rate(count: 120_000, perSeconds: 60))
        XCTAssertEqual(defaults.startRateLimitGlobal?.perSecond, 2000)
        XCTAssertEqual(defaults.startRateLimitGlobal?.burst, 12_000)
        XCTAssertEqual(defaults.startRateLimitPerAddress?.burst, 600)
        XCTAssertEqual(defaults.signUpRateLimitPerAddress, Rate(count: 30, perSeconds: 60))
        XCTAssertEqual(defaults.signUpRateLimitPerAddress?.burst, 10)
        XCTAssertEqual(defaults.signUpRateLimitGlobal, Rate(count: 3000, perSeconds: 60))
        XCTAssertEqual(defaults.signUpRateLimitGlobal?.burst, 300)
        XCTAssertEqual(defaults.sweepInterval, 2)
        XCTAssertEqual(defaults.sweepBatchSize, 1000)
        XCTAssertEqual(defaults.sweepBatchPause, 0.05)
        XCTAssertEqual(defaults.ceremonyRetention, 60)
        XCTAssertEqual(defaults.sessionRetention, 7 * 86_400)
        XCTAssertEqual(defaults.auditRetention, 365 * 86_400)

        let configured = try ServerConfiguration(environment: [
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_GLOBAL": "300/s",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "5/h", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "0",
            "PASSKEY_SWEEP_INTERVAL": "250ms", "PASSKEY_SWEEP_BATCH_SIZE": "50", "PASSKEY_SWEEP_BATCH_PAUSE": "0",
            "PASSKEY_CEREMONY_RETENTION": "0", "PASSKEY_SESSION_RETENTION": "1d",
        ])
        XCTAssertNil(configured.startRateLimitPerAddress)
        XCTAssertEqual(configured.startRateLimitGlobal?.perSecond, 300)
        XCTAssertEqual(configured.signUpRateLimitPerAddress, Rate(count: 5, perSeconds: 3600))
        XCTAssertNil(configured.signUpRateLimitGlobal)
        XCTAssertEqual(configured.sweepInterval, 0.25)
        XCTAssertEqual(configured.sweepBatchSize, 50)
        XCTAssertEqual(configured.sweepBatchPause, 0)
        XCTAssertEqual(configured.ceremonyRetention, 0)
        XCTAssertEqual(configured.sessionRetention, 86_400)

        let bad: [(String, String)] = [
            ("PASSKEY_RATE_LIMIT_START_PER_ADDRESS", "many"), ("PASSKEY_RATE_LIMIT_START_GLOBAL", "-5/s"),
            ("PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS", "10/week"), ("PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL", "/s"),
            // A sweep interval of zero would spin; retention and the pause may be zero, but not negative.
            ("PASSKEY_SWEEP_INTERVAL", "0"), ("PASSKEY_SWEEP_INTERVAL", "soon"), ("PASSKEY_SWEEP_BATCH_SIZE", "0"),
            ("PASSKEY_SWEEP_BATCH_SIZE", "100001"), ("PASSKEY_SWEEP_BATCH_PAUSE", "-1s"),
            ("PASSKEY_CEREMONY_RETENTION", "-1m"), ("PASSKEY_CEREMONY_RETENTION", "forever"),
            ("PASSKEY_SESSION_RETENTION", "7 days"),
        ]
        for (variable, value) in bad {
            XCTAssertThrowsError(try ServerConfiguration(environment: [variable: value]), "\(variable)=\(value)") {
                XCTAssertEqual(($0 as? ConfigurationError)?.variable, variable, "\(variable)=\(value)")
            }
        }
    }

    func testServiceTargetsInGRPCSyntax() throws {
        let configuration = try ServerConfiguration(environment: [
            "VERIFICATION_SERVICE_ADDRESSES":
                "verification-service:50052, dns:///verification.internal:6000, dns://127.0.0.1:5353/v.test:7000, dns://[::1]/v6.test:7001, dns://10.0.0.10/v.test:7002",
            "SERVICE_DISCOVERY_INTERVAL": "250ms",
        ])
        XCTAssertEqual(
            configuration.verificationServiceAddresses,
            [
                ServiceTarget(address: ServiceAddress(host: "verification-service", port: 50052)),
                ServiceTarget(address: ServiceAddress(host: "verification.internal", port: 6000)),
                ServiceTarget(
                    address: ServiceAddress(host: "v.test", port: 7000),
                    nameServer: ServiceAddress(host: "127.0.0.1", port: 5353)),
                ServiceTarget(
                    address: ServiceAddress(host: "v6.test", port: 7001), nameServer: ServiceAddress(host: "::1", port: 53)),
                ServiceTarget(
                    address: ServiceAddress(host: "v.test", port: 7002),
                    nameServer: ServiceAddress(host: "10.0.0.10", port: 53)),
            ])
        XCTAssertEqual(configuration.serviceDiscoveryInterval, 0.25)
        XCTAssertEqual(configuration.verificationServiceAddresses.map(\.isNumeric), [false, false, false, false, false])
        XCTAssertTrue(ServiceTarget(parsing: "[fd00::1]:80")!.isNumeric)
        XCTAssertTrue(ServiceTarget(parsing: "10.1.2.3:80")!.isNumeric)
        XCTAssertFalse(ServiceTarget(parsing: "10.1.2.256:80")!.isNumeric)
        XCTAssertEqual(ServiceTarget(parsing: "dns://127.0.0.1:5353/v.test:7000")?.description, "dns://127.0.0.1:5353/v.test:7000")
    }
}
