import Configuration
import Domain
import Foundation
import GatewayCore
import HTTPMessages
import JSON
import PasskeyClient
import ServiceContracts
import WebAuthn
import XCTest

/// The documents the gateway's own code writes, read by the library: the response documents of every route and
/// the problem of every error.
final class GatewayDocumentTests: XCTestCase {
    let milliseconds: Int64 = 1_795_977_000_000  // 2026-11-29T18:30:00Z

    func decode<Operation: PasskeyAPIOperation>(_ operation: Operation, _ value: JSONValue, status: Int = 200) throws
        -> Operation.Response
    {
        try operation.decodeResponse(
            PasskeyHTTPResponse(
                status: status, headers: ["content-type": "application/json"], body: Data(value.serialized())))
    }

    func testTheCeremonyStartsDecodeWithTheirOptions() throws {
        var registration = BeginRegistrationResponse()
        registration.challengeID = "c-1"
        registration.challenge = Array(repeating: 7, count: 32)
        registration.expiresAtUnixMilliseconds = milliseconds
        registration.relyingPartyID = "example.com"
        registration.relyingPartyName = "Example"
        registration.userHandle = [1, 2, 3]
        registration.userName = "ada@example.com"
        registration.userDisplayName = "Ada"
        var excluded = CredentialDescriptor()
        excluded.id = [9]
        excluded.transports = ["internal"]
        registration.excludeCredentials = [excluded]
        registration.mode = .conditional
        registration.timeoutMilliseconds = 300_000
        let start = try decode(
            PasskeyRegistrationStartOperation(), ResponseDocuments.registrationStart(registration, options: .standard))
        XCTAssertEqual(start.challengeID, "c-1")
        XCTAssertEqual(start.challenge, Data(repeating: 7, count: 32))
        XCTAssertEqual(start.userID, Data([1, 2, 3]))
        XCTAssertEqual(start.expiresAt, Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        XCTAssertEqual(start.mode, .conditional)
        XCTAssertEqual(start.mediation, "conditional")
        XCTAssertEqual(start.publicKey.rp.id, "example.com")
        XCTAssertEqual(start.publicKey.pubKeyCredParams.map(\.alg), CeremonyOptions.standard.algorithms)
        XCTAssertEqual(start.publicKey.excludeCredentials.first?.id, Data([9]))
        XCTAssertEqual(start.options.mode, .conditional)
        XCTAssertEqual(start.options.excludedCredentialIDs, [Data([9])])

        var account = BeginAccountRegistrationResponse()
        account.registrationID = "r-1"
        account.challenge = [1]
        account.expiresAtUnixMilliseconds = milliseconds
        account.relyingPartyID = "example.com"
        account.userHandle = [4, 5]
        let accountStart = try decode(
            PasskeyAccountCreationStartOperation(),
            ResponseDocuments.accountRegistrationStart(account, options: .standard))
        XCTAssertEqual(
            accountStart.options,
            PasskeyAccountCreationOptions(
                relyingPartyID: "example.com", challenge: Data([1]), userID: Data([4, 5])
            ).with(userName: "", displayName: ""))

        var authentication = BeginAuthenticationResponse()
        authentication.challengeID = "a-1"
        authentication.challenge = [8, 8]
        authentication.expiresAtUnixMilliseconds = milliseconds
        authentication.relyingPartyID = "example.com"
        authentication.timeoutMilliseconds = 300_000
        let signIn = try decode(
            PasskeyAuthenticationStartOperation(),
            ResponseDocuments.authenticationStart(authentication, options: .standard))
        XCTAssertEqual(
            signIn.options, PasskeyAuthenticationOptions(relyingPartyID: "example.com", challenge: Data([8, 8])))
        XCTAssertEqual(signIn.publicKey.allowCredentials, [])
    }

    func testTheAccountDocumentsDecode() throws {
        var issued = IssuedSession()
        issued.accessToken = "t"
        issued.expiresAtUnixMilliseconds = milliseconds
        issued.accountID = "a"
        issued.displayName = "Ada"
        issued.sessionID = "s"
        let session = try decode(PasswordSignInOperation(email: "", password: ""), ResponseDocuments.session(issued))
        XCTAssertEqual(session.accessToken, "t")
        XCTAssertEqual(session.tokenType, "Bearer")
        XCTAssertEqual(session.sessionID, "s")
        XCTAssertEqual(session.sessionExpiresAt, Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        XCTAssertNil(session.refreshToken, "an opaque token has no refresh token")
        XCTAssertNil(AccessToken(session).refreshToken)

        // Signed access tokens: the access token's own expiry, and the refresh token beside it unless in a cookie.
        issued.refreshToken = "prt_" + String(repeating: "r", count: 70)
        issued.accessTokenExpiresAtUnixMilliseconds = milliseconds - 3_600_000
        issued.refreshTokenExpiresAtUnixMilliseconds = milliseconds - 60_000
        let signed = try decode(
            PasskeyAccountCreationFinishOperation(registrationID: "r", credential: SampleOperations.registration),
            ResponseDocuments.session(issued), status: 201)
        XCTAssertEqual(signed.refreshToken, issued.refreshToken)
        XCTAssertEqual(signed.expiresAt, Date(timeIntervalSince1970: Double(milliseconds - 3_600_000) / 1000))
        XCTAssertEqual(
            signed.refreshTokenExpiresAt, Date(timeIntervalSince1970: Double(milliseconds - 60_000) / 1000))
        XCTAssertEqual(signed.sessionExpiresAt, Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        let refreshed = try decode(
            SessionRefreshOperation(refreshToken: "prt_x"),
            ResponseDocuments.session(issued, includingRefreshToken: false))
        XCTAssertNil(refreshed.refreshToken, "cookie mode")
        XCTAssertNotNil(refreshed.refreshTokenExpiresAt)

        var info = SessionInfo()
        info.sessionID = "s"
        info.accountID = "a"
        info.authenticationMethod = .passkey
        info.createdAtUnixMilliseconds = milliseconds
        info.expiresAtUnixMilliseconds = milliseconds
        XCTAssertEqual(
            try decode(CurrentSessionOperation(), ResponseDocuments.currentSession(info)).authenticationMethod, .passkey
        )

        var list = ListSessionsResponse()
        var summary = ServiceContracts.SessionSummary()
        summary.sessionID = "s"
        summary.authenticationMethod = .password
        summary.current = true
        list.sessions = [summary, summary]
        let sessions = try decode(SessionListOperation(), ResponseDocuments.sessions(list)).sessions
        XCTAssertEqual(sessions.map(\.current), [true, true])

        var summaryOfAccount = AccountSummary()
        summaryOfAccount.accountID = "a"
        summaryOfAccount.emails = ["ada@example.com"]
        summaryOfAccount.hasPassword = true
        summaryOfAccount.passkeyCount = 2
        summaryOfAccount.userHandle = [9, 8, 7]
        summaryOfAccount.userName = "ada@example.com"
        let account = try decode(AccountOperation(), ResponseDocuments.account(summaryOfAccount))
        XCTAssertEqual(account.userHandle, Data([9, 8, 7]))
        XCTAssertEqual(account.userName, "ada@example.com")
        XCTAssertEqual(account.passkeyCount, 2)
        XCTAssertEqual(account.emails, ["ada@example.com"])

        var never = PasskeyCredentialInfo()
        never.credentialID = [0xFB, 0xFF]
        never.name = "iPhone"
        never.createdAtUnixMilliseconds = milliseconds
        var used = never
        used.lastUsedAtUnixMilliseconds = milliseconds
        var credentials = ListCredentialsResponse()
        credentials.credentials = [never, used]
        let passkeyList = try decode(
            PasskeyListOperation(),
            ResponseDocuments.passkeys(credentials, relyingPartyID: "example.com", userHandle: [1, 2, 3]) { _ in
                [
                    ("providerName", "Google Password Manager"),
                    ("providerIconLight", "/v1/passkey-providers/ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4/icons/light"),
                    ("providerIconDark", .null),
                ]
            })
        XCTAssertEqual(passkeyList.rpID, "example.com")
        XCTAssertEqual(passkeyList.userHandle, Data([1, 2, 3]))
        XCTAssertEqual(passkeyList.acceptedCredentialIDs, [Data([0xFB, 0xFF]), Data([0xFB, 0xFF])])
        let passkeys = passkeyList.passkeys
        XCTAssertEqual(passkeys.first?.providerName, "Google Password Manager")
        XCTAssertEqual(
            passkeys.first?.providerIconLight, "/v1/passkey-providers/ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4/icons/light")
        XCTAssertNil(passkeys.first?.providerIconDark)
        XCTAssertEqual(passkeys.map(\.lastUsedAt), [nil, Date(timeIntervalSince1970: Double(milliseconds) / 1000)])
        XCTAssertEqual(passkeys.first?.credentialID, Data([0xFB, 0xFF]))
        XCTAssertEqual(
            try decode(PasskeyRenameOperation(credentialID: Data(), name: ""), ResponseDocuments.passkey(used)).name,
            "iPhone")
        XCTAssertNil(
            try decode(PasskeyRenameOperation(credentialID: Data(), name: ""), ResponseDocuments.passkey(used))
                .providerName)
    }

    func testTheWellKnownDocumentsDecode() throws {
        let configuration = try GatewayConfiguration(environment: [
            "PASSKEY_ORIGINS": "https://example.com,android:apk-key-hash:" + String(repeating: "A", count: 43),
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
            "PASSKEY_ANDROID_APPS": "com.example.app:" + Array(repeating: "AB", count: 32).joined(separator: ":"),
        ])
        let aasa = try decode(
            AppleAppSiteAssociationOperation(),
            WellKnownDocuments.appleAppSiteAssociation(appIDs: configuration.appleAppIDs))
        XCTAssertEqual(aasa.webcredentials.apps, ["ABCDE12345.com.example.app"])
        let links = try decode(AssetLinksOperation(), WellKnownDocuments.assetLinks(apps: configuration.androidApps))
        XCTAssertEqual(links.first?.target?.packageName, "com.example.app")
        XCTAssertEqual(links.first?.relation, ["delegate_permission/common.get_login_creds"])
        let origins = try decode(
            RelatedOriginsOperation(), WellKnownDocuments.relatedOrigins(origins: configuration.origins))
        XCTAssertEqual(origins.origins, ["https://example.com"])
        let endpoints = try decode(
            PasskeyEndpointsOperation(),
            try XCTUnwrap(WellKnownDocuments.passkeyEndpoints(origins: configuration.origins)))
        XCTAssertEqual(endpoints.enroll?.absoluteString, "https://example.com/passkeys/enroll")
        XCTAssertEqual(endpoints.manage?.absoluteString, "https://example.com/passkeys/manage")
    }

    /// Every problem the gateway can answer with comes back with its code, status and reason.
    /// The sign-in failure an app may answer by telling the platform to forget the passkey, and only that one.
    func testUnknownCredentialIsItsOwnReasonAndNothingElseIsIt() async throws {
        func error(_ domain: DomainError, ceremony: Ceremony?) async -> PasskeyClientError {
            let response = ProblemMapping.problem(for: domain, ceremony: ceremony).response
            var headers: [String: String] = [:]
            for field in response.headers { headers[field.name] = field.value }
            return await clientError(
                for: PasskeyHTTPResponse(status: response.status, headers: headers, body: Data(response.body)))
        }
        let unknown = await error(
            DomainError(.invalidCredentials, "the passkey is not registered", reason: "unknown_credential"),
            ceremony: .authentication)
        XCTAssertEqual(unknown.status, 401)
        XCTAssertEqual(unknown.reason, .unknownCredential)
        XCTAssertTrue(unknown.isUnknownCredential)
        for (domain, ceremony) in [
            (DomainError(.invalidCredentials, "bad", reason: "signature_invalid"), Ceremony.authentication),
            (DomainError(.invalidCredentials, "concurrent"), .authentication),
            (DomainError(.invalidCredentials, "wrong password"), nil),
            (DomainError(.challengeUnavailable, "spent"), .authentication),
            (DomainError(.verificationFailed, "odd", reason: "unknown_credential"), .registration),
        ] {
            let other = await error(domain, ceremony: ceremony)
            XCTAssertFalse(other.isUnknownCredential, "\(domain)")
        }
        XCTAssertTrue(PasskeyClientError.Reason.known.contains(.unknownCredential))
    }

    func testEveryGatewayProblemBecomesItsTypedError() async throws {
        var problems: [APIProblem] = DomainError.Code.allCases.map { code in
            ProblemMapping.problem(
                for: DomainError(code, "message", reason: code == .verificationFailed ? "origin_mismatch" : nil))
        }
        problems += [
            .payloadTooLarge, .unsupportedMediaType, .methodNotAllowed(allowed: ["GET"]),
            .rateLimited(retryAfterSeconds: 3),
            .internalError, .notFound,
        ]
        problems += [408, 431, 501, 505, 400].map(APIProblem.refusal(status:))
        for problem in problems {
            let response = problem.response
            var headers: [String: String] = [:]
            for field in response.headers { headers[field.name] = field.value }
            let error = await clientError(
                for: PasskeyHTTPResponse(status: response.status, headers: headers, body: Data(response.body)))
            XCTAssertEqual(error.code.rawValue, problem.code)
            XCTAssertEqual(error.status, problem.status)
            XCTAssertEqual(error.reason?.rawValue, problem.reason)
            XCTAssertEqual(error.detail, problem.detail)
            XCTAssertTrue(error.isProblem)
            XCTAssertTrue(PasskeyClientError.Code.gatewayCodes.contains(error.code), problem.code)
            if problem.code == "rate_limited" { XCTAssertNotNil(error.retryAfterSeconds) }
        }
    }
}

extension PasskeyAccountCreationOptions {
    func with(userName: String?, displayName: String?) -> PasskeyAccountCreationOptions {
        var options = self
        options.userName = userName
        options.displayName = displayName
        return options
    }
}

/// The error the client reports for `response` to any request.
func clientError(for response: PasskeyHTTPResponse) async -> PasskeyClientError {
    do {
        _ = try await makeClient(ScriptedTransport(always: response), retry: .none).send(SignOutOperation())
        return PasskeyClientError(code: .internalError, detail: "no error")
    } catch let error as PasskeyClientError {
        return error
    } catch {
        return PasskeyClientError(code: .internalError, detail: "\(error)")
    }
}
