import Crypto
import Encoding
import Foundation
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An Android app configured by its package and certificate alone (`PASSKEY_ANDROID_APPS`), against the real
/// executables: the gateway's `assetlinks.json`, and an app that signs up, signs in and adds a passkey from its
/// `android:apk-key-hash:` origin with the JSON Credential Manager returns, posted as the Kotlin of docs/android.md
/// posts it. Then the start-up checks of the origins and the warning about an RP ID left at `localhost`.
final class AndroidAppFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    /// The stack's `PASSKEY_ANDROID_APPS` is `com.example.app` signed by AB:AB:…:AB; its origin, worked out apart.
    static let fingerprint = Array(repeating: "AB", count: 32).joined(separator: ":")
    static let appOrigin = "android:apk-key-hash:q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s"
    /// Another certificate's origin (CD:CD:…:CD): the same package signed by a key nobody configured.
    static let strangerOrigin = "android:apk-key-hash:zc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc0"

    /// A request's status and JSON body, read raw, as the app's own HTTP code sees them.
    func post(_ stack: Stack, _ path: String, _ body: String, token: String? = nil, method: String = "POST")
        async throws -> (status: Int, json: [String: Any])
    {
        var request = URLRequest(url: stack.gatewayURL.appendingPathComponent(path))
        request.httpMethod = method
        if method != "GET" {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, json)
    }

    /// Client data as Google Play services writes it for a native app.
    func clientData(_ type: String, challenge: String, origin: String) -> [UInt8] {
        Array(
            #"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","androidPackageName":"com.example.app"}"#
                .utf8)
    }

    /// The DER SubjectPublicKeyInfo of a P-256 credential key, which Credential Manager adds as `response.publicKey`.
    func publicKeyDER(_ authenticator: SoftwareAuthenticator) -> [UInt8] {
        guard case .map(let entries) = authenticator.key.coseKeyValue,
            case .bytes(let x)? = entries.first(where: { $0.key == CBORValue(-2) })?.value,
            case .bytes(let y)? = entries.first(where: { $0.key == CBORValue(-3) })?.value
        else { return [] }
        return Hex.decode("3059301306072a8648ce3d020106082a8648ce3d030107034200")! + [4] + x + y
    }

    /// `CreatePublicKeyCredentialResponse.registrationResponseJson` for the options' challenge and RP ID.
    func registrationResponseJSON(
        _ authenticator: SoftwareAuthenticator, options: [String: Any], origin: String = AndroidAppFlowTests.appOrigin
    ) throws -> String {
        let challenge = try XCTUnwrap(options["challenge"] as? String)
        let rpID = try XCTUnwrap((options["rp"] as? [String: Any])?["id"] as? String)
        let data = clientData("webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticator.authenticatorData(
            rpID: rpID, flags: [.userPresent, .userVerified, .backupEligible, .backedUp, .attestedCredentialData],
            signCount: 0)
        let attestation = authenticator.attestationObject(
            authenticatorData: authData, clientDataHash: sha256(data), attestation: .none)
        let id = Base64URL.encode(authenticator.credentialID)
        return """
            {"rawId":"\(id)","authenticatorAttachment":"platform","type":"public-key","id":"\(id)",\
            "response":{"clientDataJSON":"\(Base64URL.encode(data))","attestationObject":"\(Base64URL.encode(attestation))",\
            "transports":["internal","hybrid"],"authenticatorData":"\(Base64URL.encode(authData))",\
            "publicKeyAlgorithm":-7,"publicKey":"\(Base64URL.encode(publicKeyDER(authenticator)))"},\
            "clientExtensionResults":{"credProps":{"rk":true}}}
            """
    }

    /// `PublicKeyCredential.authenticationResponseJson` for the options' challenge and RP ID.
    func authenticationResponseJSON(
        _ authenticator: SoftwareAuthenticator, options: [String: Any], origin: String = AndroidAppFlowTests.appOrigin
    ) throws -> String {
        let challenge = try XCTUnwrap(options["challenge"] as? String)
        let rpID = try XCTUnwrap(options["rpId"] as? String)
        let data = clientData("webauthn.get", challenge: challenge, origin: origin)
        let assertion = authenticator.assertion(
            clientDataJSON: data,
            authenticatorData: authenticator.authenticatorData(
                rpID: rpID, flags: [.userPresent, .userVerified, .backupEligible, .backedUp], signCount: 0))
        let id = Base64URL.encode(authenticator.credentialID)
        return """
            {"rawId":"\(id)","authenticatorAttachment":"platform","type":"public-key","id":"\(id)",\
            "response":{"clientDataJSON":"\(Base64URL.encode(assertion.clientDataJSON))",\
            "authenticatorData":"\(Base64URL.encode(assertion.authenticatorData))",\
            "signature":"\(Base64URL.encode(assertion.signature))","userHandle":"\(Base64URL.encode(authenticator.userHandle))"},\
            "clientExtensionResults":{}}
            """
    }

    /// Signs up from the app; returns the authenticator and the session's access token.
    func signUp(_ stack: Stack) async throws -> (SoftwareAuthenticator, token: String, accountID: String) {
        let email = "android-\(UUID().uuidString.prefix(8))@example.com"
        let start = try await post(
            stack, "/v1/passkeys/account-registrations", #"{"email":"\#(email)","displayName":"Ada"}"#)
        XCTAssertEqual(start.status, 200, "\(start.json)")
        let options = try XCTUnwrap(start.json["publicKey"] as? [String: Any])
        let user = try XCTUnwrap(options["user"] as? [String: Any])
        let authenticator = SoftwareAuthenticator(
            userHandle: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(user["id"] as? String))), keepsZeroCounter: true)
        let registrationID = try XCTUnwrap(start.json["registrationID"] as? String)
        let finish = try await post(
            stack, "/v1/passkeys/account-registrations/finish",
            #"{"registrationID":"\#(registrationID)","credential":\#(try registrationResponseJSON(authenticator, options: options))}"#
        )
        XCTAssertEqual(finish.status, 201, "\(finish.json)")
        return (
            authenticator, try XCTUnwrap(finish.json["accessToken"] as? String),
            try XCTUnwrap(finish.json["accountID"] as? String)
        )
    }

    func testAnAppSignsUpSignsInAndAddsAPasskeyFromItsCertificateAlone() async throws {
        let stack = try await Self.shared.get()
        XCTAssertFalse(
            (stack.environment["PASSKEY_ORIGINS"] ?? "").contains("android:"), "the app's origin is not listed")

        // The domain vouches for the app: both relations, with its certificate.
        let links = try await URLSession.shared.data(
            from: stack.gatewayURL.appendingPathComponent(".well-known/assetlinks.json"))
        let statements = try XCTUnwrap(try JSONSerialization.jsonObject(with: links.0) as? [[String: Any]])
        XCTAssertEqual(
            statements.compactMap { ($0["relation"] as? [String])?.first },
            ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"])
        for statement in statements {
            let target = try XCTUnwrap(statement["target"] as? [String: Any])
            XCTAssertEqual(target["package_name"] as? String, "com.example.app")
            XCTAssertEqual(target["sha256_cert_fingerprints"] as? [String], [Self.fingerprint])
        }

        let (authenticator, token, accountID) = try await signUp(stack)
        let listed = try await post(stack, "/v1/passkeys", "", token: token, method: "GET")
        let passkeys = try XCTUnwrap(listed.json["passkeys"] as? [[String: Any]])
        XCTAssertEqual(passkeys.count, 1)
        XCTAssertEqual(passkeys.first?["transports"] as? [String], ["internal", "hybrid"])
        XCTAssertEqual(passkeys.first?["backupEligible"] as? Bool, true)

        // Sign in with Credential Manager's assertion.
        let start = try await post(stack, "/v1/passkeys/authentications", "{}")
        XCTAssertEqual(start.status, 200)
        let options = try XCTUnwrap(start.json["publicKey"] as? [String: Any])
        let challengeID = try XCTUnwrap(start.json["challengeID"] as? String)
        let signedIn = try await post(
            stack, "/v1/passkeys/authentications/finish",
            #"{"challengeID":"\#(challengeID)","credential":\#(try authenticationResponseJSON(authenticator, options: options))}"#
        )
        XCTAssertEqual(signedIn.status, 200, "\(signedIn.json)")
        XCTAssertEqual(signedIn.json["accountID"] as? String, accountID)
        let session = try XCTUnwrap(signedIn.json["accessToken"] as? String)

        // Add a second passkey to the signed-in account, again as the app sends it.
        let added = SoftwareAuthenticator(userHandle: authenticator.userHandle)
        let begin = try await post(stack, "/v1/passkeys/registrations", "{}", token: session)
        XCTAssertEqual(begin.status, 200, "\(begin.json)")
        let addOptions = try XCTUnwrap(begin.json["publicKey"] as? [String: Any])
        let addChallengeID = try XCTUnwrap(begin.json["challengeID"] as? String)
        let finished = try await post(
            stack, "/v1/passkeys/registrations/finish",
            #"{"challengeID":"\#(addChallengeID)","credential":\#(try registrationResponseJSON(added, options: addOptions))}"#,
            token: session)
        XCTAssertEqual(finished.status, 204, "\(finished.json)")
        let both = try await post(stack, "/v1/passkeys", "", token: session, method: "GET")
        XCTAssertEqual((both.json["passkeys"] as? [[String: Any]])?.count, 2)
    }

    func testAnotherCertificatesOriginIsRefusedAtRegistrationAndSignIn() async throws {
        let stack = try await Self.shared.get()
        let start = try await post(
            stack, "/v1/passkeys/account-registrations",
            #"{"email":"stranger-\#(UUID().uuidString.prefix(8))@example.com","displayName":"Eve"}"#)
        let options = try XCTUnwrap(start.json["publicKey"] as? [String: Any])
        let registrationID = try XCTUnwrap(start.json["registrationID"] as? String)
        let refused = try await post(
            stack, "/v1/passkeys/account-registrations/finish",
            #"{"registrationID":"\#(registrationID)","credential":\#(try registrationResponseJSON(SoftwareAuthenticator(), options: options, origin: Self.strangerOrigin))}"#
        )
        XCTAssertEqual(refused.status, 400, "\(refused.json)")
        XCTAssertEqual(refused.json["code"] as? String, "verification_failed")
        XCTAssertEqual(refused.json["reason"] as? String, "origin_mismatch")

        let (authenticator, _, _) = try await signUp(stack)
        let begin = try await post(stack, "/v1/passkeys/authentications", "{}")
        let signIn = try XCTUnwrap(begin.json["publicKey"] as? [String: Any])
        let challengeID = try XCTUnwrap(begin.json["challengeID"] as? String)
        let stranger = try await post(
            stack, "/v1/passkeys/authentications/finish",
            #"{"challengeID":"\#(challengeID)","credential":\#(try authenticationResponseJSON(authenticator, options: signIn, origin: Self.strangerOrigin))}"#
        )
        XCTAssertEqual(stranger.status, 401, "\(stranger.json)")
        XCTAssertEqual(stranger.json["reason"] as? String, "origin_mismatch")
    }

    // MARK: Start-up checks and the RP ID left at localhost

    func start(_ stack: Stack, _ executable: String, _ changes: [String: String]) throws -> ManagedProcess {
        var environment = stack.environment
        environment["GATEWAY_LISTEN"] = "127.0.0.1:\(freePort())"
        environment["VERIFICATION_SERVICE_LISTEN"] = "127.0.0.1:\(freePort())"
        environment["GRPC_PLAINTEXT"] = "true"
        environment.merge(changes) { _, new in new }
        let process = ManagedProcess(executable: executable, environment: environment, logDirectory: stack.logDirectory)
        try process.start()
        return process
    }

    func testOriginsNoDeviceWouldAcceptStopBothProcessesNamingTheValues() async throws {
        let stack = try await Self.shared.get()
        let cases: [([String: String], [String])] = [
            (
                ["PASSKEY_ORIGINS": "http://localhost:8080,\(Self.strangerOrigin)"],
                [
                    Self.strangerOrigin, Array(repeating: "CD", count: 32).joined(separator: ":"),
                    "com.example.app: \(Self.fingerprint)",
                ]
            ),
            (
                ["PASSKEY_ORIGINS": "http://localhost:8080,https://shop.example.net"],
                ["https://shop.example.net", "PASSKEY_RP_ID (localhost)", "PASSKEY_RELATED_ORIGINS"]
            ),
            (["PASSKEY_ANDROID_APPS": "com.example.app:AB:CD"], ["PASSKEY_ANDROID_APPS", "keytool"]),
        ]
        for (changes, named) in cases {
            for executable in ["gateway", "verification-service"] {
                let process = try start(stack, executable, changes)
                XCTAssertTrue(
                    waitUntil(timeout: 20) { !process.isRunning }, "\(executable) kept running with \(changes)")
                XCTAssertEqual(process.terminate(), 2, "\(executable) \(changes): \(process.log)")
                for value in named {
                    XCTAssertTrue(process.log.contains(value), "\(executable) names \(value): \(process.log)")
                }
            }
        }
        // Listed as a related origin, the same site is fine; the app's own origin listed is fine as well.
        for executable in ["gateway", "verification-service"] {
            let process = try start(
                stack, executable,
                [
                    "PASSKEY_ORIGINS": "http://localhost:8080,https://shop.example.net,\(Self.appOrigin)",
                    "PASSKEY_RELATED_ORIGINS": "https://shop.example.net",
                ])
            XCTAssertTrue(
                waitUntil(timeout: 20) {
                    process.log.contains("service.started") || process.log.contains("gateway.started")
                        || !process.isRunning
                }, "\(executable) did not start")
            XCTAssertTrue(process.isRunning, "\(executable): \(process.log)")
            XCTAssertEqual(process.terminate(), 0, "\(executable): \(process.log)")
        }
    }

    func testALocalhostRelyingPartyIDBeyondLoopbackIsAWarningAtStartAndInReadiness() async throws {
        let stack = try await Self.shared.get()
        let port = freePort()
        let gateway = try start(stack, "gateway", ["GATEWAY_LISTEN": "0.0.0.0:\(port)"])
        defer { _ = gateway.terminate() }
        XCTAssertTrue(waitUntil(timeout: 20) { isListening(port) || !gateway.isRunning }, gateway.log)
        XCTAssertTrue(gateway.isRunning, "a warning, not a refusal: \(gateway.log)")
        let line = try XCTUnwrap(
            gateway.log.split(separator: "\n").first { $0.contains("gateway.relying_party_id_localhost") }, gateway.log)
        XCTAssertTrue(line.contains("level=warning"), String(line))
        XCTAssertTrue(
            line.contains("PASSKEY_RP_ID is localhost while the gateway listens on 0.0.0.0:\(port)"), String(line))
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
        let readiness = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let warnings = try XCTUnwrap(readiness["warnings"] as? [String], "\(readiness)")
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings.first?.hasPrefix("PASSKEY_RP_ID is localhost") == true, "\(warnings)")

        // The stack's own gateway listens on loopback: no warning there.
        let (quiet, _) = try await URLSession.shared.data(from: stack.gatewayURL.appendingPathComponent("readyz"))
        let stackReadiness = try XCTUnwrap(try JSONSerialization.jsonObject(with: quiet) as? [String: Any])
        XCTAssertNil(stackReadiness["warnings"])
        XCTAssertEqual(stackReadiness["status"] as? String, "ready")
    }
}
