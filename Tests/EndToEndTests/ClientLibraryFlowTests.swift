import Foundation
import PasskeyClient
import Postgres
import PostgresTestSupport
import SoftwareAuthenticator
import Synchronization
import WebAuthn
import XCTest

/// Every flow an app runs, through the PasskeyClient library against the real stack and the way an app would: one
/// client per device, which keeps its session's token (the tests never handle one), and the software
/// authenticator answering the requests an app would make from the library's options.
final class ClientLibraryFlowTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    let password = "correct horse battery"

    func testAPasswordUserMovesToPasskeysAndManagesThemAndTheirSessions() async throws {
        let flows = Flows(try await Self.shared.get())
        let phone = flows.client()
        let email = flows.uniqueEmail("moving")

        // A password account, and a password sign-in.
        let created = try await phone.execute(
            PasswordAccountCreationOperation(email: email, password: password, displayName: "Ada"))
        let passwordSession = try await phone.execute(PasswordSignInOperation(email: email, password: password))
        XCTAssertEqual(passwordSession.accountID, created.accountID)
        let kept = try await unwrapAsync(try await phone.accessToken())
        XCTAssertEqual(kept.value, passwordSession.accessToken)
        XCTAssertEqual(kept.refreshToken, passwordSession.refreshToken)
        XCTAssertNotNil(kept.refreshToken, "signed access tokens come with a refresh token")
        XCTAssertEqual(kept.sessionID, passwordSession.sessionID)
        // Counted on this machine's clock from expiresIn: the gateway's expiresAt, give or take the trip.
        let expiry = try XCTUnwrap(kept.expiresAt)
        XCTAssertEqual(expiry.timeIntervalSince(passwordSession.expiresAt), 0, accuracy: 2)

        // Automatic Passkey Upgrade right after it: conditional, and the credential manager sets no UP.
        let upgrade = try await phone.execute(PasskeyRegistrationStartOperation(mode: .conditional))
        XCTAssertEqual(upgrade.options.mode, .conditional)
        var upgraded = SoftwareAuthenticator()
        upgraded.userHandle = [UInt8](upgrade.userID)
        try await phone.execute(
            PasskeyRegistrationFinishOperation(
                challengeID: upgrade.challengeID,
                credential: upgraded.credential(for: upgrade.options, flags: [.attestedCredentialData])))

        // A modal one from the settings screen, on a security key say; the first is excluded.
        let modal = try await phone.execute(PasskeyRegistrationStartOperation())
        XCTAssertEqual(modal.options.mode, .modal)
        XCTAssertEqual(modal.options.excludedCredentialIDs, [Data(upgraded.credentialID)])
        XCTAssertEqual(modal.userID, upgrade.userID)
        var key = SoftwareAuthenticator(algorithm: .edDSA)
        key.userHandle = [UInt8](modal.userID)
        try await phone.execute(
            PasskeyRegistrationFinishOperation(
                challengeID: modal.challengeID, credential: key.credential(for: modal.options),
                encoding: .webAuthnJSON))

        // Passkey sign-in on another device.
        let laptop = flows.client()
        let start = try await laptop.execute(PasskeyAuthenticationStartOperation())
        let session = try await laptop.execute(
            PasskeyAuthenticationFinishOperation(
                challengeID: start.challengeID, assertion: upgraded.assertion(for: start.options)))
        XCTAssertEqual(session.accountID, created.accountID)
        XCTAssertEqual(session.displayName, "Ada")
        let current = try await laptop.execute(CurrentSessionOperation())
        XCTAssertEqual(current.authenticationMethod, .passkey)

        // Listing, renaming and removing passkeys.
        let listed = try await laptop.execute(PasskeyListOperation()).passkeys
        XCTAssertEqual(Set(listed.map(\.credentialID)), [Data(upgraded.credentialID), Data(key.credentialID)])
        XCTAssertNotNil(listed.first { $0.credentialID == Data(upgraded.credentialID) }?.lastUsedAt)
        let renamed = try await laptop.execute(
            PasskeyRenameOperation(credentialID: Data(key.credentialID), name: "Key"))
        XCTAssertEqual(renamed.name, "Key")
        try await laptop.execute(PasskeyRemovalOperation(credentialID: Data(upgraded.credentialID)))
        let remaining = try await laptop.execute(PasskeyListOperation()).passkeys
        XCTAssertEqual(remaining.map(\.name), ["Key"])
        let account = try await phone.execute(AccountOperation())
        XCTAssertEqual(account.passkeyCount, 1)
        XCTAssertTrue(account.hasPassword, "the password stays")

        // Listing and revoking sessions: the laptop signs the phone out.
        let sessions = try await laptop.execute(SessionListOperation()).sessions
        XCTAssertEqual(sessions.count, 2)
        let phoneSession = try XCTUnwrap(sessions.first { !$0.current })
        XCTAssertEqual(phoneSession.authenticationMethod, .password)
        try await laptop.execute(SessionRevocationOperation(sessionID: phoneSession.sessionID))
        let revoked = await flows.outcome(AccountOperation(), with: phone)
        XCTAssertEqual(revoked.code, .unauthenticated, revoked.description)
        XCTAssertEqual(revoked.status, 401)
        await assertNil(try await phone.accessToken(), "the phone forgot the revoked token")

        // Signing out.
        try await laptop.execute(SignOutOperation())
        await assertNil(try await laptop.accessToken())
        let signedOut = await flows.outcome(SessionListOperation(), with: laptop)
        XCTAssertEqual(signedOut.code, .unauthenticated)
    }

    func testAnAccountCreatedWithAPasskeyFromTheFormOrTheSheet() async throws {
        let flows = Flows(try await Self.shared.get())
        // The form asks for the email and name before the passkey; the account creation sheet (iOS 26) returns
        // them with it.
        for emailFirst in [true, false] {
            let app = flows.client()
            let email = flows.uniqueEmail(emailFirst ? "form" : "sheet")
            let start = try await app.execute(
                PasskeyAccountCreationStartOperation(
                    emailAddress: emailFirst ? email : nil, displayName: emailFirst ? "Grace" : nil))
            var authenticator = SoftwareAuthenticator()
            authenticator.userHandle = [UInt8](start.options.userID)
            let result = PasskeyAccountCreationResult(
                emailAddress: emailFirst ? nil : email, displayName: emailFirst ? nil : "Grace",
                credential: authenticator.credential(for: start.options))
            // Creating the account signs it in: one ceremony, and the client keeps the session.
            let created = try await app.execute(
                PasskeyAccountCreationFinishOperation(registrationID: start.registrationID, result: result))
            XCTAssertEqual(created.displayName, "Grace")
            let kept = try await app.accessToken()
            XCTAssertEqual(kept?.value, created.accessToken)
            XCTAssertEqual(kept?.sessionID, created.sessionID)
            let current = try await app.execute(CurrentSessionOperation())
            XCTAssertEqual(current.sessionID, created.sessionID)
            XCTAssertEqual(current.authenticationMethod, .passkey)
            let account = try await app.execute(AccountOperation())
            XCTAssertEqual(account.accountID, created.accountID)
            XCTAssertEqual(account.emails, [email])
            XCTAssertFalse(account.hasPassword)
            XCTAssertEqual(account.passkeyCount, 1)

            // The passkey signs in on another device.
            let laptop = flows.client()
            let signIn = try await laptop.execute(PasskeyAuthenticationStartOperation())
            let session = try await laptop.execute(
                PasskeyAuthenticationFinishOperation(
                    challengeID: signIn.challengeID, assertion: authenticator.assertion(for: signIn.options)))
            XCTAssertEqual(session.accountID, created.accountID)
            XCTAssertEqual(session.displayName, "Grace")
        }
    }

    func testTheFailuresAUserMeetsComeBackTyped() async throws {
        let stack = try await Self.shared.get()
        let flows = Flows(stack)
        let app = flows.client()
        let email = flows.uniqueEmail("failing")
        try await app.execute(PasswordAccountCreationOperation(email: email, password: password, displayName: "Eve"))
        try await app.execute(PasswordSignInOperation(email: email, password: password))

        // A wrong origin (an app whose associated domain is not the RP's), at registration and at sign-in.
        var authenticator = SoftwareAuthenticator()
        let start = try await app.execute(PasskeyRegistrationStartOperation())
        authenticator.userHandle = [UInt8](start.userID)
        let wrongOrigin = await flows.outcome(
            PasskeyRegistrationFinishOperation(
                challengeID: start.challengeID,
                credential: authenticator.credential(for: start.options, origin: "https://phish.example")),
            with: app)
        XCTAssertEqual(wrongOrigin.code, .verificationFailed)
        XCTAssertEqual(wrongOrigin.reason, .originMismatch)
        XCTAssertEqual(wrongOrigin.status, 400)

        // A reused challenge: the failed finish consumed it.
        let reused = await flows.outcome(
            PasskeyRegistrationFinishOperation(
                challengeID: start.challengeID, credential: authenticator.credential(for: start.options)),
            with: app)
        XCTAssertEqual(reused.code, .challengeUnavailable)
        XCTAssertEqual(reused.status, 410)

        let fresh = try await app.execute(PasskeyRegistrationStartOperation())
        try await app.execute(
            PasskeyRegistrationFinishOperation(
                challengeID: fresh.challengeID, credential: authenticator.credential(for: fresh.options)))
        let signIn = try await flows.client().execute(PasskeyAuthenticationStartOperation())
        let phished = await flows.outcome(
            PasskeyAuthenticationFinishOperation(
                challengeID: signIn.challengeID,
                assertion: authenticator.assertion(for: signIn.options, origin: "https://phish.example")))
        XCTAssertEqual(phished.code, .invalidCredentials)
        XCTAssertEqual(phished.reason, .originMismatch)
        XCTAssertEqual(phished.status, 401)
        let replayed = await flows.outcome(
            PasskeyAuthenticationFinishOperation(
                challengeID: signIn.challengeID, assertion: authenticator.assertion(for: signIn.options)))
        XCTAssertEqual(replayed.code, .challengeUnavailable)

        // An expired session: the gateway refuses it, and the client forgets it.
        let signedIn = try await app.execute(AccountOperation())
        let accountID = try XCTUnwrap(UUID(uuidString: signedIn.accountID))
        _ = try await stack.sql(
            "UPDATE authentication_sessions SET created_at = now() - interval '31 days', expires_at = now() - interval '1 second' WHERE account_id = \(accountID)"
        )
        let expired = await flows.outcome(PasskeyListOperation(), with: app)
        XCTAssertEqual(expired.code, .unauthenticated)
        XCTAssertEqual(expired.status, 401)
        await assertNil(try await app.accessToken())

        // A revoked session: signed out from elsewhere with the same token.
        try await app.execute(PasswordSignInOperation(email: email, password: password))
        let token = try await unwrapAsync(try await app.accessToken())
        try await flows.client(token: token.value).execute(SignOutOperation())
        let revoked = await flows.outcome(CurrentSessionOperation(), with: app)
        XCTAssertEqual(revoked.code, .unauthenticated)
        await assertNil(try await app.accessToken())
    }

    func testTheRateLimitComesBackTypedAndIsNotRetried() async throws {
        // Ten at once, then one every six minutes: the eleventh finish is refused however slowly the test runs.
        let stack = try await Stack(environment: ["PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "10/h"])
        addTeardownBlock { await stack.tearDown() }
        let flows = Flows(stack)
        let counting = CountingTransport(Flows.transport)
        let app = PasskeyAPIClient(baseURL: stack.gatewayURL, transport: counting)
        var stranger = SoftwareAuthenticator()
        var outcomes: [Outcome<Session>] = []
        for _ in 0..<11 {
            // Starts are not limited; each finish with an unknown passkey counts.
            let start = try await app.execute(PasskeyAuthenticationStartOperation())
            outcomes.append(
                await flows.outcome(
                    PasskeyAuthenticationFinishOperation(
                        challengeID: start.challengeID, assertion: stranger.assertion(for: start.options)),
                    with: app))
        }
        XCTAssertEqual(outcomes.prefix(10).map(\.code), Array(repeating: .invalidCredentials, count: 10))
        let limited = try XCTUnwrap(outcomes.last?.error)
        XCTAssertEqual(limited.code, .rateLimited)
        XCTAssertEqual(limited.status, 429)
        XCTAssertGreaterThanOrEqual(limited.retryAfterSeconds ?? 0, 1)
        XCTAssertEqual(counting.count, 22, "every start and finish was sent once")
    }
}

/// Counts the requests a transport sends.
final class CountingTransport: PasskeyHTTPTransport {
    private let inner: any PasskeyHTTPTransport
    private let sent = Mutex(0)

    init(_ inner: any PasskeyHTTPTransport) { self.inner = inner }

    var count: Int { sent.withLock { $0 } }

    func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse {
        sent.withLock { $0 += 1 }
        return try await inner.send(request)
    }
}

/// `XCTUnwrap` for an asynchronous expression.
func unwrapAsync<T>(_ value: @autoclosure () async throws -> T?, file: StaticString = #filePath, line: UInt = #line)
    async throws -> T
{
    let resolved = try await value()
    return try XCTUnwrap(resolved, file: file, line: line)
}
