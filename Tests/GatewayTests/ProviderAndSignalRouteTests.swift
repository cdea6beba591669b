import Configuration
import Domain
import Encoding
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import Observability
import PasskeyProviders
import ServiceContracts
import XCTest

/// The passkey providers' names and icons, what the page's Signal API calls need, the display name change, and the
/// enroll and manage pages of `/.well-known/passkey-endpoints`.
final class ProviderAndSignalRouteTests: XCTestCase {
    let backends = FakeBackends()
    static let google = "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4"
    static let apple = "fbfc3007-154e-4ecc-8c0b-6e020557d7bd"

    func makeApplication(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: backends,
            logger: Logger(service: "gateway", minimumLevel: .info, sink: MemoryLogSink()), metrics: MetricsRegistry())
    }

    func request(
        _ method: String, _ path: String, body: JSONValue? = nil, token: String? = nil, headers: [(String, String)] = []
    )
        -> HTTPRequest
    {
        var fields = HTTPHeaders([("host", "localhost")] + headers)
        if body != nil { fields.add("content-type", "application/json") }
        if let token { fields.add("authorization", "Bearer \(token)") }
        return HTTPRequest(
            method: method, path: path, headers: fields, body: body?.serialized() ?? [], remoteAddress: "127.0.0.1")
    }

    func signedIn(_ method: AuthenticationMethod = .passkey) {
        var info = SessionInfo()
        info.sessionID = "0191e4f2-0000-7000-8000-000000000001"
        info.accountID = "acc-1"
        info.authenticationMethod = method
        info.createdAtUnixMilliseconds = unixMillisecondsNow()
        info.expiresAtUnixMilliseconds = unixMillisecondsNow() + 900_000
        backends.answer(SessionServiceMethods.validateSession, info)
    }

    // MARK: - Icons

    func testAListedProvidersIconsAreServedWithTheirTypeCachingAndASandbox() async throws {
        let application = try makeApplication()
        let shipped = try PasskeyProviderCatalog.shipped.get()
        for variant in ["light", "dark"] {
            let response = await application.respond(
                to: request("GET", "/v1/passkey-providers/\(Self.google)/icons/\(variant)"))
            XCTAssertEqual(response.status, 200, variant)
            XCTAssertEqual(response.headers["content-type"], "image/svg+xml")
            XCTAssertEqual(response.headers["cache-control"], "public, max-age=86400")
            XCTAssertEqual(response.headers["x-content-type-options"], "nosniff")
            XCTAssertTrue(response.headers["content-security-policy"]?.contains("sandbox") == true)
            let provider = try XCTUnwrap(shipped.provider(forText: Self.google))
            XCTAssertEqual(response.body, provider.icon(variant == "light" ? .light : .dark)?.bytes)
            let etag = try XCTUnwrap(response.headers["etag"])
            let again = await application.respond(
                to: request(
                    "GET", "/v1/passkey-providers/\(Self.google)/icons/\(variant)", headers: [("if-none-match", etag)]))
            XCTAssertEqual(again.status, 304)
            XCTAssertTrue(again.body.isEmpty)
            XCTAssertEqual(again.headers["etag"], etag)
            let stale = await application.respond(
                to: request(
                    "GET", "/v1/passkey-providers/\(Self.google)/icons/\(variant)",
                    headers: [("if-none-match", "\"other\"")]))
            XCTAssertEqual(stale.status, 200)
        }
        let upper = await application.respond(
            to: request("GET", "/v1/passkey-providers/\(Self.google.uppercased())/icons/light"))
        XCTAssertEqual(upper.status, 200, "the AAGUID is read in either case")
        XCTAssertTrue(backends.paths.isEmpty, "icons need no service")
    }

    func testIconPathsAreValidatedStrictlyAndNeverFailTheServer() async throws {
        let application = try makeApplication()
        let shipped = try PasskeyProviderCatalog.shipped.get()
        let nameOnly = try XCTUnwrap(
            shipped.aaguids.first { shipped.provider(for: $0)?.lightIcon == nil }?.lowercaseText,
            "the shipped list has entries without icons")
        let cases: [(String, Int)] = [
            ("/v1/passkey-providers/00000000-0000-0000-0000-000000000000/icons/light", 404),
            ("/v1/passkey-providers/12345678-1234-1234-1234-123456789abc/icons/dark", 404),
            ("/v1/passkey-providers/\(nameOnly)/icons/light", 404),
            ("/v1/passkey-providers/not-a-uuid/icons/light", 400),
            ("/v1/passkey-providers/\(Self.google)x/icons/light", 400),
            ("/v1/passkey-providers/ea9b8d664d011d213ce4b6b48cb575d4/icons/light", 400),
            ("/v1/passkey-providers/\(Self.google)/icons/sepia", 400),
            ("/v1/passkey-providers/\(Self.google)/icons/LIGHT", 400),
            ("/v1/passkey-providers/\(Self.google)/icons/%ZZ", 404),
            ("/v1/passkey-providers/%E2%80%8B/icons/light", 400),
            ("/v1/passkey-providers/\(String(repeating: "a", count: 5000))/icons/light", 400),
            ("/v1/passkey-providers/\(Self.google)/icons", 404),
            ("/v1/passkey-providers/\(Self.google)/icons/light/extra", 404),
        ]
        for (path, status) in cases {
            let response = await application.respond(to: request("GET", path))
            XCTAssertEqual(response.status, status, path)
            XCTAssertEqual(response.headers["content-type"], "application/problem+json", path)
        }
        let post = await application.respond(
            to: request("POST", "/v1/passkey-providers/\(Self.google)/icons/light", body: [:]))
        XCTAssertEqual(post.status, 405)
    }

    // MARK: - The passkey listing

    func testTheListingNamesKnownProvidersWithIconPathsAndLeavesOthersNull() async throws {
        let application = try makeApplication([
            "PASSKEY_RP_ID": "example.com", "PASSKEY_ORIGINS": "https://example.com",
        ])
        signedIn()
        var google = PasskeyCredentialInfo()
        google.credentialID = [1, 2, 3]
        google.name = "Google Password Manager"
        google.aaguid = Self.google
        var unknown = google
        unknown.credentialID = [4, 5, 6]
        unknown.aaguid = "00000000-0000-0000-0000-000000000000"
        var list = ListCredentialsResponse()
        list.credentials = [google, unknown]
        list.userHandle = Array(repeating: 0xAB, count: 32)
        backends.answer(VerificationServiceMethods.listCredentials, list)
        let response = await application.respond(to: request("GET", "/v1/passkeys", token: "t"))
        XCTAssertEqual(response.status, 200)
        let document = try JSONReader.parse(response.body)
        XCTAssertEqual(document["rpID"], "example.com")
        XCTAssertEqual(document["userHandle"]?.stringValue, Base64URL.encode(list.userHandle))
        XCTAssertEqual(backends.paths.filter { $0.contains("SessionService") && !$0.hasSuffix("ValidateSession") }, [])
        let passkeys = try XCTUnwrap(document["passkeys"]?.arrayValue)
        XCTAssertEqual(passkeys.map { $0["credentialID"] }, ["AQID", "BAUG"])
        XCTAssertEqual(passkeys[0]["providerName"], "Google Password Manager")
        XCTAssertEqual(passkeys[0]["providerIconLight"], .string("/v1/passkey-providers/\(Self.google)/icons/light"))
        XCTAssertEqual(passkeys[0]["providerIconDark"], .string("/v1/passkey-providers/\(Self.google)/icons/dark"))
        XCTAssertEqual(passkeys[1]["providerName"], .null)
        XCTAssertEqual(passkeys[1]["providerIconLight"], .null)
        XCTAssertEqual(passkeys[1]["providerIconDark"], .null)
        // The icon paths it gives are served.
        for path in [passkeys[0]["providerIconLight"], passkeys[0]["providerIconDark"]].compactMap({ $0?.stringValue })
        {
            let icon = await application.respond(to: request("GET", path))
            XCTAssertEqual(icon.status, 200, path)
        }
    }

    func testAProviderCatalogGivenToTheGatewayIsTheOneUsed() async throws {
        let catalog = try PasskeyProviderCatalog(
            json: Array(#"{"12345678-1234-1234-1234-123456789abc": {"name": "Test Vault"}}"#.utf8))
        let application = GatewayApplication(
            configuration: try GatewayConfiguration(environment: [:]), backends: backends,
            logger: Logger(service: "gateway", minimumLevel: .info, sink: MemoryLogSink()), metrics: MetricsRegistry(),
            providers: catalog)
        signedIn()
        var info = PasskeyCredentialInfo()
        info.credentialID = [1]
        info.aaguid = "12345678-1234-1234-1234-123456789ABC"
        var list = ListCredentialsResponse()
        list.credentials = [info]
        backends.answer(VerificationServiceMethods.listCredentials, list)
        let response = await application.respond(to: request("GET", "/v1/passkeys", token: "t"))
        let passkey = try XCTUnwrap(JSONReader.parse(response.body)["passkeys"]?.arrayValue?.first)
        XCTAssertEqual(passkey["providerName"], "Test Vault")
        XCTAssertEqual(passkey["providerIconLight"], JSONValue.null, "a provider without icons links to none")
        let google = await application.respond(to: request("GET", "/v1/passkey-providers/\(Self.google)/icons/light"))
        XCTAssertEqual(google.status, 404, "only the given catalog's providers")
    }

    // MARK: - The display name

    func testChangingTheDisplayNameCallsSessionServiceAndAnswersTheAccount() async throws {
        let application = try makeApplication()
        signedIn()
        var summary = AccountSummary()
        summary.accountID = "acc-1"
        summary.displayName = "Ada L."
        summary.emails = ["ada@example.com"]
        summary.userHandle = [1, 2, 3]
        summary.userName = "ada@example.com"
        backends.answer(SessionServiceMethods.updateDisplayName, summary)
        let response = await application.respond(
            to: request("PATCH", "/v1/account", body: ["displayName": "Ada L."], token: "t"))
        XCTAssertEqual(response.status, 200)
        let document = try JSONReader.parse(response.body)
        XCTAssertEqual(document["displayName"], "Ada L.")
        XCTAssertEqual(document["userHandle"], "AQID")
        XCTAssertEqual(document["userName"], "ada@example.com")
        let sent = try backends.request(SessionServiceMethods.updateDisplayName, as: UpdateDisplayNameRequest.self)
        XCTAssertEqual(sent.accountID, "acc-1")
        XCTAssertEqual(sent.displayName, "Ada L.")
    }

    func testABadDisplayNameIsRefusedBeforeAnyServiceAndARecoverySessionMayNotRename() async throws {
        let application = try makeApplication()
        signedIn()
        backends.answer(SessionServiceMethods.updateDisplayName, AccountSummary())
        for body: JSONValue in [
            [:], ["displayName": ""], ["displayName": "   "], ["displayName": "a\u{7}b"],
            ["displayName": .string(String(repeating: "n", count: 129))], ["displayName": 5], ["name": "x"],
        ] {
            let response = await application.respond(to: request("PATCH", "/v1/account", body: body, token: "t"))
            XCTAssertEqual(response.status, 400, "\(body)")
            XCTAssertEqual(try JSONReader.parse(response.body)["code"], "invalid_request")
        }
        XCTAssertFalse(backends.paths.contains(SessionServiceMethods.updateDisplayName.path))
        let anonymous = await application.respond(to: request("PATCH", "/v1/account", body: ["displayName": "x"]))
        XCTAssertEqual(anonymous.status, 401)
        signedIn(.recovery)
        let recovery = await application.respond(
            to: request("PATCH", "/v1/account", body: ["displayName": "x"], token: "t"))
        XCTAssertEqual(recovery.status, 403)
        XCTAssertFalse(backends.paths.contains(SessionServiceMethods.updateDisplayName.path))
    }

    // MARK: - Sign-in failures

    func testUnknownCredentialReachesThePageAsItsOwnReasonAndOtherFailuresDoNot() async throws {
        let application = try makeApplication()
        let body: JSONValue = [
            "challengeID": "3f2a1c9e-0000-4000-8000-000000000000", "credentialID": "AQID", "clientDataJSON": "AQID",
            "authenticatorData": "AQID", "signature": "AQID", "userHandle": "AQID",
        ]
        let cases: [(DomainError, String?)] = [
            (
                DomainError(.invalidCredentials, "the passkey is not registered", reason: "unknown_credential"),
                "unknown_credential"
            ),
            (DomainError(.invalidCredentials, "bad", reason: "signature_invalid"), "signature_invalid"),
            (DomainError(.invalidCredentials, "concurrent"), nil),
        ]
        for (error, reason) in cases {
            backends.fail(VerificationServiceMethods.finishAuthentication, error)
            let response = await application.respond(
                to: request("POST", "/v1/passkeys/authentications/finish", body: body))
            XCTAssertEqual(response.status, 401)
            let problem = try JSONReader.parse(response.body)
            XCTAssertEqual(problem["code"], "invalid_credentials")
            XCTAssertEqual(problem["reason"]?.stringValue, reason)
        }
    }

    // MARK: - The enroll and manage pages

    func testTheEnrollAndManagePagesExistAndTheDocumentPointsAtThem() async throws {
        let application = try makeApplication(["PASSKEY_ORIGINS": "https://example.com"])
        let root = await application.respond(to: request("GET", "/"))
        XCTAssertEqual(root.status, 200)
        let endpoints = try JSONReader.parse(
            await application.respond(to: request("GET", "/.well-known/passkey-endpoints")).body)
        XCTAssertEqual(
            endpoints,
            ["enroll": "https://example.com/passkeys/enroll", "manage": "https://example.com/passkeys/manage"])
        for path in ["/passkeys/enroll", "/passkeys/manage"] {
            let page = await application.respond(to: request("GET", path))
            XCTAssertEqual(page.status, 200, path)
            XCTAssertEqual(page.headers["content-type"], "text/html; charset=utf-8")
            XCTAssertEqual(page.body, root.body, "the page, which opens on the section its path names")
            XCTAssertNotNil(page.headers["content-security-policy"])
            let post = await application.respond(to: request("POST", path, body: [:]))
            XCTAssertEqual(post.status, 405, path)
        }
        for path in ["/passkeys/new", "/passkeys/enroll/", "/passkeys/Manage"] {
            let missing = await application.respond(to: request("GET", path))
            XCTAssertEqual(missing.status, 404, path)
        }
    }

    func testConfiguredPagesAreWhatTheDocumentSays() async throws {
        let application = try makeApplication([
            "PASSKEY_ORIGINS": "https://example.com",
            "PASSKEY_ENROLL_PAGE": "https://accounts.example.com/passkeys/add",
            "PASSKEY_MANAGE_PAGE": "/settings/security#passkeys",
        ])
        let endpoints = try JSONReader.parse(
            await application.respond(to: request("GET", "/.well-known/passkey-endpoints")).body)
        XCTAssertEqual(
            endpoints,
            [
                "enroll": "https://accounts.example.com/passkeys/add",
                "manage": "https://example.com/settings/security#passkeys",
            ])
    }
}
