import Configuration
import Domain
import Encoding
import Foundation
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import NetworkIO
import Observability
import ServiceContracts
import XCTest

/// What the gateway serves from `PASSKEY_ANDROID_APPS` and `PASSKEY_RELATED_ORIGINS`, the finish routes taking the
/// JSON Android's Credential Manager returns as it is, the origin checks at start and the warning about an RP ID left
/// at `localhost`.
final class AndroidAndOriginRouteTests: XCTestCase {
    static let upload =
        "DA:2C:9B:75:75:77:6E:B9:33:77:88:2E:ED:31:59:FD:61:4F:82:6A:69:97:C0:2E:12:80:0F:50:8E:27:CB:FC"
    static let signing =
        "3B:8A:2D:7C:07:F4:13:6D:BA:40:C7:B0:C5:C5:39:15:A8:1A:98:37:AC:BF:CB:5D:09:CD:FF:4D:51:C0:C3:A2"
    static let other = "3E:81:16:DB:E5:38:30:21:60:DA:7E:1B:1C:91:78:B7:50:CF:53:0F:B8:CB:84:DF:17:55:9F:F8:E2:6A:B5:09"
    static let challengeID = "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c"

    var backends = FakeBackends()
    let sink = MemoryLogSink()

    func makeApplication(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: backends,
            logger: Logger(service: "gateway", minimumLevel: .debug, sink: sink), metrics: MetricsRegistry())
    }

    func request(_ method: String, _ path: String, json: String? = nil, token: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost")])
        if json != nil { headers.add("content-type", "application/json") }
        if let token { headers.add("authorization", "Bearer \(token)") }
        return HTTPRequest(
            method: method, path: path, headers: headers, body: Array((json ?? "").utf8), remoteAddress: "127.0.0.1")
    }

    func json(_ response: HTTPResponse) throws -> JSONValue { try JSONReader.parse(response.body) }

    /// A live password session of `acc-1`, which `ValidateSession` answers for the bearer token.
    func signedIn() {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var info = SessionInfo()
        info.sessionID = "s-1"
        info.accountID = "acc-1"
        info.displayName = "Ada"
        info.authenticationMethod = .password
        info.createdAtUnixMilliseconds = now - 1000
        info.expiresAtUnixMilliseconds = now + 86_400_000
        backends.answer(SessionServiceMethods.validateSession, info)
    }

    // MARK: assetlinks.json and /.well-known/webauthn

    func testAssetLinksGrantEachAppBothRelationsWithAllItsCertificates() async throws {
        let application = try makeApplication([
            "PASSKEY_ANDROID_APPS":
                "com.example.app:\(Self.upload)|\(Self.signing),org.other.app:\(Self.other),com.example.app:\(Self.upload.lowercased())"
        ])
        let response = await application.respond(to: request("GET", "/.well-known/assetlinks.json"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers["content-type"], "application/json")
        func statement(_ relation: String, _ package: String, _ fingerprints: [String]) -> JSONValue {
            [
                "relation": [.string(relation)],
                "target": [
                    "namespace": "android_app", "package_name": .string(package),
                    "sha256_cert_fingerprints": .array(fingerprints.map { .string($0) }),
                ],
            ]
        }
        let credentials = "delegate_permission/common.get_login_creds"
        let links = "delegate_permission/common.handle_all_urls"
        XCTAssertEqual(
            try json(response),
            [
                statement(credentials, "com.example.app", [Self.upload, Self.signing]),
                statement(links, "com.example.app", [Self.upload, Self.signing]),
                statement(credentials, "org.other.app", [Self.other]),
                statement(links, "org.other.app", [Self.other]),
            ])
        let none = await (try makeApplication()).respond(to: request("GET", "/.well-known/assetlinks.json"))
        XCTAssertEqual(try json(none), [], "no app, no statement")
    }

    func testTheRelatedOriginsAreServedWithTheWebOrigins() async throws {
        let application = try makeApplication([
            "PASSKEY_RP_ID": "example.com",
            "PASSKEY_ORIGINS":
                "https://example.com,android:apk-key-hash:\(String(repeating: "A", count: 43)),https://example.net",
            "PASSKEY_RELATED_ORIGINS": "https://example.net,https://shop.example.org",
        ])
        let response = await application.respond(to: request("GET", "/.well-known/webauthn"))
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(
            try json(response), ["origins": ["https://example.com", "https://example.net", "https://shop.example.org"]])
    }

    // MARK: /readyz and the RP ID left at localhost

    func testReadinessCarriesTheLocalhostWarningOnlyWhenTheGatewayListensBeyondLoopback() async throws {
        let exposed = try makeApplication(["GATEWAY_LISTEN": "0.0.0.0:8080"])
        let ready = await exposed.respond(to: request("GET", "/readyz"))
        XCTAssertEqual(ready.status, 200, "a warning does not take the gateway out of service")
        let body = try json(ready)
        XCTAssertEqual(body["status"], "ready")
        let warnings = try XCTUnwrap(body["warnings"]?.arrayValue)
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(
            warnings.first?.stringValue?.hasPrefix(
                "PASSKEY_RP_ID is localhost while the gateway listens on 0.0.0.0:8080")
                == true, "\(warnings)")
        backends.setServing(false)
        let unavailable = await exposed.respond(to: request("GET", "/readyz"))
        XCTAssertEqual(unavailable.status, 503)
        XCTAssertEqual(try json(unavailable)["warnings"]?.arrayValue?.count, 1)
        backends.setServing(true)

        for environment in [
            [:], ["GATEWAY_LISTEN": "[::1]:8080"],
            [
                "GATEWAY_LISTEN": "0.0.0.0:8080", "PASSKEY_RP_ID": "example.com",
                "PASSKEY_ORIGINS": "https://example.com",
            ],
        ] {
            let quiet = await (try makeApplication(environment)).respond(to: request("GET", "/readyz"))
            XCTAssertEqual(quiet.status, 200)
            XCTAssertNil(try json(quiet)["warnings"], "\(environment)")
            XCTAssertEqual(try json(quiet)["status"], "ready")
        }
    }

    func testTheGatewayWarnsAtStartAndRefusesOriginsNoDeviceWouldAccept() throws {
        func gateway(_ environment: [String: String], sink: MemoryLogSink = MemoryLogSink()) throws -> Gateway {
            try Gateway(
                configuration: try GatewayConfiguration(environment: environment),
                logger: Logger(service: "gateway", sink: sink),
                listenAddress: SocketAddress(host: "127.0.0.1", port: 0),
                backends: FakeBackends())
        }
        let warned = MemoryLogSink()
        _ = try gateway(["GATEWAY_LISTEN": "0.0.0.0:8080"], sink: warned)
        let line = try XCTUnwrap(warned.lines.first { $0.contains("event=gateway.relying_party_id_localhost") })
        XCTAssertTrue(line.contains("level=warning"), line)
        XCTAssertTrue(line.contains("PASSKEY_RP_ID is localhost"), line)
        let quiet = MemoryLogSink()
        _ = try gateway([:], sink: quiet)
        XCTAssertFalse(quiet.lines.contains { $0.contains("relying_party_id_localhost") })

        for (environment, named) in [
            (
                ["PASSKEY_RP_ID": "example.com", "PASSKEY_ORIGINS": "https://example.net"],
                ["https://example.net", "example.com"]
            ),
            (
                [
                    "PASSKEY_ORIGINS":
                        "http://localhost:8080,android:apk-key-hash:PoEW2-U4MCFg2n4bHJF4t1DPUw-4y4TfF1Wf-OJqtQk",
                    "PASSKEY_ANDROID_APPS": "com.example.app:\(Self.upload)",
                ],
                [
                    "android:apk-key-hash:PoEW2-U4MCFg2n4bHJF4t1DPUw-4y4TfF1Wf-OJqtQk", Self.other,
                    "com.example.app: \(Self.upload)",
                ]
            ),
        ] {
            XCTAssertThrowsError(try gateway(environment)) { error in
                let error = error as? ConfigurationError
                XCTAssertEqual(error?.variable, "PASSKEY_ORIGINS")
                for value in named {
                    XCTAssertTrue(error?.problem.contains(value) == true, "\(value) in \(error?.problem ?? "")")
                }
            }
        }
    }

    // MARK: Credential Manager's JSON at the finish routes

    /// What `CreatePublicKeyCredentialResponse.registrationResponseJson` holds, with these bytes: Google Play
    /// services' member set and order, the DER public key and the authenticator data beside the attestation object.
    func registrationResponseJSON(
        id: [UInt8], clientData: [UInt8], attestationObject: [UInt8], authenticatorData: [UInt8]
    ) -> String {
        """
        {"rawId":"\(Base64URL.encode(id))","authenticatorAttachment":"platform","type":"public-key",\
        "id":"\(Base64URL.encode(id))","response":{"clientDataJSON":"\(Base64URL.encode(clientData))",\
        "attestationObject":"\(Base64URL.encode(attestationObject))","transports":["internal","hybrid"],\
        "authenticatorData":"\(Base64URL.encode(authenticatorData))","publicKeyAlgorithm":-7,\
        "publicKey":"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEeQ8-bW6sD8pSUF2Fh3UqWgPmV5VaVbiZX0g9wTKtO1vBmPgn0UkH1fMvvn3SN40nzw4KrrmxBa60cn1Mkl0r4Q"},\
        "clientExtensionResults":{"credProps":{"rk":true}}}
        """
    }

    /// What `PublicKeyCredential.authenticationResponseJson` holds.
    func authenticationResponseJSON(
        id: [UInt8], clientData: [UInt8], authenticatorData: [UInt8], signature: [UInt8], userHandle: [UInt8]
    ) -> String {
        """
        {"rawId":"\(Base64URL.encode(id))","authenticatorAttachment":"platform","type":"public-key",\
        "id":"\(Base64URL.encode(id))","response":{"clientDataJSON":"\(Base64URL.encode(clientData))",\
        "authenticatorData":"\(Base64URL.encode(authenticatorData))","signature":"\(Base64URL.encode(signature))",\
        "userHandle":"\(Base64URL.encode(userHandle))"},"clientExtensionResults":{}}
        """
    }

    let credentialID: [UInt8] = Array(0..<16)
    let clientData = Array(
        #"{"type":"webauthn.create","challenge":"AQID","origin":"android:apk-key-hash:2iybdXV3brkzd4gu7TFZ_WFPgmppl8AuEoAPUI4ny_w","androidPackageName":"com.example.app"}"#
            .utf8)
    let attestationObject: [UInt8] = [0xA3, 0x63, 0x66, 0x6D, 0x74, 0x64, 0x6E, 0x6F, 0x6E, 0x65]
    let authenticatorData: [UInt8] = Array(repeating: 0x49, count: 37)

    func testTheRegistrationRoutesTakeCredentialManagersResponseAsItIs() async throws {
        let application = try makeApplication()
        let response = registrationResponseJSON(
            id: credentialID, clientData: clientData, attestationObject: attestationObject,
            authenticatorData: authenticatorData)

        // Adding a passkey to a signed-in account.
        signedIn()
        backends.answer(VerificationServiceMethods.finishRegistration, PasskeyCredentialInfo())
        let added = await application.respond(
            to: request(
                "POST", "/v1/passkeys/registrations/finish",
                json: #"{"challengeID":"\#(Self.challengeID)","credential":\#(response)}"#, token: "t"))
        XCTAssertEqual(added.status, 204, String(decoding: added.body, as: UTF8.self))
        let sent = try XCTUnwrap(
            try backends.request(VerificationServiceMethods.finishRegistration, as: FinishRegistrationRequest.self)
                .credential)
        XCTAssertEqual(sent.credentialID, credentialID)
        XCTAssertEqual(sent.clientDataJSON, clientData, "the exact bytes the app's client data was signed over")
        XCTAssertEqual(sent.attestationObject, attestationObject)
        XCTAssertEqual(sent.transports, ["internal", "hybrid"])
        XCTAssertEqual(String(decoding: sent.clientExtensionResultsJSON, as: UTF8.self), #"{"credProps":{"rk":true}}"#)

        // Creating an account with the passkey.
        var finished = FinishAccountRegistrationResponse()
        finished.accountID = "acc-9"
        backends.answer(VerificationServiceMethods.finishAccountRegistration, finished)
        let created = await application.respond(
            to: request(
                "POST", "/v1/passkeys/account-registrations/finish",
                json:
                    #"{"registrationID":"7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b","email":"ada@example.com","credential":\#(response)}"#
            ))
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        let account = try XCTUnwrap(
            try backends.request(
                VerificationServiceMethods.finishAccountRegistration, as: FinishAccountRegistrationRequest.self
            ).credential)
        XCTAssertEqual(account.credentialID, credentialID)
        XCTAssertEqual(account.clientDataJSON, clientData)
        XCTAssertEqual(account.attestationObject, attestationObject)
    }

    func testTheSignInRouteTakesCredentialManagersResponseAsItIs() async throws {
        let application = try makeApplication()
        let signature: [UInt8] = [0x30, 0x45, 0x02, 0x20] + Array(repeating: 0x11, count: 32)
        let userHandle: [UInt8] = Array(repeating: 0x42, count: 16)
        var verified = FinishAuthenticationResponse()
        verified.accountID = "acc-1"
        var session = IssuedSession()
        session.accessToken = "token"
        session.accountID = "acc-1"
        session.displayName = "Ada"
        session.sessionID = "s-1"
        session.expiresAtUnixMilliseconds = Int64(Date().timeIntervalSince1970 * 1000) + 600_000
        verified.session = session
        backends.answer(VerificationServiceMethods.finishAuthentication, verified)
        let response = authenticationResponseJSON(
            id: credentialID, clientData: clientData, authenticatorData: authenticatorData, signature: signature,
            userHandle: userHandle)
        let signedIn = await application.respond(
            to: request(
                "POST", "/v1/passkeys/authentications/finish",
                json: #"{"challengeID":"\#(Self.challengeID)","credential":\#(response)}"#))
        XCTAssertEqual(signedIn.status, 200, String(decoding: signedIn.body, as: UTF8.self))
        let sent = try XCTUnwrap(
            try backends.request(VerificationServiceMethods.finishAuthentication, as: FinishAuthenticationRequest.self)
                .credential)
        XCTAssertEqual(sent.credentialID, credentialID)
        XCTAssertEqual(sent.clientDataJSON, clientData)
        XCTAssertEqual(sent.authenticatorData, authenticatorData)
        XCTAssertEqual(sent.signature, signature)
        XCTAssertEqual(sent.userHandle, userHandle)
    }

    func testCredentialManagerResponsesThatAreWrongAreStillRefusedByField() async throws {
        let application = try makeApplication()
        let good = registrationResponseJSON(
            id: credentialID, clientData: clientData, attestationObject: attestationObject,
            authenticatorData: authenticatorData)
        for (broken, field) in [
            (good.replacingOccurrences(of: #""type":"public-key""#, with: #""type":"password""#), "credential.type"),
            (
                good.replacingOccurrences(of: #""attestationObject":"#, with: #""attestationObjekt":"#),
                "attestationObject"
            ),
            (
                good.replacingOccurrences(
                    of: #""transports":["internal","hybrid"]"#, with: #""transports":"internal""#), "transports"
            ),
            (good.replacingOccurrences(of: #""rk":true"#, with: #""rk":"true""#), "credProps.rk"),
            (
                good.replacingOccurrences(
                    of: #""authenticatorAttachment":"platform""#, with: #""authenticatorAttachment":1"#),
                "authenticatorAttachment"
            ),
        ] {
            signedIn()
            let refused = await application.respond(
                to: request(
                    "POST", "/v1/passkeys/registrations/finish",
                    json: #"{"challengeID":"\#(Self.challengeID)","credential":\#(broken)}"#, token: "t"))
            XCTAssertEqual(refused.status, 400, field)
            XCTAssertEqual(try json(refused)["code"], "invalid_request", field)
            let detail = try json(refused)["detail"]?.stringValue ?? ""
            XCTAssertTrue(detail.contains(field), "\(field): \(detail)")
        }
        XCTAssertFalse(
            backends.paths.contains(VerificationServiceMethods.finishRegistration.path), "no service was asked")
    }
}
