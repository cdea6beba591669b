import Foundation
import PasskeyClient
import SoftwareAuthenticator
import Synchronization
import WebAuthn
import XCTest

// The code of docs/client.md that needs no Apple framework, compiled and run here against the real stack; a test
// checks that the guide quotes every block between `docs:begin` and `docs:end` exactly.

// docs:begin platform
/// What the app's UI layer does with AuthenticationServices (``AuthenticationServicesPlatform`` in the guide); a
/// software authenticator stands in for it in tests.
protocol PasskeyPlatform: Sendable {
    /// Creates a passkey for the signed-in account, in the sheet or silently as `options.mode` says.
    func createPasskey(_ options: PasskeyRegistrationOptions) async throws -> PasskeyRegistrationCredential
    /// Creates the passkey of a new account; with no `emailAddress` the system's sheet asks for one (iOS 26).
    func createAccountPasskey(_ options: PasskeyAccountCreationOptions, emailAddress: String?) async throws
        -> PasskeyAccountCreationResult
    /// Signs in with a passkey the user picks, from the keyboard's suggestions or from a sheet.
    func assertion(_ options: PasskeyAuthenticationOptions, autoFill: Bool) async throws -> PasskeyAssertion
}
// docs:end

// docs:begin interactor
/// The talk's Interactor: each flow of the app through the API client and the platform.
actor AccountInteractor {
    let client: PasskeyAPIClient
    let platform: any PasskeyPlatform

    init(client: PasskeyAPIClient, platform: any PasskeyPlatform) {
        self.client = client
        self.platform = platform
    }

    /// Password sign-in, then Automatic Passkey Upgrade for an account without a passkey. The upgrade is
    /// opportunistic: whether the credential manager declines or anything else fails, the user stays signed in.
    func signIn(email: String, password: String) async throws -> Session {
        let session = try await client.execute(PasswordSignInOperation(email: email, password: password))
        do {
            guard try await client.execute(AccountOperation()).passkeyCount == 0 else { return session }
            let start = try await client.execute(PasskeyRegistrationStartOperation(mode: .conditional))
            let credential = try await platform.createPasskey(start.options)
            try await client.execute(start.finishOperation(with: credential))
        } catch {
            // Nothing to tell the user: they are signed in.
        }
        return session
    }

    /// Passkey sign-in; the client keeps the session's token.
    func signInWithPasskey(autoFill: Bool) async throws -> Session {
        let start = try await client.execute(PasskeyAuthenticationStartOperation())
        let assertion = try await platform.assertion(start.options, autoFill: autoFill)
        return try await client.execute(start.finishOperation(with: assertion))
    }

    /// A new account with a passkey, signed in: one ceremony, and the client keeps the new session's tokens.
    func signUp(emailAddress: String?, displayName: String?) async throws -> Session {
        let start = try await client.execute(
            PasskeyAccountCreationStartOperation(emailAddress: emailAddress, displayName: displayName))
        let result = try await platform.createAccountPasskey(start.options, emailAddress: emailAddress)
        return try await client.execute(start.finishOperation(with: result))
    }

    /// Adds a passkey from the settings screen.
    func addPasskey() async throws {
        let start = try await client.execute(PasskeyRegistrationStartOperation(mode: .modal))
        let credential = try await platform.createPasskey(start.options)
        try await client.execute(start.finishOperation(with: credential))
    }

    func passkeys() async throws -> [Passkey] { try await client.execute(PasskeyListOperation()).passkeys }

    func rename(_ passkey: Passkey, to name: String) async throws -> Passkey {
        try await client.execute(PasskeyRenameOperation(credentialID: passkey.credentialID, name: name))
    }

    func remove(_ passkey: Passkey) async throws {
        try await client.execute(PasskeyRemovalOperation(credentialID: passkey.credentialID))
    }

    func otherSessions() async throws -> [SessionSummary] {
        try await client.execute(SessionListOperation()).sessions.filter { !$0.current }
    }

    func signOut(_ session: SessionSummary) async throws {
        try await client.execute(SessionRevocationOperation(sessionID: session.sessionID))
    }

    func signOut() async throws { try await client.execute(SignOutOperation()) }
}
// docs:end

// docs:begin problems
/// What a screen tells the user about a failed call.
enum UserFacingProblem: Equatable {
    case wrongEmailOrPassword
    case passkeyNotAccepted
    case startAgain
    case signInAgain
    case emailTaken
    case lastWayToSignIn
    case tooManyAttempts(retryAfterSeconds: Int?)
    case offline
    case unexpected(code: String)

    init(_ error: PasskeyClientError) {
        switch error.code {
        case .invalidCredentials:
            let passwordSignIn = error.operation == PasswordSignInOperation.route.description
            self = passwordSignIn ? .wrongEmailOrPassword : .passkeyNotAccepted
        case .verificationFailed, .credentialAlreadyRegistered: self = .passkeyNotAccepted
        case .challengeUnavailable: self = .startAgain
        case .unauthenticated: self = .signInAgain
        case .emailTaken: self = .emailTaken
        case .lastSignInMethod: self = .lastWayToSignIn
        case .rateLimited: self = .tooManyAttempts(retryAfterSeconds: error.retryAfterSeconds)
        case .networkFailure, .timedOut, .unavailable: self = .offline
        default: self = .unexpected(code: error.code.rawValue)
        }
    }
}
// docs:end

/// The platform of the tests: a software authenticator answers each request as AuthenticationServices would.
final class SoftwarePlatform: PasskeyPlatform {
    private let authenticator = Mutex(SoftwareAuthenticator())
    /// What the account creation sheet returns as the user's choice.
    let sheetEmail: String
    let sheetName = "Grace Hopper"

    init(sheetEmail: String) { self.sheetEmail = sheetEmail }

    var credentialID: Data { authenticator.withLock { Data($0.credentialID) } }

    func createPasskey(_ options: PasskeyRegistrationOptions) async throws -> PasskeyRegistrationCredential {
        authenticator.withLock { authenticator in
            authenticator.userHandle = [UInt8](options.userID)
            // A conditional registration happens without the user, so UP is 0.
            let flags: AuthenticatorData.Flags =
                options.mode == .conditional
                ? [.userVerified, .attestedCredentialData] : [.userPresent, .userVerified, .attestedCredentialData]
            return authenticator.credential(for: options, flags: flags)
        }
    }

    func createAccountPasskey(_ options: PasskeyAccountCreationOptions, emailAddress: String?) async throws
        -> PasskeyAccountCreationResult
    {
        let credential = authenticator.withLock { authenticator in
            authenticator.userHandle = [UInt8](options.userID)
            return authenticator.credential(for: options)
        }
        guard emailAddress == nil else {
            return PasskeyAccountCreationResult(emailAddress: nil, displayName: nil, credential: credential)
        }
        return PasskeyAccountCreationResult(emailAddress: sheetEmail, displayName: sheetName, credential: credential)
    }

    func assertion(_ options: PasskeyAuthenticationOptions, autoFill: Bool) async throws -> PasskeyAssertion {
        authenticator.withLock { $0.assertion(for: options) }
    }
}

final class GuideExampleTests: XCTestCase {
    static let shared = SharedStack()
    override class func tearDown() { shared.stop() }

    func interactor() async throws -> (AccountInteractor, SoftwarePlatform, Flows) {
        let flows = Flows(try await Self.shared.get())
        let platform = SoftwarePlatform(sheetEmail: flows.uniqueEmail("sheet"))
        return (AccountInteractor(client: flows.client(), platform: platform), platform, flows)
    }

    func testAPasswordSignInUpgradesToAPasskeyThatSignsIn() async throws {
        let (interactor, platform, flows) = try await interactor()
        let email = flows.uniqueEmail("guide")
        let accountID = try await flows.signUpWithPassword(email: email)
        let session = try await interactor.signIn(email: email, password: "correct horse battery")
        XCTAssertEqual(session.accountID, accountID)
        let passkeys = try await interactor.passkeys()
        XCTAssertEqual(passkeys.map(\.credentialID), [platform.credentialID], "the upgrade registered a passkey")

        let laptop = AccountInteractor(client: flows.client(), platform: platform)
        let passkeySession = try await laptop.signInWithPasskey(autoFill: true)
        XCTAssertEqual(passkeySession.accountID, accountID)
        let renamed = try await laptop.rename(try XCTUnwrap(passkeys.first), to: "iPhone")
        XCTAssertEqual(renamed.name, "iPhone")
        let others = try await laptop.otherSessions()
        XCTAssertEqual(others.count, 1)
        try await laptop.signOut(try XCTUnwrap(others.first))
        do {
            _ = try await interactor.passkeys()
            XCTFail("the revoked session still works")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(UserFacingProblem(error), .signInAgain)
        }
        try await laptop.signOut()
    }

    func testSignUpFromTheFormAndFromTheSheet() async throws {
        for emailFirst in [true, false] {
            let (interactor, platform, flows) = try await interactor()
            let email = flows.uniqueEmail("form")
            let session = try await interactor.signUp(
                emailAddress: emailFirst ? email : nil, displayName: emailFirst ? "Grace" : nil)
            XCTAssertEqual(session.displayName, emailFirst ? "Grace" : platform.sheetName)
            // Signed in by the sign-up itself; the passkey signs in on another device.
            let account = try await flows.outcome(AccountOperation(), with: interactor.client).get()
            XCTAssertEqual(account.accountID, session.accountID)
            XCTAssertEqual(account.emails, [emailFirst ? email : platform.sheetEmail])
            let laptop = AccountInteractor(client: flows.client(), platform: platform)
            let passkeySession = try await laptop.signInWithPasskey(autoFill: false)
            XCTAssertEqual(passkeySession.accountID, session.accountID)

            // A second passkey, then the first one removed: one remains, as the last way to sign in.
            let second = AccountInteractor(client: interactor.client, platform: SoftwarePlatform(sheetEmail: ""))
            try await second.addPasskey()
            let passkeys = try await interactor.passkeys()
            XCTAssertEqual(passkeys.count, 2)
            let first = try XCTUnwrap(passkeys.first { $0.credentialID == platform.credentialID })
            try await interactor.remove(first)
            let remaining = try await interactor.passkeys()
            let last = try XCTUnwrap(remaining.first)
            do {
                try await interactor.remove(last)
                XCTFail("removed the last way to sign in")
            } catch let error as PasskeyClientError {
                XCTAssertEqual(UserFacingProblem(error), .lastWayToSignIn)
            }
        }
    }

    func testFailuresBecomeWhatTheUserIsTold() async throws {
        let (interactor, _, flows) = try await interactor()
        let email = flows.uniqueEmail("wrong")
        _ = try await flows.signUpWithPassword(email: email)
        do {
            _ = try await interactor.signIn(email: email, password: "not the password")
            XCTFail("signed in")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(UserFacingProblem(error), .wrongEmailOrPassword)
        }
        do {
            _ = try await interactor.signUp(emailAddress: email, displayName: "Again")
            XCTFail("signed up twice")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(UserFacingProblem(error), .emailTaken)
        }
        // A passkey the gateway does not know.
        do {
            _ = try await interactor.signInWithPasskey(autoFill: true)
            XCTFail("signed in")
        } catch let error as PasskeyClientError {
            XCTAssertEqual(UserFacingProblem(error), .passkeyNotAccepted)
        }
        let offline = PasskeyClientError(code: .networkFailure)
        XCTAssertEqual(UserFacingProblem(offline), .offline)
    }

    /// The guide shows these examples verbatim.
    func testTheGuideQuotesEveryExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let guide = try String(contentsOf: root.appendingPathComponent("docs/client.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("// docs:begin") {
                current = []
            } else if line.hasPrefix("// docs:end"), let lines = current {
                blocks.append(lines.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        XCTAssertEqual(blocks.count, 3)
        for block in blocks {
            XCTAssertTrue(guide.contains(block), "docs/client.md does not quote:\n\(block)")
        }
    }
}
