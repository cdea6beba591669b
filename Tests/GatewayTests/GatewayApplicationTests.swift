import Configuration
import Domain
import Encoding
import Foundation
import GRPC
import GatewayCore
import HTTPMessages
import JSON
import Observability
import Protobuf
import ServiceContracts
import Synchronization
import XCTest

/// Services answering from a table, recording every call.
final class FakeBackends: ServiceBackends {
    enum Answer: Sendable {
        case message(any ProtobufMessage)
        case failure(RPCError)
    }

    private let state = Mutex<
        (
            answers: [String: Answer], calls: [(path: String, bytes: [UInt8], idempotent: Bool, metadata: Metadata)],
            serving: Bool
        )
    >(([:], [], true))

    func answer<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>, _ message: Response) {
        state.withLock { $0.answers[method.path] = .message(message) }
    }
    func fail<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>, _ error: DomainError) {
        state.withLock { $0.answers[method.path] = .failure(ServiceErrors.rpcError(error)) }
    }
    func fail<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>, _ error: RPCError) {
        state.withLock { $0.answers[method.path] = .failure(error) }
    }
    func setServing(_ serving: Bool) { state.withLock { $0.serving = serving } }

    var paths: [String] { state.withLock { $0.calls.map(\.path) } }

    func request<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, as type: Request.Type = Request.self
    ) throws -> Request {
        let bytes = try XCTUnwrap(
            state.withLock { $0.calls.last { $0.path == method.path }?.bytes }, "no call to \(method.path)")
        return try Request(serializedBytes: bytes)
    }

    func wasIdempotent<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>) -> Bool? {
        state.withLock { $0.calls.last { $0.path == method.path }?.idempotent }
    }

    func metadata<Request, Response>(_ method: GRPCMethodDescriptor<Request, Response>) -> Metadata? {
        state.withLock { $0.calls.last { $0.path == method.path }?.metadata }
    }

    func call<Request, Response>(
        _ service: BackendService, _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request,
        idempotent: Bool, metadata: Metadata
    ) async throws -> Response {
        let path = method.path
        let answer = state.withLock { state -> Answer? in
            state.calls.append((path, request.serializedBytes(), idempotent, metadata))
            return state.answers[path]
        }
        switch answer {
        case .message(let message)?:
            guard let response = message as? Response else { throw RPCError(code: .internal, message: "wrong type") }
            return response
        case .failure(let error)?:
            throw error
        case nil:
            throw RPCError(code: .unavailable, message: "no answer for \(path)")
        }
    }

    func isServing(_ service: BackendService) async -> Bool { state.withLock { $0.serving } }
}

final class ManualClock: Sendable {
    private let value = Mutex<Double>(1000)
    func advance(_ seconds: Double) { value.withLock { $0 += seconds } }
    var now: Double { value.withLock { $0 } }
}

final class GatewayApplicationTests: XCTestCase {
    var backends = FakeBackends()
    var sink = MemoryLogSink()
    var clock = ManualClock()
    let nowMilliseconds: Int64 = 1_800_000_000_000

    func makeApplication(_ environment: [String: String] = [:]) throws -> GatewayApplication {
        var settings = GatewaySettings()
        let now = nowMilliseconds
        settings.now = { now }
        let clock = self.clock
        settings.limiterClock = { clock.now }
        return GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: backends,
            logger: Logger(service: "gateway", minimumLevel: .debug, sink: sink), metrics: MetricsRegistry(),
            settings: settings)
    }

    func post(_ path: String, _ body: JSONValue?, token: String? = nil, contentType: String = "application/json")
        -> HTTPRequest
    {
        var headers = HTTPHeaders([("host", "localhost")])
        if body != nil { headers.add("content-type", contentType) }
        if let token { headers.add("authorization", "Bearer \(token)") }
        return HTTPRequest(
            method: "POST", path: path, headers: headers, body: body?.serialized() ?? [], remoteAddress: "127.0.0.1")
    }

    func get(_ path: String, method: String = "GET", token: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost")])
        if let token { headers.add("authorization", "Bearer \(token)") }
        return HTTPRequest(method: method, path: path, headers: headers, remoteAddress: "127.0.0.1")
    }

    func json(_ response: HTTPResponse, file: StaticString = #filePath, line: UInt = #line) throws -> JSONValue {
        try JSONReader.parse(response.body)
    }

    func signedIn(method: AuthenticationMethod = .password, ageMilliseconds: Int64 = 1000) {
        var info = SessionInfo()
        info.sessionID = "s-1"
        info.accountID = "acc-1"
        info.displayName = "Alice"
        info.authenticationMethod = method
        info.createdAtUnixMilliseconds = nowMilliseconds - ageMilliseconds
        info.expiresAtUnixMilliseconds = nowMilliseconds + 86_400_000
        backends.answer(SessionServiceMethods.validateSession, info)
    }

    var issuedSession: IssuedSession {
        var issued = IssuedSession()
        issued.accessToken = "tok"
        issued.expiresAtUnixMilliseconds = nowMilliseconds + 1000
        issued.accountID = "acc-1"
        issued.displayName = "Alice"
        issued.sessionID = "s-2"
        return issued
    }

    func testPasswordAccountAndSignIn() async throws {
        let application = try makeApplication()
        var created = CreatePasswordAccountResponse()
        created.accountID = "acc-1"
        backends.answer(SessionServiceMethods.createPasswordAccount, created)
        let response = await application.respond(
            to: post("/v1/accounts/password", ["email": "A@x.io", "password": "correct horse", "displayName": "Alice"]))
        XCTAssertEqual(response.status, 201)
        XCTAssertEqual(try json(response), ["accountID": "acc-1"])
        let sent = try backends.request(
            SessionServiceMethods.createPasswordAccount, as: CreatePasswordAccountRequest.self)
        XCTAssertEqual(sent.email, "A@x.io")
        XCTAssertEqual(sent.displayName, "Alice")

        backends.answer(SessionServiceMethods.signInWithPassword, issuedSession)
        let signIn = await application.respond(
            to: post("/v1/sessions/password", ["email": "a@x.io", "password": "correct horse"]))
        XCTAssertEqual(signIn.status, 200)
        let session = try json(signIn)
        XCTAssertEqual(session["tokenType"], "Bearer")
        XCTAssertEqual(session["accessToken"], "tok")
        XCTAssertEqual(session["accountID"], "acc-1")
        XCTAssertNotNil(session["expiresAt"]?.stringValue)
        XCTAssertNotNil(signIn.headers["x-request-id"])

        backends.fail(SessionServiceMethods.signInWithPassword, DomainError(.invalidCredentials, "wrong password"))
        let failed = await application.respond(
            to: post("/v1/sessions/password", ["email": "a@x.io", "password": "bad"]))
        XCTAssertEqual(failed.status, 401)
        XCTAssertEqual(try json(failed)["code"], "invalid_credentials")
        let lines = sink.lines
        // The services log the audit events; the gateway only says where each request came from.
        XCTAssertFalse(lines.contains { $0.contains("event=audit.") }, "the gateway logged an audit event")
        let forwarded = try XCTUnwrap(backends.metadata(SessionServiceMethods.signInWithPassword))
        XCTAssertEqual(forwarded[AuditContext.clientAddressKey], "127.0.0.1")
        XCTAssertEqual(forwarded[AuditContext.requestIDKey]?.isEmpty, false)
        XCTAssertFalse(lines.contains { $0.contains("correct horse") || $0.contains("tok") }, "secrets in the log")
    }

    func testEmailTakenIsAConflict() async throws {
        let application = try makeApplication()
        backends.fail(SessionServiceMethods.createPasswordAccount, DomainError(.emailTaken, "taken"))
        let response = await application.respond(
            to: post("/v1/accounts/password", ["email": "a@x.io", "password": "correct horse", "displayName": "A"]))
        XCTAssertEqual(response.status, 409)
        XCTAssertEqual(try json(response)["code"], "email_taken")
    }

    func testPasswordSignInIsLimitedPerNormalizedEmailAndPerAddress() async throws {
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_PASSWORD_PER_EMAIL": "10/m", "PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "0",
        ])
        backends.fail(SessionServiceMethods.signInWithPassword, DomainError(.invalidCredentials, "no"))
        for index in 0..<10 {
            let email = index % 2 == 0 ? " Bob@X.io " : "bob@x.io"
            let response = await application.respond(
                to: post("/v1/sessions/password", ["email": .string(email), "password": "p"]))
            XCTAssertEqual(response.status, 401)
        }
        let limited = await application.respond(
            to: post("/v1/sessions/password", ["email": "BOB@x.io", "password": "p"]))
        XCTAssertEqual(limited.status, 429)
        XCTAssertEqual(try json(limited)["code"], "rate_limited")
        XCTAssertEqual(limited.headers["retry-after"], "6")
        let other = await application.respond(
            to: post("/v1/sessions/password", ["email": "carol@x.io", "password": "p"]))
        XCTAssertEqual(other.status, 401)
        clock.advance(6)
        let later = await application.respond(
            to: post("/v1/sessions/password", ["email": "bob@x.io", "password": "p"]))
        XCTAssertEqual(later.status, 401)

        let perAddress = try makeApplication(["PASSKEY_RATE_LIMIT_PASSWORD_PER_ADDRESS": "100/m"])
        for index in 0..<10 {
            let response = await perAddress.respond(
                to: post("/v1/sessions/password", ["email": .string("u\(index)@x.io"), "password": "p"]))
            XCTAssertEqual(response.status, 401)
        }
        let addressLimited = await perAddress.respond(
            to: post("/v1/sessions/password", ["email": "z@x.io", "password": "p"]))
        XCTAssertEqual(addressLimited.status, 429)
        XCTAssertNotNil(addressLimited.headers["retry-after"])
    }

    func testPasskeyFinishCallsAreLimitedPerClientAddress() async throws {
        let application = try makeApplication([
            "PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS": "60/m", "PASSKEY_TRUSTED_PROXIES": "127.0.0.1",
        ])
        backends.fail(VerificationServiceMethods.finishAuthentication, DomainError(.challengeUnavailable, "gone"))
        let body: JSONValue = [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c", "credentialID": "AQ", "clientDataJSON": "AQ",
            "authenticatorData": "AQ",
            "signature": "AQ",
            "userHandle": "AQ",
        ]
        func attempt(from address: String) async -> Int {
            var request = post("/v1/passkeys/authentications/finish", body)
            request.headers.add("x-forwarded-for", address)
            return await application.respond(to: request).status
        }
        for _ in 0..<10 {
            let status = await attempt(from: "198.51.100.1")
            XCTAssertEqual(status, 410)
        }
        let limitedStatus = await attempt(from: "198.51.100.1")
        XCTAssertEqual(limitedStatus, 429)
        let otherStatus = await attempt(from: "198.51.100.2")
        XCTAssertEqual(otherStatus, 410)
    }

    func testBearerRoutesNeedAValidSession() async throws {
        let application = try makeApplication()
        for (method, path) in [
            ("GET", "/v1/session"), ("DELETE", "/v1/session"), ("GET", "/v1/sessions"), ("DELETE", "/v1/sessions/x"),
            ("GET", "/v1/account"), ("GET", "/v1/passkeys"), ("DELETE", "/v1/passkeys/AQ"),
            ("POST", "/v1/passkeys/registrations"),
        ] {
            let response = await application.respond(to: get(path, method: method))
            XCTAssertEqual(response.status, 401, path)
            XCTAssertEqual(try json(response)["code"], "unauthenticated")
            XCTAssertEqual(response.headers["www-authenticate"], "Bearer")
            let malformed = await application.respond(to: get(path, method: method, token: "a b"))
            XCTAssertEqual(malformed.status, 401)
        }
        XCTAssertEqual(backends.paths, [], "no service is called without a token")
        backends.fail(SessionServiceMethods.validateSession, DomainError(.unauthenticated, "revoked"))
        let revoked = await application.respond(to: get("/v1/session", token: "old"))
        XCTAssertEqual(revoked.status, 401)
        XCTAssertEqual(
            try backends.request(SessionServiceMethods.validateSession, as: ValidateSessionRequest.self).accessToken,
            "old")
        XCTAssertEqual(backends.wasIdempotent(SessionServiceMethods.validateSession), true)
    }

    func testSessionRoutes() async throws {
        let application = try makeApplication()
        signedIn()
        let current = await application.respond(to: get("/v1/session", token: "t"))
        XCTAssertEqual(current.status, 200)
        let body = try json(current)
        XCTAssertEqual(
            body.objectValue?.keys,
            ["sessionID", "accountID", "displayName", "authenticationMethod", "createdAt", "expiresAt"])
        XCTAssertEqual(body["authenticationMethod"], "password")

        var list = ListSessionsResponse()
        var summary = SessionSummary()
        summary.sessionID = "s-1"
        summary.authenticationMethod = .password
        summary.current = true
        list.sessions = [summary]
        backends.answer(SessionServiceMethods.listSessions, list)
        let sessions = await application.respond(to: get("/v1/sessions", token: "t"))
        XCTAssertEqual(try json(sessions)["sessions"]?.arrayValue?.first?["current"], true)
        XCTAssertEqual(
            try backends.request(SessionServiceMethods.listSessions, as: ListSessionsRequest.self).currentSessionID,
            "s-1")

        backends.answer(SessionServiceMethods.revokeSession, RevokeSessionResponse())
        let signOut = await application.respond(to: get("/v1/session", method: "DELETE", token: "t"))
        XCTAssertEqual(signOut.status, 204)
        XCTAssertTrue(signOut.body.isEmpty)
        let revoke = await application.respond(
            to: get("/v1/sessions/d4c3b2a1-9f8e-4d7c-a6b5-4e3d2c1b0a99", method: "DELETE", token: "t"))
        XCTAssertEqual(revoke.status, 204)
        let sent = try backends.request(SessionServiceMethods.revokeSession, as: RevokeSessionRequest.self)
        XCTAssertEqual(sent.sessionID, "d4c3b2a1-9f8e-4d7c-a6b5-4e3d2c1b0a99")
        XCTAssertEqual(sent.accountID, "acc-1")
        XCTAssertEqual(backends.wasIdempotent(SessionServiceMethods.revokeSession), false)
        backends.fail(SessionServiceMethods.revokeSession, DomainError(.notFound, "no"))
        let foreign = await application.respond(
            to: get("/v1/sessions/7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b", method: "DELETE", token: "t"))
        XCTAssertEqual(foreign.status, 404)

        var account = AccountSummary()
        account.accountID = "acc-1"
        account.emails = ["a@x.io"]
        account.hasPassword = true
        account.passkeyCount = 2
        account.verifiedEmails = ["a@x.io"]
        account.recoveryCodesRemaining = 7
        backends.answer(SessionServiceMethods.getAccount, account)
        let accountResponse = await application.respond(to: get("/v1/account", token: "t"))
        XCTAssertEqual(
            try json(accountResponse),
            [
                "accountID": "acc-1", "displayName": "", "emails": ["a@x.io"], "hasPassword": true, "passkeyCount": 2,
                "emailVerified": true, "verifiedEmails": ["a@x.io"], "recoveryCodesRemaining": 7, "userHandle": "",
                "userName": "",
            ])
    }

    func testPasskeyManagement() async throws {
        let application = try makeApplication()
        signedIn()
        var info = PasskeyCredentialInfo()
        info.credentialID = [1, 2, 3]
        info.name = "Phone"
        info.transports = ["internal"]
        var list = ListCredentialsResponse()
        list.credentials = [info]
        list.userHandle = [7, 7, 7]
        backends.answer(VerificationServiceMethods.listCredentials, list)
        let listed = await application.respond(to: get("/v1/passkeys", token: "t"))
        XCTAssertEqual(try json(listed)["rpID"], "localhost")
        XCTAssertEqual(try json(listed)["userHandle"], "BwcH")
        let passkey = try XCTUnwrap(try json(listed)["passkeys"]?.arrayValue?.first)
        XCTAssertEqual(
            passkey.objectValue?.keys,
            [
                "credentialID", "name", "aaguid", "createdAt", "lastUsedAt", "backupEligible", "backedUp", "transports",
                "cloneWarning", "providerName", "providerIconLight", "providerIconDark",
            ])
        XCTAssertEqual(passkey["credentialID"], "AQID")

        info.name = "Laptop"
        backends.answer(VerificationServiceMethods.renameCredential, info)
        var rename = post("/v1/passkeys/AQID", ["name": "Laptop"], token: "t")
        rename.method = "PATCH"
        let renamed = await application.respond(to: rename)
        XCTAssertEqual(renamed.status, 200)
        XCTAssertEqual(try json(renamed)["name"], "Laptop")
        let sent = try backends.request(VerificationServiceMethods.renameCredential, as: RenameCredentialRequest.self)
        XCTAssertEqual(sent.credentialID, [1, 2, 3])
        XCTAssertEqual(sent.accountID, "acc-1")

        var badID = post("/v1/passkeys/*bad*", ["name": "x"], token: "t")
        badID.method = "PATCH"
        let bad = await application.respond(to: badID)
        XCTAssertEqual(bad.status, 400)

        backends.fail(VerificationServiceMethods.removeCredential, DomainError(.lastSignInMethod, "last"))
        let last = await application.respond(to: get("/v1/passkeys/AQID", method: "DELETE", token: "t"))
        XCTAssertEqual(last.status, 409)
        XCTAssertEqual(try json(last)["code"], "last_sign_in_method")
        backends.answer(VerificationServiceMethods.removeCredential, RemoveCredentialResponse())
        let removed = await application.respond(to: get("/v1/passkeys/AQID", method: "DELETE", token: "t"))
        XCTAssertEqual(removed.status, 204)
    }

    func testRegistrationStartPassesTheSessionAndGuardsConditionalMode() async throws {
        let application = try makeApplication()
        var begin = BeginRegistrationResponse()
        begin.challengeID = "c-1"
        begin.challenge = Array(repeating: 3, count: 32)
        begin.mode = .conditional
        backends.answer(ChallengeServiceMethods.beginRegistration, begin)
        signedIn(method: .password, ageMilliseconds: 60_000)
        let granted = await application.respond(
            to: post("/v1/passkeys/registrations", ["mode": "conditional"], token: "t"))
        XCTAssertEqual(granted.status, 200)
        XCTAssertEqual(try json(granted)["mediation"], "conditional")
        let sent = try backends.request(ChallengeServiceMethods.beginRegistration, as: BeginRegistrationRequest.self)
        XCTAssertEqual(sent.mode, .conditional)
        XCTAssertEqual(sent.accountID, "acc-1")
        XCTAssertEqual(sent.sessionAuthenticationMethod, .password)
        XCTAssertEqual(sent.sessionCreatedAtUnixMilliseconds, nowMilliseconds - 60_000)

        // challenge-service decides whether conditional mode is granted; its refusal reaches the app as it is.
        backends.fail(
            ChallengeServiceMethods.beginRegistration,
            DomainError(.forbidden, "conditional registration needs a password sign-in from the last five minutes"))
        signedIn(method: .passkey, ageMilliseconds: 1000)
        let refused = await application.respond(
            to: post("/v1/passkeys/registrations", ["mode": "conditional"], token: "t"))
        XCTAssertEqual(refused.status, 403)
        XCTAssertEqual(try json(refused)["code"], "forbidden")
        XCTAssertEqual(
            try json(refused)["detail"], "conditional registration needs a password sign-in from the last five minutes")
        XCTAssertEqual(
            try backends.request(ChallengeServiceMethods.beginRegistration).sessionAuthenticationMethod, .passkey)
        signedIn(method: .passkey)
        begin.mode = .modal
        backends.answer(ChallengeServiceMethods.beginRegistration, begin)
        let modal = await application.respond(to: post("/v1/passkeys/registrations", nil, token: "t"))
        XCTAssertEqual(modal.status, 200)
        XCTAssertNil(try json(modal)["mediation"])
        XCTAssertEqual(try json(modal)["publicKey"]?["attestation"], "none")
    }

    func testRegistrationFinishMapsWebAuthnFailures() async throws {
        let application = try makeApplication()
        signedIn()
        let body: JSONValue = [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c", "credentialID": "AQ", "clientDataJSON": "AQ",
            "attestationObject": "AQ",
        ]
        backends.fail(
            VerificationServiceMethods.finishRegistration,
            DomainError(.verificationFailed, "UP not set", reason: "user_present_flag_not_set"))
        let failed = await application.respond(to: post("/v1/passkeys/registrations/finish", body, token: "t"))
        XCTAssertEqual(failed.status, 400)
        XCTAssertEqual(try json(failed)["code"], "verification_failed")
        XCTAssertEqual(try json(failed)["reason"], "user_present_flag_not_set")
        backends.fail(VerificationServiceMethods.finishRegistration, DomainError(.challengeUnavailable, "used"))
        let gone = await application.respond(to: post("/v1/passkeys/registrations/finish", body, token: "t"))
        XCTAssertEqual(gone.status, 410)
        backends.fail(VerificationServiceMethods.finishRegistration, DomainError(.credentialAlreadyRegistered, "dup"))
        let duplicate = await application.respond(to: post("/v1/passkeys/registrations/finish", body, token: "t"))
        XCTAssertEqual(try json(duplicate)["code"], "credential_already_registered")
        backends.answer(VerificationServiceMethods.finishRegistration, PasskeyCredentialInfo())
        let done = await application.respond(to: post("/v1/passkeys/registrations/finish", body, token: "t"))
        XCTAssertEqual(done.status, 204)
        let sent = try backends.request(
            VerificationServiceMethods.finishRegistration, as: FinishRegistrationRequest.self)
        XCTAssertEqual(sent.accountID, "acc-1")
        XCTAssertEqual(sent.challengeID, "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c")
        XCTAssertEqual(sent.credential?.credentialID, [1])
        let metrics = application.metrics.exposition()
        XCTAssertTrue(
            metrics.contains(
                #"gateway_verification_failures_total{ceremony="registration",reason="user_present_flag_not_set"} 1"#))
    }

    func testAccountRegistrationFlow() async throws {
        let application = try makeApplication()
        var begin = BeginAccountRegistrationResponse()
        begin.registrationID = "7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b"
        begin.userHandle = [7, 7]
        backends.answer(ChallengeServiceMethods.beginAccountRegistration, begin)
        let started = await application.respond(to: post("/v1/passkeys/account-registrations", ["email": "n@x.io"]))
        XCTAssertEqual(started.status, 200)
        XCTAssertEqual(try json(started)["registrationID"], "7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b")
        XCTAssertEqual(
            try backends.request(
                ChallengeServiceMethods.beginAccountRegistration, as: BeginAccountRegistrationRequest.self
            ).email, "n@x.io")
        var finished = FinishAccountRegistrationResponse()
        finished.accountID = "acc-9"
        backends.answer(VerificationServiceMethods.finishAccountRegistration, finished)
        let body: JSONValue = [
            "registrationID": "7b1e4d2a-0c9f-4e8b-b6a5-3c2d1e0f9a8b", "displayName": "Nina",
            "credential": ["rawId": "AQ", "response": ["clientDataJSON": "AQ", "attestationObject": "AQ"]],
        ]
        let created = await application.respond(to: post("/v1/passkeys/account-registrations/finish", body))
        XCTAssertEqual(created.status, 201)
        XCTAssertEqual(try json(created), ["accountID": "acc-9"])
        let sent = try backends.request(
            VerificationServiceMethods.finishAccountRegistration, as: FinishAccountRegistrationRequest.self)
        XCTAssertEqual(sent.displayName, "Nina")
        XCTAssertEqual(sent.email, "")
        backends.fail(
            VerificationServiceMethods.finishAccountRegistration,
            DomainError(.invalidCredentials, "bad", reason: "signature_invalid"))
        let failed = await application.respond(to: post("/v1/passkeys/account-registrations/finish", body))
        XCTAssertEqual(failed.status, 400)
        XCTAssertEqual(try json(failed)["code"], "verification_failed")
    }

    func testPasskeySignIn() async throws {
        let application = try makeApplication()
        var begin = BeginAuthenticationResponse()
        begin.challengeID = "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c"
        begin.challenge = [1, 2]
        begin.relyingPartyID = "localhost"
        begin.timeoutMilliseconds = 120_000
        backends.answer(ChallengeServiceMethods.beginAuthentication, begin)
        let started = await application.respond(to: post("/v1/passkeys/authentications", [:]))
        XCTAssertEqual(started.status, 200)
        XCTAssertEqual(try json(started)["publicKey"]?["rpId"], "localhost")
        XCTAssertEqual(
            try json(started)["publicKey"]?["timeout"], 120_000,
            "challenge-service decides the timeout; the gateway passes it on")
        let empty = await application.respond(to: post("/v1/passkeys/authentications", nil))
        XCTAssertEqual(empty.status, 200)

        let body: JSONValue = [
            "challengeID": "3f2a1c9e-5b7d-4c1e-9a3b-6d8e0f1a2b3c",
            "credential": [
                "id": "AQ", "type": "public-key",
                "response": ["clientDataJSON": "AQ", "authenticatorData": "AQ", "signature": "AQ", "userHandle": "Bw"],
            ],
        ]
        backends.fail(
            VerificationServiceMethods.finishAuthentication,
            DomainError(.verificationFailed, "mismatch", reason: "user_handle_mismatch"))
        let failed = await application.respond(to: post("/v1/passkeys/authentications/finish", body))
        XCTAssertEqual(failed.status, 401)
        XCTAssertEqual(try json(failed)["code"], "invalid_credentials")
        XCTAssertEqual(try json(failed)["reason"], "user_handle_mismatch")

        // The spent-challenge failure tells the client to start again, in its reason and detail.
        backends.fail(
            VerificationServiceMethods.finishAuthentication,
            DomainError(.unavailable, "Start the sign-in again.", reason: "challenge_spent"))
        let spent = await application.respond(to: post("/v1/passkeys/authentications/finish", body))
        XCTAssertEqual(spent.status, 503)
        XCTAssertEqual(try json(spent)["code"], "unavailable")
        XCTAssertEqual(try json(spent)["reason"], "challenge_spent")
        XCTAssertEqual(try json(spent)["detail"], "Start the sign-in again.")

        // A verifier that answers without a session gives no session either.
        var verified = FinishAuthenticationResponse()
        verified.accountID = "acc-1"
        backends.answer(VerificationServiceMethods.finishAuthentication, verified)
        let sessionless = await application.respond(to: post("/v1/passkeys/authentications/finish", body))
        XCTAssertEqual(sessionless.status, 503)
        XCTAssertNil(try json(sessionless)["accessToken"])

        // The session comes from verification-service, in one call: session-service is not asked.
        verified.session = issuedSession
        backends.answer(VerificationServiceMethods.finishAuthentication, verified)
        let callsBefore = backends.paths.count
        let signedIn = await application.respond(to: post("/v1/passkeys/authentications/finish", body))
        XCTAssertEqual(signedIn.status, 200)
        XCTAssertEqual(try json(signedIn)["tokenType"], "Bearer")
        XCTAssertEqual(try json(signedIn)["accessToken"], .string(issuedSession.accessToken))
        XCTAssertEqual(try json(signedIn)["accountID"], .string(issuedSession.accountID))
        XCTAssertEqual(
            Array(backends.paths.dropFirst(callsBefore)), [VerificationServiceMethods.finishAuthentication.path])
        let sent = try backends.request(
            VerificationServiceMethods.finishAuthentication, as: FinishAuthenticationRequest.self)
        XCTAssertEqual(sent.credential?.userHandle, [7])
    }

    func testUnavailableServicesAndRequestShapeErrors() async throws {
        let application = try makeApplication()
        let down = await application.respond(to: post("/v1/passkeys/authentications", [:]))
        XCTAssertEqual(down.status, 503)
        XCTAssertEqual(down.headers["content-type"], "application/problem+json")
        XCTAssertEqual(try json(down)["code"], "unavailable")
        backends.fail(ChallengeServiceMethods.beginAuthentication, RPCError(code: .deadlineExceeded, message: "late"))
        let late = await application.respond(to: post("/v1/passkeys/authentications", [:]))
        XCTAssertEqual(late.status, 503)
        let text = await application.respond(to: post("/v1/passkeys/authentications", "x", contentType: "text/plain"))
        XCTAssertEqual(text.status, 415)
        XCTAssertEqual(try json(text)["code"], "unsupported_media_type")
        var malformed = post("/v1/accounts/password", nil)
        malformed.headers.add("content-type", "application/json")
        malformed.body = Array("{\"email\":".utf8)
        let bad = await application.respond(to: malformed)
        XCTAssertEqual(bad.status, 400)
        XCTAssertEqual(try json(bad)["code"], "invalid_request")
        let missing = await application.respond(to: post("/v1/accounts/password", nil))
        XCTAssertEqual(missing.status, 400)
        let unknown = await application.respond(to: get("/v1/unknown"))
        XCTAssertEqual(unknown.status, 404)
        let wrongMethod = await application.respond(to: get("/v1/accounts/password"))
        XCTAssertEqual(wrongMethod.status, 405)
        XCTAssertEqual(wrongMethod.headers["allow"], "POST")
        let metrics = application.metrics.exposition()
        XCTAssertTrue(
            metrics.contains(#"gateway_http_requests_total{route="POST /v1/passkeys/authentications",status="503"} 2"#))
        XCTAssertTrue(metrics.contains("gateway_http_request_duration_seconds_bucket"))
        XCTAssertTrue(metrics.contains(#"outcome="unavailable""#))
    }

    /// OPTIONS and every other method a path does not have: 405 `method_not_allowed` with an `Allow` header of
    /// exactly the path's methods, before any authentication or backend call.
    func testUnsupportedMethodsGet405WithExactlyThePathsMethods() async throws {
        let application = try makeApplication()
        let document = try JSONReader.parse(OpenAPIDocument.bytes)
        let paths = try XCTUnwrap(document["paths"]?.objectValue)
        let samples = ["{credentialID}": "AQID", "{sessionID}": "3f2a1c9e-0000-4000-8000-000000000000"]
        let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND"]
        var checked = 0
        for (pattern, item) in paths {
            var path = pattern
            for (name, value) in samples { path = path.replacingOccurrences(of: name, with: value) }
            var expected = Set((item.objectValue ?? [:]).keys.map { $0.uppercased() }.filter(methods.contains))
            if expected.contains("GET") { expected.insert("HEAD") }
            for method in methods where !expected.contains(method) {
                let response = await application.respond(to: get(path, method: method, token: "t"))
                XCTAssertEqual(response.status, 405, "\(method) \(path)")
                XCTAssertEqual(try json(response)["code"], "method_not_allowed", "\(method) \(path)")
                let allow = (response.headers["allow"] ?? "").split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                XCTAssertEqual(Set(allow), expected, "\(method) \(path)")
                XCTAssertEqual(allow.count, expected.count, "\(method) \(path): \(allow)")
                checked += 1
            }
        }
        XCTAssertGreaterThan(checked, 150)
        XCTAssertEqual(backends.paths, [], "a 405 calls no service")
        // The page's files are GET and HEAD only.
        for path in ["/", "/app.js", "/app.css", "/recovery.js", "/passkey/v1/passkey.js", "/passkey/v1/passkey.d.ts"] {
            let response = await application.respond(to: get(path, method: "OPTIONS"))
            XCTAssertEqual(response.status, 405, path)
            XCTAssertEqual(response.headers["allow"], "GET, HEAD", path)
            let page = await application.respond(to: get(path))
            XCTAssertEqual(page.status, 200, path)
        }
        let unknown = await application.respond(to: get("/nothing/here", method: "OPTIONS"))
        XCTAssertEqual(unknown.status, 404)
    }

    func testAnOutageIsLoggedOncePerSecondNotOncePerRequest() async throws {
        let application = try makeApplication()
        for _ in 0..<20 {
            let response = await application.respond(to: post("/v1/passkeys/authentications", [:]))
            XCTAssertEqual(response.status, 503)
        }
        XCTAssertEqual(sink.lines.filter { $0.contains("event=backend.call_failed") }.count, 1)
    }

    func testOperationalRoutes() async throws {
        let application = try makeApplication([
            "PASSKEY_APPLE_APP_IDS": "ABCDE12345.com.example.app", "PASSKEY_ORIGINS": "https://example.com",
        ])
        let health = await application.respond(to: get("/healthz"))
        XCTAssertEqual(health.status, 200)
        let ready = await application.respond(to: get("/readyz"))
        XCTAssertEqual(ready.status, 200)
        backends.setServing(false)
        let notReady = await application.respond(to: get("/readyz"))
        XCTAssertEqual(notReady.status, 503)
        let aasa = await application.respond(to: get("/.well-known/apple-app-site-association"))
        XCTAssertEqual(aasa.status, 200)
        XCTAssertEqual(aasa.headers["content-type"], "application/json")
        XCTAssertEqual(try json(aasa), ["webcredentials": ["apps": ["ABCDE12345.com.example.app"]]])
        let endpoints = await application.respond(to: get("/.well-known/passkey-endpoints"))
        XCTAssertEqual(try json(endpoints)["enroll"], "https://example.com/passkeys/enroll")
        XCTAssertEqual(try json(endpoints)["manage"], "https://example.com/passkeys/manage")
        let origins = await application.respond(to: get("/.well-known/webauthn"))
        XCTAssertEqual(try json(origins), ["origins": ["https://example.com"]])
        let links = await application.respond(to: get("/.well-known/assetlinks.json"))
        XCTAssertEqual(try json(links), [])
        let openAPI = await application.respond(to: get("/openapi.json"))
        XCTAssertEqual(try json(openAPI)["openapi"], "3.1.0")
        // Served as the resource file is, byte for byte.
        let file = try Data(contentsOf: URL(fileURLWithPath: packageRoot + "/Services/Gateway/Core/openapi.json"))
        XCTAssertEqual(openAPI.body, Array(file))
        XCTAssertEqual(openAPI.headers["content-type"], "application/json")
        let metrics = await application.respond(to: get("/metrics"))
        XCTAssertTrue(metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
        XCTAssertTrue(String(decoding: metrics.body, as: UTF8.self).contains("gateway_http_requests_total"))
        let head = await application.respond(to: get("/healthz", method: "HEAD"))
        XCTAssertEqual(head.status, 200)
    }

    func testRequestIDs() async throws {
        let application = try makeApplication()
        var request = get("/healthz")
        request.headers.add("x-request-id", "abc-123")
        let echoed = await application.respond(to: request)
        XCTAssertEqual(echoed.headers["x-request-id"], "abc-123")
        var hostile = get("/healthz")
        hostile.headers.add("x-request-id", "a b\"c")
        let replaced = await application.respond(to: hostile)
        XCTAssertEqual(replaced.headers["x-request-id"]?.count, 16)
    }
}
