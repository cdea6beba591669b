import Configuration
import Domain
import Encoding
import Foundation
import GRPC
import HTTPMessages
import JSON
import ServiceContracts
import WebAuthn
import XCTest

@testable import GatewayCore

final class ProblemMappingTests: XCTestCase {
    func testEveryDomainErrorHasTheStatusOfTheAPIReference() {
        let expected: [DomainError.Code: Int] = [
            .invalidRequest: 400, .verificationFailed: 400, .unauthenticated: 401, .invalidCredentials: 401,
            .forbidden: 403, .notFound: 404, .emailTaken: 409, .credentialAlreadyRegistered: 409,
            .lastSignInMethod: 409, .challengeUnavailable: 410, .rateLimited: 429, .unavailable: 503,
            .invalidCode: 400, .accountDisabled: 403, .conflict: 409, .weakPassword: 400,
        ]
        for code in DomainError.Code.allCases {
            let problem = ProblemMapping.problem(for: DomainError(code, "m"))
            XCTAssertEqual(problem.status, expected[code], "\(code)")
            XCTAssertEqual(problem.code, code.rawValue)
            // Through gRPC and back, as the gateway sees a service's error.
            let overTheWire = ProblemMapping.problem(for: ServiceErrors.rpcError(DomainError(code, "m")))
            XCTAssertEqual(overTheWire.status, expected[code])
            XCTAssertEqual(overTheWire.code, code.rawValue)
        }
    }

    func testWebAuthnFailuresFollowTheCeremony() {
        for code in [DomainError.Code.verificationFailed, .invalidCredentials] {
            let error = ServiceErrors.rpcError(DomainError(code, "check failed", reason: "signature_invalid"))
            let registration = ProblemMapping.problem(for: error, ceremony: .registration)
            XCTAssertEqual(registration.status, 400)
            XCTAssertEqual(registration.code, "verification_failed")
            XCTAssertEqual(registration.reason, "signature_invalid")
            let authentication = ProblemMapping.problem(for: error, ceremony: .authentication)
            XCTAssertEqual(authentication.status, 401)
            XCTAssertEqual(authentication.code, "invalid_credentials")
            XCTAssertEqual(authentication.reason, "signature_invalid")
        }
        let unavailable = ProblemMapping.problem(
            for: ServiceErrors.rpcError(DomainError(.challengeUnavailable, "gone")), ceremony: .authentication)
        XCTAssertEqual(unavailable.status, 410)
    }

    func testTransportFailuresAreUnavailableAndOthersInternal() {
        for code in [GRPCStatusCode.unavailable, .deadlineExceeded, .cancelled, .unimplemented] {
            XCTAssertEqual(ProblemMapping.problem(for: RPCError(code: code, message: "x")), .unavailable)
        }
        XCTAssertEqual(ProblemMapping.problem(for: RPCError(code: .internal, message: "secret SQL")).status, 500)
        XCTAssertEqual(ProblemMapping.problem(for: RPCError(code: .unknown, message: "x")).code, "internal_error")
    }

    func testEveryUnavailableAnswerAsksToRetryAfterTwoSeconds() {
        // A service that cannot be reached, and a service whose database failed (its domain error `unavailable`).
        let unreachable = ProblemMapping.problem(for: RPCError(code: .unavailable, message: "x"))
        let databaseFailed = ProblemMapping.problem(
            for: ServiceErrors.domainError(
                from: ServiceErrors.rpcError(DomainError(.unavailable, "The database cannot serve this request.")))!)
        for problem in [unreachable, databaseFailed, APIProblem.unavailable] {
            XCTAssertEqual(problem.status, 503)
            XCTAssertEqual(problem.code, "unavailable")
            XCTAssertEqual(problem.headers.filter { $0.0 == "retry-after" }.map(\.1), ["2"])
        }
        XCTAssertEqual(ProblemMapping.problem(for: DomainError(.notFound, "x")).headers.count, 0)
    }

    func testALockedPasswordSaysWhyAndWhenToRetry() {
        let locked = DomainError(
            .rateLimited, "too many failed password sign-ins", reason: "too_many_failed_guesses", retryAfterSeconds: 72)
        let problem = ProblemMapping.problem(for: ServiceErrors.rpcError(locked))
        XCTAssertEqual(problem.status, 429)
        XCTAssertEqual(problem.code, "rate_limited")
        XCTAssertEqual(problem.reason, "too_many_failed_guesses")
        XCTAssertEqual(problem.headers.filter { $0.0 == "retry-after" }.map(\.1), ["72"])
        let plain = ProblemMapping.problem(for: DomainError(.rateLimited, "busy"))
        XCTAssertEqual(plain.headers.filter { $0.0 == "retry-after" }.map(\.1), ["1"])
    }

    func testProblemJSONShapeAndHeaders() throws {
        let problem = ProblemMapping.problem(
            for: DomainError(.verificationFailed, "User presence is required.", reason: "user_present_flag_not_set"))
        let response = problem.response
        XCTAssertEqual(response.headers["content-type"], "application/problem+json")
        let body = try JSONReader.parse(response.body)
        XCTAssertEqual(body.objectValue?.keys, ["type", "title", "status", "code", "reason", "detail"])
        XCTAssertEqual(body["status"], 400)
        XCTAssertEqual(body["title"], "Bad Request")
        XCTAssertEqual(body["code"], "verification_failed")
        XCTAssertEqual(body["reason"], "user_present_flag_not_set")
        XCTAssertEqual(body["type"]?.stringValue?.hasSuffix("/verification-failed"), true)
        let limited = APIProblem.rateLimited(retryAfterSeconds: 7).response
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(limited.headers["retry-after"], "7")
        XCTAssertEqual(APIProblem.unauthenticated().response.headers["www-authenticate"], "Bearer")
        XCTAssertNil(try JSONReader.parse(APIProblem.notFound.response.body)["reason"])
        // Sign-in failures never show the service's message, which could tell an unknown email apart.
        let signIn = ProblemMapping.problem(for: DomainError(.invalidCredentials, "no such email"))
        XCTAssertNotEqual(signIn.detail, "no such email")
        XCTAssertEqual(APIProblem.refusal(status: 431).status, 431)
        XCTAssertEqual(APIProblem.refusal(status: 413).code, "payload_too_large")
        XCTAssertEqual(APIProblem.refusal(status: 400).code, "invalid_request")
        XCTAssertEqual(APIProblem.refusal(status: 408).code, "request_timeout")
    }
}

final class ResponseDocumentTests: XCTestCase {
    func registrationResponse(mode: RegistrationMode) -> BeginRegistrationResponse {
        var response = BeginRegistrationResponse()
        response.challengeID = "c-1"
        response.challenge = Array(repeating: 0xAB, count: 32)
        response.expiresAtUnixMilliseconds = 1_798_000_000_123
        response.relyingPartyID = "example.com"
        response.relyingPartyName = "Example"
        response.userHandle = Array(repeating: 1, count: 16)
        response.userName = "a@example.com"
        response.userDisplayName = "A"
        var excluded = CredentialDescriptor()
        excluded.id = [5, 6, 7]
        excluded.transports = ["internal"]
        response.excludeCredentials = [excluded]
        response.mode = mode
        response.timeoutMilliseconds = 300_000
        return response
    }

    func testCreationOptionsShape() throws {
        let document = try JSONReader.parse(
            ResponseDocuments.registrationStart(registrationResponse(mode: .modal), options: .standard).serialized())
        for key in [
            "challengeID", "relyingPartyID", "userID", "userName", "displayName", "challenge", "expiresAt", "publicKey",
        ] {
            XCTAssertNotNil(document[key], key)
        }
        XCTAssertNil(document["mediation"])
        XCTAssertEqual(document["userID"]?.stringValue, Base64URL.encode(Array(repeating: 1, count: 16)))
        XCTAssertEqual(document["expiresAt"], "2026-12-23T04:26:40Z")
        let options = try XCTUnwrap(document["publicKey"])
        XCTAssertEqual(options["rp"], ["id": "example.com", "name": "Example"])
        XCTAssertEqual(options["user"]?["id"], document["userID"])
        XCTAssertEqual(options["user"]?["name"], "a@example.com")
        XCTAssertEqual(options["user"]?["displayName"], "A")
        XCTAssertEqual(options["challenge"], document["challenge"])
        XCTAssertFalse(options["challenge"]!.stringValue!.contains("="))
        let algorithms = options["pubKeyCredParams"]?.arrayValue?.compactMap { $0["alg"]?.numberValue }
        // The verifier's own list, ES256 first: what is offered is exactly what a registration may use.
        XCTAssertEqual(algorithms?.map { Int($0) }, CeremonyOptions.standard.algorithms)
        XCTAssertEqual(algorithms?.prefix(3).map { Int($0) }, [-7, -8, -257])
        XCTAssertEqual(Set(CeremonyOptions.standard.algorithms), Set(COSEAlgorithm.defaultAllowed))
        // And the document lists every algorithm PASSKEY_ALGORITHMS may offer, the standard ones in their order.
        let openAPI = try JSONReader.parse(OpenAPIDocument.bytes)
        let documented = openAPI["components"]?["schemas"]?["PublicKeyCredentialCreationOptionsJSON"]?["properties"]?[
            "pubKeyCredParams"]?["items"]?["properties"]?["alg"]?["enum"]?.arrayValue?.compactMap {
                (value: JSONValue) in value.numberValue
            }
        XCTAssertEqual(documented?.map { Int($0) }, CeremonyOptions.standard.algorithms + [COSEAlgorithm.rs1.rawValue])
        XCTAssertEqual(Set(documented?.map { Int($0) } ?? []), Set(COSEAlgorithm.credentialAlgorithms))
        XCTAssertTrue(options["pubKeyCredParams"]!.arrayValue!.allSatisfy { $0["type"] == "public-key" })
        XCTAssertEqual(options["timeout"], 300_000)
        XCTAssertEqual(
            options["excludeCredentials"],
            [["type": "public-key", "id": .string(Base64URL.encode([5, 6, 7])), "transports": ["internal"]]])
        XCTAssertEqual(options["authenticatorSelection"]?["residentKey"], "required")
        XCTAssertEqual(options["authenticatorSelection"]?["userVerification"], "preferred")
        XCTAssertEqual(options["attestation"], "none")
    }

    func testConditionalModeAddsMediationBesidePublicKey() throws {
        let document = try JSONReader.parse(
            ResponseDocuments.registrationStart(registrationResponse(mode: .conditional), options: .standard)
                .serialized())
        XCTAssertEqual(document["mediation"], "conditional")
        XCTAssertNil(document["publicKey"]?["mediation"])
    }

    func testAccountRegistrationAndAuthenticationOptions() throws {
        var account = BeginAccountRegistrationResponse()
        account.registrationID = "r-1"
        account.challenge = [1, 2, 3]
        account.userHandle = [4, 5]
        account.relyingPartyID = "example.com"
        account.timeoutMilliseconds = 600_000
        let accountDocument = try JSONReader.parse(
            ResponseDocuments.accountRegistrationStart(account, options: .standard).serialized())
        XCTAssertEqual(accountDocument["registrationID"], "r-1")
        XCTAssertEqual(accountDocument["userID"], "BAU")
        XCTAssertEqual(accountDocument["publicKey"]?["excludeCredentials"], [])
        XCTAssertEqual(accountDocument["publicKey"]?["authenticatorSelection"]?["residentKey"], "required")

        var authentication = BeginAuthenticationResponse()
        authentication.challengeID = "a-1"
        authentication.challenge = [0xFF, 0xEE]
        authentication.relyingPartyID = "example.com"
        authentication.timeoutMilliseconds = 300_000
        authentication.expiresAtUnixMilliseconds = 0
        let document = try JSONReader.parse(
            ResponseDocuments.authenticationStart(authentication, options: .standard).serialized())
        XCTAssertEqual(document["challenge"], "_-4")
        XCTAssertEqual(document["expiresAt"], "1970-01-01T00:00:00Z")
        XCTAssertEqual(
            document["publicKey"],
            [
                "rpId": "example.com", "challenge": "_-4", "timeout": 300_000, "allowCredentials": [],
                "userVerification": "preferred",
            ])
    }

    /// A configured policy changes exactly the members it decides, in both kinds of options.
    func testOptionsFollowTheConfiguredPolicy() throws {
        let policy = CeremonyOptions(
            algorithms: [-7, -65535], registrationUserVerification: .required,
            authenticationUserVerification: .discouraged, residentKey: .preferred, hints: [.clientDevice, .hybrid],
            attestation: .direct)
        let creation = try XCTUnwrap(
            try JSONReader.parse(
                ResponseDocuments.registrationStart(registrationResponse(mode: .modal), options: policy).serialized())[
                    "publicKey"])
        XCTAssertEqual(creation["pubKeyCredParams"]?.arrayValue?.compactMap { $0["alg"]?.numberValue }, [-7, -65535])
        XCTAssertEqual(
            creation["authenticatorSelection"],
            ["residentKey": "preferred", "requireResidentKey": false, "userVerification": "required"])
        XCTAssertEqual(creation["attestation"], "direct")
        XCTAssertEqual(creation["hints"], ["client-device", "hybrid"])
        var account = BeginAccountRegistrationResponse()
        account.challenge = [1]
        let accountOptions = try JSONReader.parse(
            ResponseDocuments.accountRegistrationStart(account, options: policy).serialized())["publicKey"]
        XCTAssertEqual(accountOptions?["pubKeyCredParams"], creation["pubKeyCredParams"])
        XCTAssertEqual(accountOptions?["authenticatorSelection"], creation["authenticatorSelection"])
        XCTAssertEqual(accountOptions?["hints"], ["client-device", "hybrid"])
        var authentication = BeginAuthenticationResponse()
        authentication.challenge = [1]
        let request = try JSONReader.parse(
            ResponseDocuments.authenticationStart(authentication, options: policy).serialized())["publicKey"]
        XCTAssertEqual(request?["userVerification"], "discouraged")
        XCTAssertEqual(request?["hints"], ["client-device", "hybrid"])
        // The standard options send no hints at all.
        let standard = try JSONReader.parse(
            ResponseDocuments.authenticationStart(authentication, options: .standard).serialized())["publicKey"]
        XCTAssertNil(standard?["hints"])
        XCTAssertNil(try creationWithStandard()["hints"])
    }

    private func creationWithStandard() throws -> JSONValue {
        try XCTUnwrap(
            try JSONReader.parse(
                ResponseDocuments.registrationStart(registrationResponse(mode: .modal), options: .standard).serialized()
            )[
                "publicKey"])
    }

    func testSessionAndAccountDocuments() throws {
        var issued = IssuedSession()
        issued.accessToken = "token"
        issued.expiresAtUnixMilliseconds = 86_400_000
        issued.accountID = "acc"
        issued.displayName = "A"
        issued.sessionID = "sid"
        let session = ResponseDocuments.session(issued)
        XCTAssertEqual(
            session.objectValue?.keys,
            [
                "accessToken", "tokenType", "expiresAt", "expiresIn", "sessionID", "sessionExpiresAt", "accountID",
                "displayName",
            ],
            "an opaque session has no refresh members")
        XCTAssertEqual(session["tokenType"], "Bearer")
        XCTAssertEqual(session["expiresAt"], "1970-01-02T00:00:00Z")
        XCTAssertEqual(session["expiresIn"], 0, "long past")
        // A session with signed tokens: the access token's expiry, and the refresh members unless in a cookie.
        issued.accessTokenExpiresAtUnixMilliseconds = 3_600_000
        issued.refreshToken = "prt_x"
        issued.refreshTokenExpiresAtUnixMilliseconds = 7_200_000
        let signed = ResponseDocuments.session(issued)
        XCTAssertEqual(signed["expiresAt"], "1970-01-01T01:00:00Z")
        XCTAssertEqual(signed["sessionExpiresAt"], "1970-01-02T00:00:00Z")
        XCTAssertEqual(signed["refreshToken"], "prt_x")
        XCTAssertEqual(signed["refreshTokenExpiresAt"], "1970-01-01T02:00:00Z")
        XCTAssertNil(ResponseDocuments.session(issued, includingRefreshToken: false)["refreshToken"])
        var info = PasskeyCredentialInfo()
        info.credentialID = [1]
        info.createdAtUnixMilliseconds = 1000
        XCTAssertEqual(ResponseDocuments.passkey(info)["lastUsedAt"], .null)
        info.lastUsedAtUnixMilliseconds = 2000
        XCTAssertEqual(ResponseDocuments.passkey(info)["lastUsedAt"], "1970-01-01T00:00:02Z")
        XCTAssertEqual(ResponseDocuments.timestamp(unixMilliseconds: 951_782_400_999), "2000-02-29T00:00:00Z")
        XCTAssertEqual(ResponseDocuments.timestamp(unixMilliseconds: -1), "1969-12-31T23:59:59Z")
        // What apps parse with Foundation's default ISO 8601 formatter.
        let parsed = ISO8601DateFormatter().date(from: ResponseDocuments.timestamp(unixMilliseconds: 1_798_000_000_123))
        XCTAssertEqual(parsed?.timeIntervalSince1970, 1_798_000_000)
    }
}

final class ClientAddressTests: XCTestCase {
    func testPeerIsTheClientUnlessItIsATrustedProxy() {
        let resolver = ClientAddressResolver(trustedProxies: ["10.0.0.1", "192.168.0.0/16", "fd00::/8"])
        XCTAssertEqual(resolver.clientAddress(peer: "203.0.113.9", forwardedFor: ["1.2.3.4"]), "203.0.113.9")
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: []), "10.0.0.1")
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["1.2.3.4"]), "1.2.3.4")
        // The rightmost untrusted hop: spoofed hops on the left are ignored.
        XCTAssertEqual(
            resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6, 1.2.3.4, 192.168.4.4"]), "1.2.3.4")
        XCTAssertEqual(
            resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["6.6.6.6", "1.2.3.4", "192.168.4.4"]), "1.2.3.4")
        // Every hop trusted: the leftmost is the client.
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["192.168.1.1, 10.0.0.1"]), "192.168.1.1")
        // Ports, brackets, IPv6 and IPv4-mapped forms.
        XCTAssertEqual(resolver.clientAddress(peer: "fd00::5", forwardedFor: ["[2001:db8::1]:443"]), "2001:db8::1")
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["1.2.3.4:5678"]), "1.2.3.4")
        XCTAssertEqual(resolver.clientAddress(peer: "::ffff:10.0.0.1", forwardedFor: ["1.2.3.4"]), "1.2.3.4")
        // A hop that is not an address stops the walk at the last believed address.
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["1.2.3.4, garbage"]), "10.0.0.1")
        XCTAssertEqual(resolver.clientAddress(peer: "10.0.0.1", forwardedFor: ["garbage, 192.168.0.7"]), "192.168.0.7")
    }

    func testNoTrustedProxiesMeansTheHeaderIsIgnored() {
        let resolver = ClientAddressResolver(trustedProxies: [])
        XCTAssertEqual(resolver.clientAddress(peer: "127.0.0.1", forwardedFor: ["1.2.3.4"]), "127.0.0.1")
    }

    /// The trusted-proxy blocks hold their own family: an IPv4-mapped peer is the IPv4 address, and an IPv6 block
    /// does not make IPv4 peers trusted.
    func testTrustedBlocksHoldTheirOwnFamily() {
        let resolver = ClientAddressResolver(trustedProxies: ["10.0.0.0/8", "::/0", "not a block"])
        XCTAssertEqual(resolver.clientAddress(peer: "::ffff:10.0.0.1", forwardedFor: ["1.2.3.4"]), "1.2.3.4")
        XCTAssertEqual(resolver.clientAddress(peer: "192.168.0.1", forwardedFor: ["1.2.3.4"]), "192.168.0.1")
        XCTAssertEqual(resolver.clientAddress(peer: "2001:db8::1", forwardedFor: ["1.2.3.4"]), "1.2.3.4")
        XCTAssertEqual(resolver.clientAddress(peer: "::ffff:192.168.0.1", forwardedFor: ["1.2.3.4"]), "192.168.0.1")
    }
}

final class WellKnownDocumentTests: XCTestCase {
    let fingerprint = (0..<32).map { _ in "AB" }.joined(separator: ":")

    func testDocumentsFromConfiguration() throws {
        let configuration = try GatewayConfiguration(environment: [
            "PASSKEY_RP_ID": "example.com",
            "PASSKEY_ORIGINS": "https://example.com,android:apk-key-hash:" + String(repeating: "A", count: 43)
                + ",https://login.example.com",
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app",
            "PASSKEY_ANDROID_APPS":
                "com.example.app:\(fingerprint),com.example.app:\(fingerprint.replacingOccurrences(of: "AB", with: "CD")),org.other:\(fingerprint)",
        ])
        XCTAssertEqual(
            JSONWriter.string(WellKnownDocuments.appleAppSiteAssociation(appIDs: configuration.appleAppIDs)),
            #"{"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#)
        let links = WellKnownDocuments.assetLinks(apps: configuration.androidApps).arrayValue ?? []
        XCTAssertEqual(links.count, 4, "two packages, a statement for each relation")
        XCTAssertEqual(links[0]["relation"], ["delegate_permission/common.get_login_creds"])
        XCTAssertEqual(links[1]["relation"], ["delegate_permission/common.handle_all_urls"])
        XCTAssertEqual(links[0]["target"]?["namespace"], "android_app")
        XCTAssertEqual(links[0]["target"]?["package_name"], "com.example.app")
        XCTAssertEqual(links[0]["target"]?["sha256_cert_fingerprints"]?.arrayValue?.count, 2)
        XCTAssertEqual(links[1]["target"], links[0]["target"])
        XCTAssertEqual(links[2]["target"]?["package_name"], "org.other")
        XCTAssertEqual(links[3]["target"]?["package_name"], "org.other")
        XCTAssertEqual(
            WellKnownDocuments.relatedOrigins(origins: configuration.origins),
            ["origins": ["https://example.com", "https://login.example.com"]])
        XCTAssertEqual(
            WellKnownDocuments.passkeyEndpoints(origins: configuration.origins),
            ["enroll": "https://example.com/passkeys/enroll", "manage": "https://example.com/passkeys/manage"])
        XCTAssertNil(WellKnownDocuments.passkeyEndpoints(origins: ["android:apk-key-hash:x"]))
        // Absolute pages need no web origin; a path on one does.
        let pages = PasskeyEndpointPages(
            enroll: "https://accounts.example.com/security/passkeys/new?from=pm", manage: "/settings/passkeys")
        XCTAssertEqual(
            WellKnownDocuments.passkeyEndpoints(origins: configuration.origins, pages: pages),
            [
                "enroll": "https://accounts.example.com/security/passkeys/new?from=pm",
                "manage": "https://example.com/settings/passkeys",
            ])
        XCTAssertNil(WellKnownDocuments.passkeyEndpoints(origins: ["android:apk-key-hash:x"], pages: pages))
        XCTAssertEqual(
            WellKnownDocuments.passkeyEndpoints(
                origins: ["android:apk-key-hash:x"],
                pages: PasskeyEndpointPages(enroll: "https://a.example/e", manage: "https://a.example/m")),
            ["enroll": "https://a.example/e", "manage": "https://a.example/m"])
        XCTAssertEqual(WellKnownDocuments.assetLinks(apps: []), [])
    }
}

final class RouterTests: XCTestCase {
    func testMatchingParametersAndMethods() {
        var router = Router<Int>()
        router.add("GET", "/v1/passkeys", 1)
        router.add("PATCH", "/v1/passkeys/{credentialID}", 2)
        router.add("DELETE", "/v1/passkeys/{credentialID}", 3)
        guard case .found(2, let route, let parameters) = router.match(method: "PATCH", path: "/v1/passkeys/AQI%2D")
        else {
            return XCTFail("no match")
        }
        XCTAssertEqual(route, "PATCH /v1/passkeys/{credentialID}")
        XCTAssertEqual(parameters["credentialID"], "AQI-")
        guard case .found(1, _, _) = router.match(method: "HEAD", path: "/v1/passkeys") else { return XCTFail("HEAD") }
        guard case .methodNotAllowed(let allowed) = router.match(method: "POST", path: "/v1/passkeys/x") else {
            return XCTFail("405")
        }
        XCTAssertEqual(allowed, ["PATCH", "DELETE"])
        for path in ["/v1/passkeys/", "/v1/passkeys/a/b", "/v1/passkey", "v1/passkeys", "/v1/passkeys/%zz"] {
            guard case .notFound = router.match(method: "GET", path: path) else { return XCTFail(path) }
        }
    }

    /// A literal path beside a parameter route is a resource of its own: the parameter route neither answers it nor
    /// lends it methods, whichever order the routes were added in.
    func testALiteralSegmentBeatsAParameterAndA405ListsOnlyThatResourcesMethods() {
        func check(_ router: Router<Int>, _ order: String) {
            func allowed(_ method: String, _ path: String) -> [String]? {
                guard case .methodNotAllowed(let allowed) = router.match(method: method, path: path) else { return nil }
                return allowed.sorted()
            }
            func handler(_ method: String, _ path: String) -> Int? {
                guard case .found(let handler, _, _) = router.match(method: method, path: path) else { return nil }
                return handler
            }
            for method in ["OPTIONS", "PATCH", "DELETE", "GET", "HEAD", "PUT"] {
                XCTAssertEqual(allowed(method, "/v1/passkeys/authentications"), ["POST"], "\(order): \(method)")
                XCTAssertEqual(allowed(method, "/v1/sessions/password"), ["POST"], "\(order): \(method)")
            }
            XCTAssertEqual(handler("POST", "/v1/passkeys/authentications"), 1, order)
            XCTAssertEqual(handler("PATCH", "/v1/passkeys/AQID"), 2, order)
            XCTAssertEqual(handler("DELETE", "/v1/passkeys/AQID"), 3, order)
            XCTAssertEqual(handler("DELETE", "/v1/sessions/x"), 5, order)
            XCTAssertEqual(handler("POST", "/v1/sessions/password"), 6, order)
            XCTAssertEqual(allowed("OPTIONS", "/v1/passkeys/AQID"), ["DELETE", "PATCH"], order)
            XCTAssertEqual(allowed("POST", "/v1/passkeys/AQID"), ["DELETE", "PATCH"], order)
            XCTAssertEqual(allowed("OPTIONS", "/v1/passkeys"), ["GET", "HEAD"], order)
            XCTAssertEqual(allowed("OPTIONS", "/v1/sessions/x"), ["DELETE"], order)
            XCTAssertEqual(handler("HEAD", "/v1/passkeys"), 4, order)
        }
        let routes: [(String, String, Int)] = [
            ("POST", "/v1/passkeys/authentications", 1), ("PATCH", "/v1/passkeys/{credentialID}", 2),
            ("DELETE", "/v1/passkeys/{credentialID}", 3), ("GET", "/v1/passkeys", 4),
            ("DELETE", "/v1/sessions/{sessionID}", 5), ("POST", "/v1/sessions/password", 6),
        ]
        var forward = Router<Int>()
        for (method, pattern, handler) in routes { forward.add(method, pattern, handler) }
        check(forward, "literal first")
        var backward = Router<Int>()
        for (method, pattern, handler) in routes.reversed() { backward.add(method, pattern, handler) }
        check(backward, "parameter first")
        XCTAssertEqual(forward.methods(of: "/v1/passkeys/{id}"), ["PATCH", "DELETE"])
        XCTAssertEqual(forward.methods(of: "/v1/passkeys"), ["GET", "HEAD"])
        XCTAssertEqual(forward.methods(of: "/v1/nothing"), [])
    }

    /// The gateway's own routes: every path of the document answers every method it does not list with 405 and an
    /// `Allow` of exactly its methods (HEAD beside GET), and the router's methods of each path are the document's.
    func testEveryPathOfTheDocumentAllowsExactlyItsDocumentedMethods() throws {
        let document = try JSONReader.parse(OpenAPIDocument.bytes)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        let operations: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        for (pattern, item) in paths {
            let documented = (item.objectValue ?? [:]).keys.filter(operations.contains).map { $0.uppercased() }
            var expected = Set(documented)
            if expected.contains("GET") { expected.insert("HEAD") }
            XCTAssertEqual(Set(GatewayApplication.methods(of: pattern)), expected, pattern)
            XCTAssertEqual(GatewayApplication.methods(of: pattern).count, expected.count, "\(pattern): duplicates")
        }
    }

    /// docs/api.md, the reference written from the document, names every route, every problem code and every
    /// reason of it.
    func testTheAPIReferenceNamesEveryRouteCodeAndReason() throws {
        let reference = try String(contentsOfFile: packageRoot + "/docs/api.md", encoding: .utf8)
        for name in GatewayApplication.routeNames {
            XCTAssertTrue(reference.contains("`\(name)"), "\(name) is not in docs/api.md")
        }
        let document = try JSONReader.parse(OpenAPIDocument.bytes)
        let problem = try XCTUnwrap(document["components"]?["schemas"]?["Problem"]?["properties"])
        for key in ["code", "reason"] {
            for value in (problem[key]?["enum"]?.arrayValue ?? []).compactMap(\.stringValue) {
                XCTAssertTrue(reference.contains("`\(value)`"), "\(key) \(value) is not in docs/api.md")
            }
        }
    }

    /// The route table and the document, both ways: the same operations, and for each the same authentication (a
    /// bearer session exactly where the route's middleware requires one) and body (none, optional or required).
    func testTheRouteTableAndTheDocumentAgreeOnOperationsAuthenticationAndBodies() throws {
        let document = try JSONReader.parse(OpenAPIDocument.bytes)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        var documented: Set<String> = []
        for (path, item) in paths {
            for (method, _) in item.objectValue ?? JSONObject()
            where ["get", "post", "put", "patch", "delete"].contains(method) {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        XCTAssertEqual(Set(GatewayApplication.routes.map { "\($0.method) \($0.path)" }), documented)
        for route in GatewayApplication.routes {
            let name = "\(route.method) \(route.path)"
            let operation = paths[route.path]?[route.method.lowercased()]
            let bearer = !(operation?["security"]?.arrayValue ?? []).isEmpty
            switch route.session {
            case .none: XCTAssertFalse(bearer, "\(name): the document asks for a session the route does not check")
            case .required, .recentSignIn:
                XCTAssertTrue(bearer, "\(name): the route requires a session the document does not name")
            }
            let body = operation?["requestBody"]
            switch route.body {
            case .none, .ignored: XCTAssertNil(body, "\(name): the document has a body the route does not read")
            case .json: XCTAssertEqual(body?["required"], .boolean(true), "\(name): a required body")
            case .optionalJSON: XCTAssertEqual(body?["required"], .boolean(false), "\(name): an optional body")
            }
        }
    }

    func testOpenAPIDocumentDescribesEveryRoute() throws {
        let document = try JSONReader.parse(OpenAPIDocument.bytes)
        XCTAssertEqual(document["openapi"]?.stringValue?.hasPrefix("3.1"), true)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        for name in GatewayApplication.routeNames {
            let parts = name.split(separator: " ")
            let operation = paths[String(parts[1])]?[parts[0].lowercased()]
            XCTAssertNotNil(operation, "\(name) is not in openapi.json")
            XCTAssertNotNil(operation?["responses"], name)
        }
        XCTAssertEqual(paths.count, Set(GatewayApplication.routeNames.map { $0.split(separator: " ")[1] }).count)
        let codes = document["components"]?["schemas"]?["Problem"]?["properties"]?["code"]?["enum"]?.arrayValue ?? []
        for code in DomainError.Code.allCases {
            XCTAssertTrue(codes.contains(.string(code.rawValue)), code.rawValue)
        }
        // Every $ref points at something that exists.
        func check(_ value: JSONValue) {
            switch value {
            case .object(let object):
                for (key, member) in object {
                    if key == "$ref", let target = member.stringValue {
                        let pieces = target.dropFirst(2).split(separator: "/").map(String.init)
                        var node: JSONValue? = document
                        for piece in pieces { node = node?[piece] }
                        XCTAssertNotNil(node, target)
                    }
                    check(member)
                }
            case .array(let items): items.forEach(check)
            default: break
            }
        }
        check(document)
    }
}

final class AdminDocumentTests: XCTestCase {
    /// openapi-admin.json and the admin listener's routes, both ways: every route documented with its scope, and
    /// every documented operation routed.
    func testTheAdminDocumentDescribesEveryAdminRouteAndNothingElse() throws {
        let document = try JSONReader.parse(AdminOpenAPIDocument.bytes)
        XCTAssertEqual(document["openapi"]?.stringValue?.hasPrefix("3.1"), true)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        var documented: Set<String> = []
        for (path, item) in paths {
            for (method, operation) in try XCTUnwrap(item.objectValue) {
                documented.insert("\(method.uppercased()) \(path)")
                if !path.hasSuffix("openapi.json") {
                    let scope = operation["x-admin-scope"]?.stringValue
                    XCTAssertTrue(["read", "write", "erase"].contains(scope ?? ""), "\(method) \(path): scope")
                    XCTAssertNotNil(operation["responses"]?["401"], "\(method) \(path): 401")
                    XCTAssertNotNil(operation["responses"]?["403"], "\(method) \(path): 403")
                }
            }
        }
        XCTAssertEqual(documented, Set(AdminApplication.routeNames))
    }

    /// The admin route table and the document, both ways: the same operations, and for each the same token (an
    /// admin token exactly where the middleware asks for one), query parameters and body.
    func testTheAdminRouteTableAndTheDocumentAgreeOnTokensQueriesAndBodies() throws {
        let document = try JSONReader.parse(AdminOpenAPIDocument.bytes)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        XCTAssertEqual(
            AdminApplication.routes.count, Set(AdminApplication.routes.map { "\($0.method) \($0.path)" }).count)
        for route in AdminApplication.routes {
            let name = "\(route.method) \(route.path)"
            let operation = try XCTUnwrap(paths[route.path]?[route.method.lowercased()], "\(name) is not documented")
            let token = !(operation["security"]?.arrayValue ?? []).isEmpty
            XCTAssertEqual(token, route.authenticated, "\(name): admin token")
            var query: Set<String> = []
            for parameter in operation["parameters"]?.arrayValue ?? [] {
                var parameter = parameter
                if let reference = parameter["$ref"]?.stringValue {
                    var node: JSONValue? = document
                    for piece in reference.dropFirst(2).split(separator: "/") { node = node?[String(piece)] }
                    parameter = try XCTUnwrap(node, reference)
                }
                if parameter["in"]?.stringValue == "query", let parameterName = parameter["name"]?.stringValue {
                    query.insert(parameterName)
                }
            }
            XCTAssertEqual(query, route.query, "\(name): query parameters")
            let body = operation["requestBody"]
            switch route.body {
            case .none, .ignored: XCTAssertNil(body, "\(name): the document has a body the route does not read")
            case .json: XCTAssertEqual(body?["required"], .boolean(true), "\(name): a required body")
            case .optionalJSON: XCTAssertEqual(body?["required"], .boolean(false), "\(name): an optional body")
            }
        }
    }
}
