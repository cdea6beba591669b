import Encoding
import Foundation
import PasskeyClient
import SoftwareAuthenticator
import WebAuthn
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Against the real executables: passkeys named after their providers and the icons served, the sign-in failure
/// the Signal API acts on (`unknown_credential`) and the ones it must not, the display name change, and the enroll
/// and manage pages of `/.well-known/passkey-endpoints`.
final class ProviderAndSignalFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    static let google = "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"
    static let apple = "fbfc3007-154e-4ecc-8c0b-6e020557d7bd"

    static func aaguid(_ text: String) -> AAGUID {
        AAGUID(bytes: Array(withUnsafeBytes(of: UUID(uuidString: text)!.uuid) { Array($0) }))
    }

    func raw(_ stack: Stack, _ path: String, headers: [String: String] = [:]) async throws -> (
        Int, [String: String], Data
    ) {
        var request = URLRequest(url: URL(string: path, relativeTo: stack.gatewayURL)!)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            fields[String(describing: name).lowercased()] = String(describing: value)
        }
        return (http.statusCode, fields, data)
    }

    func testANewPasskeyIsNamedAfterItsProviderAndItsIconsAreServed() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        var google = SoftwareAuthenticator(aaguid: Self.aaguid(Self.google))
        let created = try await flows.createPasskeyAccount(authenticator: &google, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)
        let session = try await flows.signInWithPasskey(&google)
        XCTAssertEqual(session.status, 200, session.description)
        let client = session.client
        // A second passkey from Apple Passwords, and one whose AAGUID no list knows.
        try await flows.addPasskey(client, authenticator: SoftwareAuthenticator(aaguid: Self.aaguid(Self.apple)))
        try await flows.addPasskey(client, authenticator: SoftwareAuthenticator())

        let list = try await flows.outcome(PasskeyListOperation(), with: client).get()
        XCTAssertEqual(list.rpID, Stack.relyingPartyID)
        XCTAssertEqual(list.userHandle, Data(google.userHandle))
        XCTAssertEqual(Set(list.acceptedCredentialIDs), Set(list.passkeys.map(\.credentialID)))
        XCTAssertEqual(list.passkeys.count, 3)
        let byAAGUID = Dictionary(uniqueKeysWithValues: list.passkeys.map { ($0.aaguid, $0) })
        let googlePasskey = try XCTUnwrap(byAAGUID[Self.google])
        XCTAssertEqual(googlePasskey.name, "Google Password Manager")
        XCTAssertEqual(googlePasskey.providerName, "Google Password Manager")
        XCTAssertEqual(try XCTUnwrap(byAAGUID[Self.apple]).name, "Apple Passwords")
        let unknown = try XCTUnwrap(byAAGUID["aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"])
        XCTAssertEqual(unknown.name, "Passkey", "an unlisted AAGUID keeps the default name")
        XCTAssertNil(unknown.providerName)
        XCTAssertNil(unknown.providerIconLight)
        XCTAssertNil(unknown.providerIconDark)

        for path in [googlePasskey.providerIconLight, googlePasskey.providerIconDark] {
            let path = try XCTUnwrap(path)
            let icon = try await flows.outcome(
                PasskeyProviderIconOperation(aaguid: Self.google, variant: path.hasSuffix("/dark") ? .dark : .light)
            )
            .get()
            XCTAssertEqual(icon.contentType, "image/svg+xml")
            XCTAssertTrue(String(decoding: icon.data, as: UTF8.self).contains("<svg"))
            let (status, headers, body) = try await raw(stack, path)
            XCTAssertEqual(status, 200)
            XCTAssertEqual(body, icon.data)
            XCTAssertEqual(headers["cache-control"], "public, max-age=86400")
            XCTAssertTrue(headers["content-security-policy"]?.contains("sandbox") == true)
        }
        // A renamed passkey keeps its provider.
        let renamed = try await flows.outcome(
            PasskeyRenameOperation(credentialID: googlePasskey.credentialID, name: "Work phone"), with: client
        ).get()
        XCTAssertEqual(renamed.name, "Work phone")
        XCTAssertEqual(renamed.providerName, "Google Password Manager")
    }

    func testBadIconPathsAreClientErrorsNeverServerErrors() async throws {
        let stack = try await Self.shared.get()
        for (path, status) in [
            ("/v1/passkey-providers/00000000-0000-0000-0000-000000000000/icons/light", 404),
            ("/v1/passkey-providers/\(Self.google)/icons/sepia", 400),
            ("/v1/passkey-providers/nope/icons/dark", 400),
            ("/v1/passkey-providers/%00/icons/dark", 400),
            ("/v1/passkey-providers/\(Self.google)/icons/light/x", 404),
        ] {
            let (got, headers, _) = try await raw(stack, path)
            XCTAssertEqual(got, status, path)
            XCTAssertEqual(headers["content-type"], "application/problem+json", path)
        }
        let flows = Flows(stack)
        let missing = await flows.outcome(
            PasskeyProviderIconOperation(aaguid: "12345678-1234-1234-1234-123456789abc", variant: .light))
        XCTAssertEqual(missing.status, 404)
        XCTAssertEqual(missing.code, .notFound)
    }

    func testOnlyAnUnregisteredCredentialIsUnknownCredential() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        var registered = SoftwareAuthenticator()
        let created = try await flows.createPasskeyAccount(authenticator: &registered, email: flows.uniqueEmail())
        XCTAssertEqual(created.status, 201, created.description)

        // A credential ID no passkey has: the one failure the page may answer with signalUnknownCredential.
        var stranger = SoftwareAuthenticator(userHandle: registered.userHandle)
        let unknown = try await flows.signInWithPasskey(&stranger)
        XCTAssertEqual(unknown.status, 401, unknown.description)
        XCTAssertEqual(unknown.code, .invalidCredentials)
        XCTAssertEqual(unknown.reason, .unknownCredential)
        XCTAssertTrue(unknown.error?.isUnknownCredential == true)

        // The registered credential with a bad signature, a user handle of someone else, a wrong origin: refused,
        // never as unknown.
        let start = try await flows.beginAuthentication()
        var assertion = registered.makeAssertion(
            challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: Stack.origin)
        assertion.signature[assertion.signature.count / 2] ^= 0x01
        let badSignature = await flows.finishAuthentication(challengeID: start.challengeID, assertion: assertion)
        XCTAssertEqual(badSignature.status, 401, badSignature.description)
        XCTAssertEqual(badSignature.reason, .signatureInvalid)
        XCTAssertFalse(badSignature.error?.isUnknownCredential ?? true)

        let again = try await flows.beginAuthentication()
        var otherUser = registered
        otherUser.userHandle = Array(repeating: 0x42, count: 16)
        let wrongUser = await flows.finishAuthentication(
            challengeID: again.challengeID,
            assertion: otherUser.makeAssertion(
                challenge: [UInt8](again.challenge), rpID: again.relyingPartyID, origin: Stack.origin))
        XCTAssertEqual(wrongUser.status, 401, wrongUser.description)
        XCTAssertNotEqual(wrongUser.reason, .unknownCredential)

        let third = try await flows.beginAuthentication()
        let wrongOrigin = await flows.finishAuthentication(
            challengeID: third.challengeID,
            assertion: registered.makeAssertion(
                challenge: [UInt8](third.challenge), rpID: third.relyingPartyID, origin: "https://evil.example"))
        XCTAssertEqual(wrongOrigin.status, 401, wrongOrigin.description)
        XCTAssertNotEqual(wrongOrigin.reason, .unknownCredential)

        // An unknown credential on a used challenge: the challenge decides first (410), never unknown_credential.
        let used = await flows.finishAuthentication(
            challengeID: start.challengeID,
            assertion: stranger.makeAssertion(
                challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: Stack.origin))
        XCTAssertEqual(used.status, 410, used.description)
        XCTAssertNil(used.reason)

        // A removed passkey is unknown from then on.
        let session = try await flows.signInWithPasskey(&registered)
        XCTAssertEqual(session.status, 200, session.description)
        var second = SoftwareAuthenticator(userHandle: registered.userHandle)
        try await flows.addPasskey(session.client, authenticator: second)
        let removed = await flows.outcome(
            PasskeyRemovalOperation(credentialID: Data(registered.credentialID)), with: session.client)
        XCTAssertEqual(removed.status, 204, removed.description)
        let afterRemoval = try await flows.signInWithPasskey(&registered)
        XCTAssertEqual(afterRemoval.reason, .unknownCredential, afterRemoval.description)
        let list = try await flows.outcome(PasskeyListOperation(), with: session.client).get()
        XCTAssertEqual(list.acceptedCredentialIDs, [Data(second.credentialID)])
        let withSecond = try await flows.signInWithPasskey(&second)
        XCTAssertEqual(withSecond.status, 200, withSecond.description)
    }

    func testTheDisplayNameChangesAndTheAccountSaysWhatTheSignalNeeds() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let email = flows.uniqueEmail()
        var authenticator = SoftwareAuthenticator()
        let created = try await flows.createPasskeyAccount(
            authenticator: &authenticator, email: email, displayName: "Grace")
        XCTAssertEqual(created.status, 201, created.description)
        let session = try await flows.signInWithPasskey(&authenticator)
        let renamed = try await flows.outcome(AccountRenameOperation(displayName: "  Grace H.  "), with: session.client)
            .get()
        XCTAssertEqual(renamed.displayName, "Grace H.")
        XCTAssertEqual(renamed.userHandle, Data(authenticator.userHandle))
        XCTAssertEqual(renamed.userName, email)
        let reread = try await flows.outcome(AccountOperation(), with: session.client).get()
        XCTAssertEqual(reread.displayName, "Grace H.")
        let signedInAgain = try await flows.signInWithPasskey(&authenticator)
        XCTAssertEqual(signedInAgain.value?.displayName, "Grace H.")

        let refused = await flows.outcome(AccountRenameOperation(displayName: "   "), with: session.client)
        XCTAssertEqual(refused.status, 400)
        XCTAssertEqual(refused.code, .invalidRequest)
        let unchanged = try await flows.outcome(AccountOperation(), with: session.client).get()
        XCTAssertEqual(unchanged.displayName, "Grace H.")
        let anonymous = await flows.outcome(AccountRenameOperation(displayName: "Mallory"))
        XCTAssertEqual(anonymous.status, 401)
    }

    func testTheEndpointsDocumentPointsAtPagesTheGatewayServes() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let endpoints = try await flows.outcome(PasskeyEndpointsOperation()).get()
        XCTAssertEqual(endpoints.enroll?.absoluteString, Stack.origin + "/passkeys/enroll")
        XCTAssertEqual(endpoints.manage?.absoluteString, Stack.origin + "/passkeys/manage")
        let (_, _, root) = try await raw(stack, "/")
        for url in [endpoints.enroll, endpoints.manage].compactMap({ $0 }) {
            let (status, headers, body) = try await raw(stack, url.path)
            XCTAssertEqual(status, 200, url.path)
            XCTAssertEqual(headers["content-type"], "text/html; charset=utf-8")
            XCTAssertEqual(body, root)
        }
    }

    func testConfiguredPagesAndABadValueStopsTheGatewayNamingIt() async throws {
        let stack = try await Stack(environment: [
            "PASSKEY_ENROLL_PAGE": "https://accounts.example.com/passkeys/new",
            "PASSKEY_MANAGE_PAGE": "/settings/passkeys",
        ])
        addTeardownBlock { await stack.tearDown() }
        let endpoints = try await Flows(stack).outcome(PasskeyEndpointsOperation()).get()
        XCTAssertEqual(endpoints.enroll?.absoluteString, "https://accounts.example.com/passkeys/new")
        XCTAssertEqual(endpoints.manage?.absoluteString, Stack.origin + "/settings/passkeys")

        for (variable, value) in [
            ("PASSKEY_ENROLL_PAGE", "http://accounts.example.com/passkeys"),
            ("PASSKEY_MANAGE_PAGE", "//evil.example/x"),
            ("PASSKEY_MANAGE_PAGE", "settings"),
        ] {
            var environment = stack.environment
            environment[variable] = value
            let gateway = ManagedProcess(
                executable: "gateway", environment: environment, logDirectory: stack.logDirectory)
            try gateway.start()
            XCTAssertTrue(
                waitUntil(timeout: 10) { !gateway.isRunning }, "\(variable)=\(value) did not stop the gateway")
            XCTAssertEqual(gateway.terminate(), 2, "\(variable)=\(value): \(gateway.log)")
            XCTAssertTrue(gateway.log.contains(variable), gateway.log)
        }
    }
}
