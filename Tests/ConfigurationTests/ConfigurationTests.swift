import ChallengeServiceCore
import Configuration
import GatewayCore
import SessionServiceCore
import VerificationServiceCore
import WebAuthn
import XCTest

/// Each process's configuration, read by the process's own type: what the process reads, and nothing else.
enum Processes {
    static let configurations: [String: @Sendable (EnvironmentReader) throws -> Void] = [
        "gateway": { _ = try GatewayConfiguration($0) },
        "challenge-service": { _ = try ChallengeServiceConfiguration($0) },
        "verification-service": { _ = try VerificationServiceConfiguration($0) },
        "session-service": { _ = try SessionServiceConfiguration($0) },
    ]

    /// The variables each process's configuration reads, recorded while it reads `environment` (the defaults
    /// unless given).
    static func variablesRead(in environment: [String: String] = [:]) -> [String: Set<String>] {
        configurations.mapValues { read in
            let log = EnvironmentReader.ReadLog()
            try? read(EnvironmentReader(environment, log: log))
            return log.read
        }
    }

    /// The processes whose configuration reads `variable`.
    static func readers(of variable: String) -> Set<String> {
        Set(variablesRead().filter { $0.value.contains(variable) }.keys)
    }
}

final class ConfigurationTests: XCTestCase {
    func testDefaultsServeTheLocalStack() throws {
        let configuration = try GatewayConfiguration(environment: [:])
        XCTAssertEqual(configuration.relyingPartyID, "localhost")
        XCTAssertNil(configuration.eventLoopThreads, "one loop per core unless set")
        XCTAssertEqual(try GatewayConfiguration(environment: ["EVENT_LOOP_THREADS": "1"]).eventLoopThreads, 1)
        XCTAssertEqual(configuration.origins, ["http://localhost:8080"])
        let challenge = try ChallengeServiceConfiguration(environment: [:])
        XCTAssertEqual(challenge.relyingPartyName, "Passkey Demo")
        XCTAssertEqual(challenge.challengeLifetime, 300)
        XCTAssertEqual(challenge.accountRegistrationLifetime, 600)
        XCTAssertEqual(challenge.process.listen, ServiceAddress(host: "127.0.0.1", port: 50051))
        XCTAssertEqual(challenge.process.listenVariable, "CHALLENGE_SERVICE_LISTEN")
        let verification = try VerificationServiceConfiguration(environment: [:])
        XCTAssertEqual(verification.sessionLifetime, 30 * 86_400)
        XCTAssertEqual(verification.origins, ["http://localhost:8080"])
        XCTAssertEqual(try SessionServiceConfiguration(environment: [:]).sessionLifetime, 30 * 86_400)
        XCTAssertEqual(configuration.passwordRateLimitPerEmail, Rate(count: 10, perSeconds: 60))
        XCTAssertEqual(configuration.passwordRateLimitPerEmail?.burst, 10)
        XCTAssertEqual(configuration.passkeyRateLimitPerAddress?.burst, 600)
        XCTAssertEqual(configuration.gatewayListen, ServiceAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(
            configuration.verificationServiceAddresses,
            [ServiceTarget(address: ServiceAddress(host: "127.0.0.1", port: 50052))])
        XCTAssertEqual(configuration.serviceDiscoveryInterval, 1)
        XCTAssertNil(verification.process.databaseURL)
        XCTAssertThrowsError(try verification.process.requireDatabaseURL()) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "DATABASE_URL")
        }
        XCTAssertThrowsError(try GRPCTransportConfiguration.require(verification.process.grpcTransport)) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "GRPC_TLS_CERTIFICATE")
        }
    }

    /// The gateway's default target for a service is where that service listens, as configured.
    func testTheGatewayFindsTheServicesWhereTheyListen() throws {
        let environment = ["SESSION_SERVICE_LISTEN": "127.0.0.1:6003", "CHALLENGE_SERVICE_ADDRESSES": "10.0.0.1:7001"]
        let gateway = try GatewayConfiguration(environment: environment)
        XCTAssertEqual(
            gateway.sessionServiceAddresses, [ServiceTarget(address: ServiceAddress(host: "127.0.0.1", port: 6003))])
        XCTAssertEqual(
            gateway.challengeServiceAddresses, [ServiceTarget(address: ServiceAddress(host: "10.0.0.1", port: 7001))])
        XCTAssertEqual(try SessionServiceConfiguration(environment: environment).process.listen.port, 6003)
    }

    /// A process reads its own variables and no others: a bad value of a variable that only other processes use
    /// does not stop it.
    func testEachProcessReadsOnlyItsOwnVariables() throws {
        let read = Processes.variablesRead()
        XCTAssertEqual(Set(read.keys), ["gateway", "challenge-service", "verification-service", "session-service"])
        // Shared by all, owned by one, shared by some.
        for process in read.keys {
            XCTAssertTrue(read[process]!.contains("PASSKEY_RP_ID"), process)
            XCTAssertTrue(read[process]!.contains("EVENT_LOOP_THREADS"), process)
        }
        XCTAssertEqual(Processes.readers(of: "SMTP_URL"), ["session-service"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_CHALLENGE_LIFETIME"), ["challenge-service"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_TRUSTED_PROXIES"), ["gateway"])
        // session-service reads the origins for the tokens' default issuer.
        XCTAssertEqual(
            Processes.readers(of: "PASSKEY_ORIGINS"), ["gateway", "verification-service", "session-service"])
        XCTAssertEqual(
            Processes.readers(of: "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE"), ["verification-service", "session-service"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_CORS_ORIGINS"), ["gateway"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_ALGORITHMS"), ["gateway", "verification-service"])
        XCTAssertEqual(Processes.readers(of: "PASSKEY_BACKUP_ELIGIBILITY_CHANGE"), ["verification-service"])
        XCTAssertEqual(
            Processes.readers(of: "DATABASE_URL"), ["challenge-service", "verification-service", "session-service"])
        XCTAssertEqual(
            Processes.readers(of: "PASSKEY_SWEEP_INTERVAL"), ["challenge-service", "session-service"])

        // Session-service's relay is nobody else's business, and the gateway's limits are not the services'.
        let bad = ["SMTP_URL": "http://mail.example", "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "often"]
        XCTAssertThrowsError(try SessionServiceConfiguration(environment: bad)) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "SMTP_URL")
        }
        XCTAssertThrowsError(try GatewayConfiguration(environment: bad)) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL")
        }
        XCTAssertNoThrow(try ChallengeServiceConfiguration(environment: bad))
        XCTAssertNoThrow(try VerificationServiceConfiguration(environment: bad))
    }

    func testValuesAreParsed() throws {
        let environment = [
            "PASSKEY_RP_ID": "Example.com",
            "PASSKEY_ORIGINS":
                "https://example.com, https://login.example.com:8443,android:apk-key-hash:"
                + String(repeating: "A", count: 43) + ",ios:bundle-id:com.example.app",
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
            "PASSKEY_ANDROID_APPS": "com.example.app:" + Array(repeating: "ab", count: 32).joined(separator: ":"),
            "PASSKEY_CHALLENGE_LIFETIME": "90s", "PASSKEY_SESSION_LIFETIME": "12h",
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "0", "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "50/s",
            "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:6001, [::1]:6002", "GATEWAY_LISTEN": "0.0.0.0:0",
        ]
        let configuration = try GatewayConfiguration(environment: environment)
        XCTAssertEqual(configuration.relyingPartyID, "example.com")
        XCTAssertEqual(configuration.origins.count, 4)
        XCTAssertEqual(configuration.androidApps.first?.sha256Fingerprints.first?.prefix(5), "AB:AB")
        XCTAssertEqual(try ChallengeServiceConfiguration(environment: environment).challengeLifetime, 90)
        XCTAssertEqual(try ChallengeServiceConfiguration(environment: environment).relyingPartyID, "example.com")
        XCTAssertEqual(try VerificationServiceConfiguration(environment: environment).sessionLifetime, 43_200)
        XCTAssertEqual(try VerificationServiceConfiguration(environment: environment).origins.count, 4)
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
            ("PASSKEY_RP_ID", "exa mple.com"), ("PASSKEY_RP_ID", "co.uk"), ("PASSKEY_RP_ID", "GitHub.io"),
            ("PASSKEY_ORIGINS", "ftp://example.com"),
            ("PASSKEY_ORIGINS", "http://example.com"),
            ("PASSKEY_ORIGINS", "https://example.com/path"),
            ("PASSKEY_ORIGINS", "android:apk-key-hash:short"),
            ("PASSKEY_APPLE_APP_IDS", "com.example.app"),
            ("PASSKEY_ANDROID_APPS", "com.example.app:AB:CD"), ("PASSKEY_ANDROID_APPS", "app:AB:CD"),
            ("PASSKEY_RELATED_ORIGINS", "shop.example.net"),
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
            ("SMTP_URL", "smtp://user@mail.example"), ("SMTP_FROM", "nobody"), ("SMTP_STARTTLS", "maybe"),
            ("SMTP_PASSWORD", "secret"), ("PASSKEY_RECOVERY_REVOKES_SESSIONS", "yes"),
            ("CHALLENGE_SERVICE_LISTEN", "nowhere"), ("METRICS_LISTEN", "9090"),
            ("PASSKEY_SESSION_TOKENS", "paseto"), ("PASSKEY_TOKEN_ALGORITHM", "HS256"),
            ("PASSKEY_TOKEN_ALGORITHM", "none"), ("PASSKEY_ACCESS_TOKEN_LIFETIME", "5s"),
            ("PASSKEY_ACCESS_TOKEN_LIFETIME", "7d"), ("PASSKEY_REFRESH_REUSE_WINDOW", "1h"),
            ("PASSKEY_TOKEN_ISSUER", "auth.example.com"), ("PASSKEY_TOKEN_ISSUER", "https://auth.example.com/?x"),
            ("PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE", "/nonexistent/kek"),
            ("PASSKEY_CORS_ORIGINS", "app.example.com"), ("PASSKEY_CORS_ORIGINS", "android:apk-key-hash:x"),
            ("PASSKEY_REFRESH_COOKIE", "on"), ("PASSKEY_SIGNING_KEY_PUBLISH_DELAY", "3s"),
            ("PASSKEY_BACKUP_ELIGIBILITY_CHANGE", "ignore"), ("PASSKEY_BACKUP_ELIGIBILITY_CHANGE", "Update"),
        ]
        for (variable, value) in cases {
            // Every process that reads the variable stops, naming it; the others take no notice.
            let readers = Processes.readers(of: variable)
            XCTAssertFalse(readers.isEmpty, "\(variable) is read by no process")
            for (process, read) in Processes.configurations {
                let environment = EnvironmentReader([variable: value])
                guard readers.contains(process) else {
                    XCTAssertNoThrow(try read(environment), "\(process): \(variable)=\(value)")
                    continue
                }
                XCTAssertThrowsError(try read(environment), "\(process): \(variable)=\(value)") {
                    let error = $0 as? ConfigurationError
                    let named =
                        [
                            "GATEWAY_TLS_KEY": "GATEWAY_TLS_CERTIFICATE", "SMTP_PASSWORD": "SMTP_USERNAME",
                        ][variable] ?? variable
                    XCTAssertEqual(error?.variable, named, "\(process): \(variable)=\(value)")
                }
            }
        }
    }

    func testAPublicSuffixIsNoRelyingPartyIDButANameUnderItOrAnIntranetNameIs() throws {
        for suffix in ["com", "co.uk", "github.io", "xn--55qx5d.cn"] {
            XCTAssertThrowsError(try EnvironmentReader(["PASSKEY_RP_ID": suffix]).relyingPartyID(), suffix) {
                let error = $0 as? ConfigurationError
                XCTAssertEqual(error?.variable, "PASSKEY_RP_ID")
                XCTAssertEqual(
                    error?.problem,
                    "\(suffix) is a public suffix (Public Suffix List), and browsers make no passkey for one: use your own domain under it"
                )
            }
        }
        for id in ["example.com", "example.co.uk", "me.github.io", "localhost", "intranet", "login.corp.example"] {
            XCTAssertEqual(try EnvironmentReader(["PASSKEY_RP_ID": id]).relyingPartyID(), id)
        }
    }

    func testABackupEligibilityChangeIsUpdatedUnlessRejectIsSet() throws {
        XCTAssertEqual(try VerificationServiceConfiguration(environment: [:]).backupEligibilityChange, .update)
        XCTAssertEqual(
            try VerificationServiceConfiguration(environment: ["PASSKEY_BACKUP_ELIGIBILITY_CHANGE": "update"])
                .backupEligibilityChange, .update)
        XCTAssertEqual(
            try VerificationServiceConfiguration(environment: ["PASSKEY_BACKUP_ELIGIBILITY_CHANGE": "reject"])
                .backupEligibilityChange, .reject)
        XCTAssertThrowsError(
            try VerificationServiceConfiguration(environment: ["PASSKEY_BACKUP_ELIGIBILITY_CHANGE": "refuse"])
        ) {
            let error = $0 as? ConfigurationError
            XCTAssertEqual(error?.variable, "PASSKEY_BACKUP_ELIGIBILITY_CHANGE")
            XCTAssertEqual(error?.problem, "expected update or reject, got refuse")
        }
    }

    func testStartAndSignUpLimitsAndSweepingHaveDefaultsAndAreParsed() throws {
        let defaults = try GatewayConfiguration(environment: [:])
        let sessionDefaults = try SessionServiceConfiguration(environment: [:])
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
        XCTAssertEqual(sessionDefaults.sweep.interval, 2)
        XCTAssertEqual(sessionDefaults.sweep.batchSize, 1000)
        XCTAssertEqual(sessionDefaults.sweep.batchPause, 0.05)
        XCTAssertEqual(sessionDefaults.ceremonyRetention, 60)
        XCTAssertEqual(sessionDefaults.sessionRetention, 7 * 86_400)
        XCTAssertEqual(sessionDefaults.auditRetention, 365 * 86_400)
        XCTAssertEqual(sessionDefaults.mail.from, "no-reply@localhost")
        XCTAssertTrue(sessionDefaults.recoveryRevokesSessions)

        let environment = [
            "PASSKEY_RATE_LIMIT_START_PER_ADDRESS": "0", "PASSKEY_RATE_LIMIT_START_GLOBAL": "300/s",
            "PASSKEY_RATE_LIMIT_SIGNUP_PER_ADDRESS": "5/h", "PASSKEY_RATE_LIMIT_SIGNUP_GLOBAL": "0",
            "PASSKEY_SWEEP_INTERVAL": "250ms", "PASSKEY_SWEEP_BATCH_SIZE": "50", "PASSKEY_SWEEP_BATCH_PAUSE": "0",
            "PASSKEY_CEREMONY_RETENTION": "0", "PASSKEY_SESSION_RETENTION": "1d",
        ]
        let configured = try GatewayConfiguration(environment: environment)
        let session = try SessionServiceConfiguration(environment: environment)
        XCTAssertEqual(try ChallengeServiceConfiguration(environment: environment).sweep, session.sweep)
        XCTAssertNil(configured.startRateLimitPerAddress)
        XCTAssertEqual(configured.startRateLimitGlobal?.perSecond, 300)
        XCTAssertEqual(configured.signUpRateLimitPerAddress, Rate(count: 5, perSeconds: 3600))
        XCTAssertNil(configured.signUpRateLimitGlobal)
        XCTAssertEqual(session.sweep.interval, 0.25)
        XCTAssertEqual(session.sweep.batchSize, 50)
        XCTAssertEqual(session.sweep.batchPause, 0)
        XCTAssertEqual(session.ceremonyRetention, 0)
        XCTAssertEqual(session.sessionRetention, 86_400)

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
            let readers = Processes.readers(of: variable)
            XCTAssertFalse(readers.isEmpty, variable)
            for process in readers {
                XCTAssertThrowsError(try Processes.configurations[process]!(EnvironmentReader([variable: value]))) {
                    XCTAssertEqual(($0 as? ConfigurationError)?.variable, variable, "\(process): \(variable)=\(value)")
                }
            }
        }
    }

    func testServiceTargetsInGRPCSyntax() throws {
        let configuration = try GatewayConfiguration(environment: [
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
                    address: ServiceAddress(host: "v6.test", port: 7001),
                    nameServer: ServiceAddress(host: "::1", port: 53)),
                ServiceTarget(
                    address: ServiceAddress(host: "v.test", port: 7002),
                    nameServer: ServiceAddress(host: "10.0.0.10", port: 53)),
            ])
        XCTAssertEqual(configuration.serviceDiscoveryInterval, 0.25)
        XCTAssertEqual(
            configuration.verificationServiceAddresses.map(\.isNumeric), [false, false, false, false, false])
        XCTAssertTrue(ServiceTarget(parsing: "[fd00::1]:80")!.isNumeric)
        XCTAssertTrue(ServiceTarget(parsing: "10.1.2.3:80")!.isNumeric)
        XCTAssertFalse(ServiceTarget(parsing: "10.1.2.256:80")!.isNumeric)
        XCTAssertEqual(
            ServiceTarget(parsing: "dns://127.0.0.1:5353/v.test:7000")?.description, "dns://127.0.0.1:5353/v.test:7000")
    }
}

/// How sessions are handed out: the defaults, the key-encryption key's forms, and the refusal to start signing
/// without one.
final class SessionTokenConfigurationTests: XCTestCase {
    func testDefaultsDeriveTheIssuerFromTheOriginsAndAskForAKeyEncryptionKey() throws {
        let defaults = try SessionTokenConfiguration(EnvironmentReader([:]))
        XCTAssertEqual(defaults.kind, .jwt)
        XCTAssertEqual(defaults.issuer, "http://localhost:8080")
        XCTAssertEqual(defaults.audience, defaults.issuer)
        XCTAssertEqual(defaults.accessTokenLifetime, 600)
        XCTAssertEqual(defaults.algorithm, "ES256")
        XCTAssertEqual(defaults.reuseWindow, 10)
        XCTAssertNil(defaults.keyEncryptionKey)
        XCTAssertThrowsError(try defaults.requireKeyEncryptionKey()) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE")
        }
        let android = try SessionTokenConfiguration(
            EnvironmentReader([
                "PASSKEY_ORIGINS": "android:apk-key-hash:" + String(repeating: "A", count: 43)
                    + ",https://auth.example.com"
            ]))
        XCTAssertEqual(android.issuer, "https://auth.example.com", "the first web origin")
    }

    func testTheKeyEncryptionKeyIsReadAsHexOrBase64AndNothingElse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bytes = (0..<32).map { UInt8($0) }
        let forms = [
            bytes.map { String(format: "%02x", $0) }.joined() + "\n",
            Data(bytes).base64EncodedString(),
        ]
        for (index, text) in forms.enumerated() {
            let file = directory.appendingPathComponent("kek\(index)")
            try text.write(to: file, atomically: true, encoding: .utf8)
            let configuration = try SessionTokenConfiguration(
                EnvironmentReader(["PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": file.path]))
            XCTAssertEqual(try configuration.requireKeyEncryptionKey(), bytes, text)
        }
        for (index, text) in [
            "", "00ff", String(repeating: "zz", count: 32), Data(bytes.prefix(16)).base64EncodedString(),
        ]
        .enumerated() {
            let file = directory.appendingPathComponent("bad\(index)")
            try text.write(to: file, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(
                try SessionTokenConfiguration(EnvironmentReader(["PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE": file.path])),
                text
            ) { XCTAssertEqual(($0 as? ConfigurationError)?.variable, "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE") }
        }
    }
}
