import Crypto
import Encoding
import Foundation
import PasskeyClient
import PostgresTestSupport
import SoftwareAuthenticator
import WebAuthn
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The WebAuthn policy variables against the real executables, each both ways: a stack with the defaults and a
/// stack with every variable set otherwise. The options the gateway offers show the policy, and verification
/// enforces the same one.
final class WebAuthnPolicyTests: XCTestCase {
    static let deniedModel = AAGUID(bytes: Array(repeating: 0xDD, count: 16))
    static let otherModel = AAGUID(bytes: Array(repeating: 0x0E, count: 16))
    /// SoftwareAuthenticator's default AAGUID: the one model the configured stack allows.
    static let allowedModel = AAGUID(bytes: Array(repeating: 0xAA, count: 16))

    static let standard = SharedStack()
    static let configured = SharedStack {
        try await Stack(environment: [
            "PASSKEY_ALGORITHMS": "-7,-65535",
            "PASSKEY_REGISTRATION_USER_VERIFICATION": "preferred",
            "PASSKEY_AUTHENTICATION_USER_VERIFICATION": "preferred",
            "PASSKEY_RESIDENT_KEY": "preferred",
            "PASSKEY_HINTS": "client-device,hybrid",
            "PASSKEY_ATTESTATION": "direct",
            "PASSKEY_AAGUID_ALLOW": "\(allowedModel),\(deniedModel)",
            "PASSKEY_AAGUID_DENY": "\(deniedModel)",
            "PASSKEY_TOP_ORIGINS": Stack.origin,
            "PASSKEY_SIGN_COUNT": "flag",
        ])
    }

    override class func tearDown() {
        standard.stop()
        configured.stop()
    }

    // MARK: Helpers

    /// A request's status and JSON body, read raw (the members the typed operations do not decode).
    func raw(_ stack: Stack, _ method: String, _ path: String, token: String? = nil, body: String? = nil) async throws
        -> (status: Int, json: [String: Any])
    {
        var request = URLRequest(url: stack.gatewayURL.appendingPathComponent(path))
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, json)
    }

    func token(_ client: PasskeyAPIClient) async throws -> String {
        let token = try await client.accessToken()
        return try XCTUnwrap(token?.value)
    }

    /// A registration whose client data the test writes (a topOrigin, a padded challenge).
    func finish(
        _ flows: Flows, _ client: PasskeyAPIClient, start: PasskeyRegistrationStart,
        authenticator: SoftwareAuthenticator,
        clientData: [UInt8], flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData]
    ) async -> Outcome<NoContent> {
        let authData = authenticator.authenticatorData(rpID: start.relyingPartyID, flags: flags, signCount: 0)
        let registration = RegistrationResponse(
            credentialID: authenticator.credentialID, clientDataJSON: clientData,
            attestationObject: authenticator.attestationObject(
                authenticatorData: authData, clientDataHash: sha256(clientData), attestation: .none),
            transports: ["internal"])
        return await flows.outcome(
            PasskeyRegistrationFinishOperation(
                challengeID: start.challengeID, credential: flows.credential(registration), encoding: .flat),
            with: client)
    }

    func register(
        _ flows: Flows, _ client: PasskeyAPIClient, _ authenticator: SoftwareAuthenticator,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        mode: RegistrationMode = .modal
    ) async throws -> Outcome<NoContent> {
        let start = await flows.beginRegistration(client, mode: mode)
        XCTAssertEqual(start.status, 200, start.description)
        return await flows.finishRegistration(
            client, start: try start.get(), authenticator: authenticator, flags: flags)
    }

    /// A passkey account whose passkey is `authenticator`'s, and a signed-in client from a first sign-in.
    func passkeyAccount(_ flows: Flows, _ authenticator: inout SoftwareAuthenticator) async throws -> PasskeyAPIClient {
        let created = try await flows.createPasskeyAccount(authenticator: &authenticator, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        let signedIn = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(signedIn.status, 200, signedIn.description)
        return signedIn.client
    }

    // MARK: Options

    func testTheOptionsOfferTheConfiguredPolicy() async throws {
        for (shared, configured) in [(Self.standard, false), (Self.configured, true)] {
            let stack = try await shared.get()
            let flows = Flows(stack)
            let user = try await flows.passwordUser()
            let start = try await raw(stack, "POST", "/v1/passkeys/registrations", token: try await token(user.client))
            XCTAssertEqual(start.status, 200)
            let creation = try XCTUnwrap(start.json["publicKey"] as? [String: Any])
            let algorithms = (creation["pubKeyCredParams"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int }
            let selection = creation["authenticatorSelection"] as? [String: Any]
            let signUp = try await raw(stack, "POST", "/v1/passkeys/account-registrations", body: "{}")
            let signUpOptions = try XCTUnwrap(signUp.json["publicKey"] as? [String: Any])
            let signIn = try await raw(stack, "POST", "/v1/passkeys/authentications", body: "{}")
            let request = try XCTUnwrap(signIn.json["publicKey"] as? [String: Any])
            if configured {
                XCTAssertEqual(algorithms, [-7, -65535])
                XCTAssertEqual(selection?["userVerification"] as? String, "preferred")
                XCTAssertEqual(selection?["residentKey"] as? String, "preferred")
                XCTAssertEqual(selection?["requireResidentKey"] as? Bool, false)
                XCTAssertEqual(creation["attestation"] as? String, "direct")
                XCTAssertEqual(creation["hints"] as? [String], ["client-device", "hybrid"])
                XCTAssertEqual(request["userVerification"] as? String, "preferred")
                XCTAssertEqual(request["hints"] as? [String], ["client-device", "hybrid"])
            } else {
                XCTAssertEqual(algorithms, CeremonyOptions.standard.algorithms)
                XCTAssertFalse(algorithms?.contains(-65535) ?? true)
                XCTAssertEqual(selection?["userVerification"] as? String, "required")
                XCTAssertEqual(selection?["residentKey"] as? String, "required")
                XCTAssertEqual(selection?["requireResidentKey"] as? Bool, true)
                XCTAssertEqual(creation["attestation"] as? String, "none")
                XCTAssertNil(creation["hints"])
                XCTAssertEqual(request["userVerification"] as? String, "required")
                XCTAssertNil(request["hints"])
            }
            // Adding a passkey and creating an account offer the same.
            XCTAssertEqual(
                (signUpOptions["pubKeyCredParams"] as? [[String: Any]])?.compactMap { $0["alg"] as? Int }, algorithms)
            XCTAssertEqual(
                (signUpOptions["authenticatorSelection"] as? [String: Any])?["userVerification"] as? String,
                selection?["userVerification"] as? String)
        }
    }

    // MARK: Algorithms: offered equals accepted

    func testOnlyTheOfferedAlgorithmsRegister() async throws {
        let standard = Flows(try await Self.standard.get())
        let configured = Flows(try await Self.configured.get())
        // EdDSA: offered by default, not by the configured list.
        let user = try await standard.passwordUser()
        await assertEqual(
            try await register(standard, user.client, SoftwareAuthenticator(algorithm: .edDSA)).status, 204)
        let restricted = try await configured.passwordUser()
        let eddsa = try await register(configured, restricted.client, SoftwareAuthenticator(algorithm: .edDSA))
        XCTAssertEqual(eddsa.status, 400, eddsa.description)
        XCTAssertEqual(eddsa.reason, .algorithmNotAllowed)
        // RS1 (TPM-backed Windows Hello): refused unless listed; listed, it registers and signs in.
        let rs1Refused = try await register(standard, user.client, SoftwareAuthenticator(algorithm: .rs1))
        XCTAssertEqual(rs1Refused.reason, .algorithmNotAllowed, rs1Refused.description)
        var windowsHello = SoftwareAuthenticator(algorithm: .rs1)
        _ = try await passkeyAccount(configured, &windowsHello)
    }

    // MARK: User verification, both ceremonies; Automatic Passkey Upgrade still works

    func testUserVerificationFollowsThePolicyOfEachCeremony() async throws {
        let standard = Flows(try await Self.standard.get())
        let configured = Flows(try await Self.configured.get())
        let noUV: AuthenticatorData.Flags = [.userPresent, .attestedCredentialData]
        // Preferred (the opt-out for security keys without a PIN): UV = 0 registers and signs in.
        let user = try await configured.passwordUser()
        await assertEqual(try await register(configured, user.client, SoftwareAuthenticator(), flags: noUV).status, 204)
        var lenient = SoftwareAuthenticator()
        _ = try await passkeyAccount(configured, &lenient)
        await assertEqual(try await configured.signInWithPasskey(&lenient, flags: [.userPresent]).status, 200)
        // Required, the default: UV = 0 is refused at registration and at sign-in.
        let strictUser = try await standard.passwordUser()
        let unverified = try await register(standard, strictUser.client, SoftwareAuthenticator(), flags: noUV)
        XCTAssertEqual(unverified.status, 400, unverified.description)
        XCTAssertEqual(unverified.reason, .userVerificationRequired)
        var strict = SoftwareAuthenticator()
        _ = try await passkeyAccount(standard, &strict)
        let noUVSignIn = try await standard.signInWithPasskey(&strict, flags: [.userPresent])
        XCTAssertEqual(noUVSignIn.status, 401, noUVSignIn.description)
        XCTAssertEqual(noUVSignIn.reason, .userVerificationRequired)
        await assertEqual(try await standard.signInWithPasskey(&strict).status, 200)
        // Automatic Passkey Upgrade keeps its rules under the default: the conditional options say `preferred`, and
        // a conditional registration without UP or UV registers.
        let upgrading = try await standard.passwordUser()
        let conditionalStart = try await raw(
            try await Self.standard.get(), "POST", "/v1/passkeys/registrations",
            token: try await token(upgrading.client),
            body: #"{"mode":"conditional"}"#)
        let conditionalSelection = (conditionalStart.json["publicKey"] as? [String: Any])?["authenticatorSelection"]
        XCTAssertEqual((conditionalSelection as? [String: Any])?["userVerification"] as? String, "preferred")
        let silent = try await register(
            standard, upgrading.client, SoftwareAuthenticator(), flags: [.attestedCredentialData], mode: .conditional)
        XCTAssertEqual(silent.status, 204, silent.description)
    }

    // MARK: AAGUID allow- and deny-lists

    func testAuthenticatorModelsFollowTheAllowAndDenyLists() async throws {
        let standard = Flows(try await Self.standard.get())
        let configured = Flows(try await Self.configured.get())
        let user = try await standard.passwordUser()
        let restricted = try await configured.passwordUser()
        for model in [Self.deniedModel, Self.otherModel] {
            await assertEqual(
                try await register(standard, user.client, SoftwareAuthenticator(aaguid: model)).status, 204)
            let refused = try await register(configured, restricted.client, SoftwareAuthenticator(aaguid: model))
            XCTAssertEqual(refused.status, 400, refused.description)
            XCTAssertEqual(refused.reason, .attestationUntrusted)
        }
        await assertEqual(
            try await register(configured, restricted.client, SoftwareAuthenticator(aaguid: Self.allowedModel)).status,
            204)
    }

    // MARK: Cross-origin and topOrigin; the challenge's exact spelling

    func testATopOriginIsAnEmbeddedCeremonyAcceptedOnlyUnderAConfiguredTopOrigin() async throws {
        for (shared, allowed) in [(Self.standard, false), (Self.configured, true)] {
            let flows = Flows(try await shared.get())
            let user = try await flows.passwordUser()
            for topOrigin in [Stack.origin, "https://shop.example.net"] {
                let start = try await flows.beginRegistration(user.client).get()
                let clientData = SoftwareAuthenticator.clientDataJSON(
                    type: "webauthn.create", challenge: [UInt8](start.challenge), origin: Stack.origin,
                    topOrigin: topOrigin)
                let outcome = await finish(
                    flows, user.client, start: start, authenticator: SoftwareAuthenticator(), clientData: clientData)
                if allowed && topOrigin == Stack.origin {
                    XCTAssertEqual(outcome.status, 204, outcome.description)
                } else {
                    XCTAssertEqual(outcome.status, 400, outcome.description)
                    XCTAssertEqual(outcome.reason, .crossOriginNotAllowed, "\(topOrigin)")
                }
            }
        }
    }

    func testAChallengeSpelledOtherwiseIsRefused() async throws {
        let flows = Flows(try await Self.standard.get())
        let user = try await flows.passwordUser()
        let start = try await flows.beginRegistration(user.client).get()
        var padded = Base64URL.encode([UInt8](start.challenge))
        while padded.utf8.count % 4 != 0 { padded += "=" }
        let clientData = Array(#"{"type":"webauthn.create","challenge":"\#(padded)","origin":"\#(Stack.origin)"}"#.utf8)
        let outcome = await finish(
            flows, user.client, start: start, authenticator: SoftwareAuthenticator(), clientData: clientData)
        XCTAssertEqual(outcome.status, 400, outcome.description)
        XCTAssertEqual(outcome.reason, .challengeMismatch)
    }

    // MARK: Sign count: reject or flag

    func testARegressedCounterIsRefusedOrFlaggedAndAudited() async throws {
        for (shared, flagged) in [(Self.standard, false), (Self.configured, true)] {
            let stack = try await shared.get()
            let flows = Flows(stack)
            var authenticator = SoftwareAuthenticator()
            let client = try await passkeyAccount(flows, &authenticator)
            await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
            let before = try await raw(stack, "GET", "/v1/passkeys", token: try await token(client))
            XCTAssertEqual((before.json["passkeys"] as? [[String: Any]])?.first?["cloneWarning"] as? Bool, false)
            authenticator.signCount = 0  // the next assertion carries 1, below the stored 2
            let regressed = try await flows.signInWithPasskey(&authenticator)
            let listed = try await raw(stack, "GET", "/v1/passkeys", token: try await token(client))
            let passkey = (listed.json["passkeys"] as? [[String: Any]])?.first
            if flagged {
                XCTAssertEqual(regressed.status, 200, regressed.description)
                XCTAssertEqual(passkey?["cloneWarning"] as? Bool, true)
                // The flag stays once set, and later sign-ins that count up go on working.
                await assertEqual(try await flows.signInWithPasskey(&authenticator).status, 200)
                let again = try await raw(stack, "GET", "/v1/passkeys", token: try await token(client))
                XCTAssertEqual((again.json["passkeys"] as? [[String: Any]])?.first?["cloneWarning"] as? Bool, true)
                let verificationLog = stack.verification.map(\.log).joined()
                XCTAssertTrue(verificationLog.contains("audit.passkey.clone_warning"), "the flag is audited")
            } else {
                XCTAssertEqual(regressed.status, 401, regressed.description)
                XCTAssertEqual(regressed.reason, .signCountRegressed)
                XCTAssertEqual(passkey?["cloneWarning"] as? Bool, false)
            }
        }
    }

    // MARK: Bad values stop the processes that offer or enforce them

    func testABadPolicyValueStopsEveryProcessThatReadsItNamingTheVariable() async throws {
        let stack = try await Self.standard.get()
        func start(_ executable: String, _ variable: String, _ value: String) throws -> ManagedProcess {
            var environment = stack.environment
            environment[variable] = value
            environment["GATEWAY_LISTEN"] = "127.0.0.1:\(freePort())"
            environment["VERIFICATION_SERVICE_LISTEN"] = "127.0.0.1:\(freePort())"
            environment["CHALLENGE_SERVICE_LISTEN"] = "127.0.0.1:\(freePort())"
            environment["SESSION_SERVICE_LISTEN"] = "127.0.0.1:\(freePort())"
            environment["GRPC_PLAINTEXT"] = "true"
            let process = ManagedProcess(
                executable: executable, environment: environment, logDirectory: stack.logDirectory)
            try process.start()
            return process
        }
        for (variable, value) in [
            ("PASSKEY_ALGORITHMS", "-7,-49"), ("PASSKEY_SIGN_COUNT", "warn"),
            ("PASSKEY_REGISTRATION_USER_VERIFICATION", "always"), ("PASSKEY_TOP_ORIGINS", "shop.example.net"),
            ("PASSKEY_AAGUID_DENY", "not-an-aaguid"), ("PASSKEY_HINTS", "usb"),
        ] {
            for executable in ["gateway", "verification-service"] {
                let process = try start(executable, variable, value)
                XCTAssertTrue(
                    waitUntil(timeout: 20) { !process.isRunning }, "\(executable) kept running with \(variable)")
                XCTAssertEqual(process.terminate(), 2, "\(executable) \(variable)=\(value): \(process.log)")
                XCTAssertTrue(process.log.contains(variable), "\(executable): \(process.log)")
            }
        }
        // The policy is not the other services' business: they read none of it, and a bad value does not stop them.
        for executable in ["challenge-service", "session-service"] {
            let process = try start(executable, "PASSKEY_ALGORITHMS", "-7,-49")
            XCTAssertTrue(
                waitUntil(timeout: 20) { process.log.contains("service.started") || !process.isRunning },
                "\(executable) did not start")
            XCTAssertTrue(process.isRunning, "\(executable): \(process.log)")
            XCTAssertEqual(process.terminate(), 0, "\(executable): \(process.log)")
        }
    }
}
