import Foundation
import PasskeyClient
import Synchronization
import XCTest

/// What the client does with responses, tokens and failures, over a scripted transport.
final class ClientTests: XCTestCase {
    // MARK: - Errors

    func testProblemDocumentsBecomeTypedErrors() async throws {
        let transport = ScriptedTransport(
            always: ScriptedTransport.problem(
                401, "invalid_credentials", reason: "signature_invalid", headers: ["X-Request-ID": "r-1"]))
        let error = await failure(
            of: makeClient(transport),
            PasskeyAuthenticationFinishOperation(
                challengeID: "c", assertion: SampleOperations.assertion))
        XCTAssertEqual(error?.code, .invalidCredentials)
        XCTAssertEqual(error?.reason, .signatureInvalid)
        XCTAssertEqual(error?.status, 401)
        XCTAssertEqual(error?.detail, "Safe to show.")
        XCTAssertEqual(error?.requestID, "r-1")
        XCTAssertEqual(error?.operation, "POST /v1/passkeys/authentications/finish")
        XCTAssertEqual(error?.isProblem, true)
        XCTAssertEqual(transport.requests.count, 1, "a finish is never retried")

        let limited = await failure(
            of: makeClient(
                ScriptedTransport(always: ScriptedTransport.problem(429, "rate_limited", headers: ["Retry-After": "7"]))
            ),
            PasswordSignInOperation(email: "a@example.com", password: "p"))
        XCTAssertEqual(limited?.code, .rateLimited)
        XCTAssertEqual(limited?.retryAfterSeconds, 7)

        // A code the library does not know yet is kept as sent.
        let future = await failure(
            of: makeClient(ScriptedTransport(always: ScriptedTransport.problem(409, "passkey_limit_reached"))),
            PasskeyRegistrationFinishOperation(challengeID: "c", credential: SampleOperations.registration))
        XCTAssertEqual(future?.code.rawValue, "passkey_limit_reached")
        XCTAssertEqual(future?.status, 409)
    }

    func testErrorsWithoutAProblemDocumentKeepTheirStatus() async throws {
        let html = PasskeyHTTPResponse(
            status: 502, headers: ["Content-Type": "text/html"], body: Data("<h1>Bad gateway</h1>".utf8))
        let proxy = await failure(of: makeClient(ScriptedTransport(always: html)), AccountOperation())
        XCTAssertEqual(proxy?.code, .unexpectedStatus)
        XCTAssertEqual(proxy?.status, 502)
        XCTAssertEqual(proxy?.isProblem, false)

        // problem+json that is not a problem document, and a bare 404.
        for response in [
            PasskeyHTTPResponse(
                status: 500, headers: ["content-type": "application/problem+json"], body: Data("{".utf8)),
            PasskeyHTTPResponse(status: 404),
        ] {
            let error = await failure(
                of: makeClient(ScriptedTransport(always: response)), SignOutOperation())
            XCTAssertEqual(error?.code, .unexpectedStatus)
            XCTAssertEqual(error?.status, response.status)
        }
        // A 3xx is not followed and is no success.
        let redirect = await failure(
            of: makeClient(ScriptedTransport(always: PasskeyHTTPResponse(status: 302, headers: ["Location": "/x"]))),
            AppleAppSiteAssociationOperation())
        XCTAssertEqual(redirect?.code, .unexpectedStatus)
        XCTAssertEqual(redirect?.status, 302)
    }

    func testResponsesThatBreakTheContractNameTheField() async throws {
        let cases: [(String, String)] = [
            (
                #"{"challengeID":"c","relyingPartyID":"example.com","challenge":"AQID","expiresAt":"2026-11-29T18:30:00Z","publicKey":{"rpId":"example.com","challenge":"!!","timeout":1,"allowCredentials":[],"userVerification":"preferred"}}"#,
                "publicKey.challenge"
            ),
            (
                #"{"challengeID":"c","relyingPartyID":"example.com","challenge":"AQID","expiresAt":"yesterday","publicKey":{"rpId":"example.com","challenge":"AQID","timeout":1,"allowCredentials":[],"userVerification":"preferred"}}"#,
                "expiresAt"
            ),
            (
                #"{"challengeID":"c","relyingPartyID":"example.com","challenge":"AQID","expiresAt":"2026-11-29T18:30:00Z"}"#,
                "publicKey"
            ),
            (
                #"{"challengeID":7,"relyingPartyID":"example.com","challenge":"AQID","expiresAt":"2026-11-29T18:30:00Z","publicKey":{}}"#,
                "challengeID"
            ),
            (#"[1, 2]"#, ""),
            (#"{"challengeID":"c","#, ""),
        ]
        for (body, field) in cases {
            let error = await failure(
                of: makeClient(ScriptedTransport(always: ScriptedTransport.json(200, body))),
                PasskeyAuthenticationStartOperation())
            XCTAssertEqual(error?.code, .malformedResponse, body)
            XCTAssertEqual(error?.field, field, body)
            XCTAssertEqual(error?.status, 200)
        }
        let sessions =
            #"{"sessions":[{"sessionID":"s","authenticationMethod":"password","createdAt":"2026-11-29T18:30:00Z","expiresAt":"2026-11-29T18:30:00Z","current":true},{"sessionID":"t","authenticationMethod":"passkey","createdAt":"2026-11-29T18:30:00Z","expiresAt":null,"current":false}]}"#
        let error = await failure(
            of: makeClient(ScriptedTransport(always: ScriptedTransport.json(200, sessions))), SessionListOperation())
        XCTAssertEqual(error?.field, "sessions[1].expiresAt")

        let html = PasskeyHTTPResponse(status: 200, headers: ["content-type": "text/html"], body: Data("<html>".utf8))
        let portal = await failure(of: makeClient(ScriptedTransport(always: html)), AccountOperation())
        XCTAssertEqual(portal?.code, .malformedResponse)
        XCTAssertEqual(portal?.field, "")
    }

    func testTimesWithAFractionAndOffsetsDecode() async throws {
        let body =
            #"{"accessToken":"t","tokenType":"Bearer","expiresAt":"2026-11-29T18:30:00.250+09:00","expiresIn":600,"sessionID":"s","sessionExpiresAt":"2026-11-29T18:30:00Z","accountID":"a","displayName":"A"}"#
        let session = try await makeClient(ScriptedTransport(always: ScriptedTransport.json(200, body)))
            .execute(PasswordSignInOperation(email: "a", password: "b"))
        XCTAssertEqual(session.expiresAt.timeIntervalSince1970, 1_795_977_000.25 - 9 * 3600, accuracy: 0.001)
    }

    // MARK: - The access token

    func testSignInKeepsTheTokenWhichOnlyBearerRoutesCarryAndSignOutRemovesIt() async throws {
        let transport = ScriptedTransport { request, _ in
            switch request.url.path {
            case "/v1/sessions/password": return ScriptedTransport.session
            case "/v1/session" where request.method == .delete: return ScriptedTransport.noContent
            default:
                return ScriptedTransport.json(
                    200,
                    #"{"challengeID":"c","relyingPartyID":"example.com","challenge":"AQID","expiresAt":"2026-11-29T18:30:00Z","publicKey":{"rpId":"example.com","challenge":"AQID","timeout":1,"allowCredentials":[],"userVerification":"preferred"}}"#
                )
            }
        }
        let store = InMemoryAccessTokenStore()
        let client = makeClient(transport, store: store)
        let session = try await client.execute(PasswordSignInOperation(email: "ada@example.com", password: "secret"))
        XCTAssertFalse(String(describing: session).contains("token-1"), "a session's description hides the token")
        let stored = await store.load()
        XCTAssertEqual(stored?.value, "token-1")
        XCTAssertEqual(stored?.accountID, "a1")
        XCTAssertEqual(stored?.isUsable(at: Date(timeIntervalSince1970: 0)), true)

        _ = try? await client.execute(PasskeyAuthenticationStartOperation())
        try await client.execute(SignOutOperation())
        let requests = transport.requests
        XCTAssertNil(requests[0].headers["authorization"])
        XCTAssertNil(requests[1].headers["authorization"], "an unauthenticated route never carries the token")
        XCTAssertEqual(requests[2].headers["authorization"], "Bearer token-1")
        XCTAssertEqual(requests[2].method, .delete)
        let afterSignOut = await store.load()
        XCTAssertNil(afterSignOut)
        XCTAssertEqual(requests[0].headers["content-type"], "application/json")
        let body = try JSONSerialization.jsonObject(with: requests[0].body ?? Data()) as? [String: String]
        XCTAssertEqual(body, ["email": "ada@example.com", "password": "secret"])
    }

    func testAnUnauthenticatedAnswerForgetsTheTokenUnlessANewerOneReplacedIt() async throws {
        let store = InMemoryAccessTokenStore(AccessToken(value: "old"))
        let refused = ScriptedTransport(always: ScriptedTransport.problem(401, "unauthenticated"))
        let error = await failure(of: makeClient(refused, store: store), CurrentSessionOperation())
        XCTAssertEqual(error?.code, .unauthenticated)
        XCTAssertEqual(refused.requests.first?.headers["authorization"], "Bearer old")
        let forgotten = await store.load()
        XCTAssertNil(forgotten)

        // The token changed while the request was out: the new one stays.
        let swapping = SwappingStore(first: AccessToken(value: "old"), then: AccessToken(value: "new"))
        let newer = await failure(of: makeClient(refused, store: swapping), AccountOperation())
        XCTAssertEqual(newer?.code, .unauthenticated)
        XCTAssertFalse(swapping.wasRemoved)

        // A failed sign-in is no reason to forget the token of the session the app has.
        let kept = InMemoryAccessTokenStore(AccessToken(value: "mine"))
        let wrongPassword = ScriptedTransport(always: ScriptedTransport.problem(401, "invalid_credentials"))
        _ = await failure(
            of: makeClient(wrongPassword, store: kept), PasswordSignInOperation(email: "a", password: "wrong"))
        let still = await kept.load()
        XCTAssertEqual(still?.value, "mine")
    }

    func testAStoreThatFailsGivesATypedError() async throws {
        let error = await failure(
            of: makeClient(ScriptedTransport(always: ScriptedTransport.session), store: BrokenStore()),
            PasswordSignInOperation(email: "a", password: "b"))
        XCTAssertEqual(error?.code, .tokenStorageFailed)
        let loading = await failure(
            of: makeClient(ScriptedTransport(always: ScriptedTransport.noContent), store: BrokenStore()),
            SignOutOperation())
        XCTAssertEqual(loading?.code, .tokenStorageFailed)
    }

    func testSecretsStayOutOfDescriptionsAndDumps() async throws {
        let transport = ScriptedTransport(always: ScriptedTransport.session)
        let client = makeClient(transport)
        let session = try await client.execute(PasswordSignInOperation(email: "ada@example.com", password: "hunter22"))
        _ = try? await client.execute(AccountOperation())
        let stored = try await client.accessToken()
        let token = try XCTUnwrap(stored)
        let values: [Any] = [
            session, token, PasswordSignInOperation(email: "ada@example.com", password: "hunter22"),
            PasswordAccountCreationOperation(email: "ada@example.com", password: "hunter22", displayName: "Ada"),
            transport.requests[1],
        ]
        for value in values {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped] {
                XCTAssertFalse(text.contains("token-1") || text.contains("hunter22"), text)
            }
        }
        XCTAssertEqual(transport.requests[1].headers["authorization"], "Bearer token-1")
    }

    // MARK: - Retries

    func testGETsAndStartsAreRetriedAfterTransientFailuresOnly() async throws {
        // A GET: 503, then no connection, then the answer.
        let flaky = ScriptedTransport { _, index in
            switch index {
            case 0: return ScriptedTransport.problem(503, "unavailable")
            case 1: throw URLError(.networkConnectionLost)
            default: return ScriptedTransport.json(200, #"{"status":"ok"}"#)
            }
        }
        let waits = SleepRecorder()
        let health = try await makeClient(flaky, waits: waits).send(HealthOperation())
        XCTAssertEqual(health.value.status, "ok")
        XCTAssertEqual(flaky.requests.count, 3)
        XCTAssertEqual(waits.recorded, [.milliseconds(100), .milliseconds(200)])

        // A start route is retried too, and gives up after the last attempt with the last failure.
        let down = ScriptedTransport(always: ScriptedTransport.problem(503, "unavailable"))
        let error = await failure(of: makeClient(down), PasskeyAccountCreationStartOperation())
        XCTAssertEqual(error?.code, .unavailable)
        XCTAssertEqual(down.requests.count, 3)

        // Finishes, changes and sign-ins are sent once.
        let once: [any PasskeyAPIOperation] = [
            PasskeyRegistrationFinishOperation(challengeID: "c", credential: SampleOperations.registration),
            PasskeyAccountCreationFinishOperation(registrationID: "r", credential: SampleOperations.registration),
            PasskeyAuthenticationFinishOperation(challengeID: "c", assertion: SampleOperations.assertion),
            PasswordSignInOperation(email: "a", password: "b"), SignOutOperation(),
            SessionRevocationOperation(sessionID: "s"), PasskeyRenameOperation(credentialID: Data([1]), name: "n"),
            PasskeyRemovalOperation(credentialID: Data([1])),
            PasswordAccountCreationOperation(email: "a", password: "b", displayName: "c"),
        ]
        for operation in once {
            let transport = ScriptedTransport(always: ScriptedTransport.problem(503, "unavailable"))
            _ = await anyFailure(of: makeClient(transport), operation)
            XCTAssertEqual(transport.requests.count, 1, "\(operation.route)")
        }

        // Other errors are not retried, even on a GET.
        for response in [ScriptedTransport.problem(401, "unauthenticated"), ScriptedTransport.json(200, "{}")] {
            let transport = ScriptedTransport(always: response)
            _ = await failure(of: makeClient(transport), AccountOperation())
            XCTAssertEqual(transport.requests.count, 1)
        }
    }

    func testRetryAfterIsHonouredWithinTheLongestWait() async throws {
        let busy = ScriptedTransport([
            ScriptedTransport.problem(503, "unavailable", headers: ["Retry-After": "1"]),
            ScriptedTransport.json(200, #"{"status":"ok"}"#),
        ])
        let waits = SleepRecorder()
        _ = try await makeClient(busy, waits: waits).execute(HealthOperation())
        XCTAssertEqual(waits.recorded, [.seconds(1)])

        let tooLong = ScriptedTransport(
            always: ScriptedTransport.problem(503, "unavailable", headers: ["Retry-After": "60"]))
        _ = await failure(of: makeClient(tooLong), HealthOperation())
        XCTAssertEqual(tooLong.requests.count, 1)
    }

    func testTheRetryPolicysWaits() {
        let policy = PasskeyAPIClient.RetryPolicy(
            maximumAttempts: 5, initialBackoff: .milliseconds(250), maximumBackoff: .seconds(1), jitter: false)
        XCTAssertEqual(
            (1...5).map { policy.delay(afterAttempt: $0) },
            [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1), nil])
        XCTAssertNil(PasskeyAPIClient.RetryPolicy.none.delay(afterAttempt: 1))
        let jittered = PasskeyAPIClient.RetryPolicy.standard
        for _ in 0..<50 {
            let delay = jittered.delay(afterAttempt: 1) ?? .zero
            XCTAssertTrue(delay >= .milliseconds(125) && delay <= .milliseconds(250), "\(delay)")
        }
    }

    func testCancellingBeforeARetryStopsIt() async throws {
        let transport = ScriptedTransport(always: ScriptedTransport.problem(503, "unavailable"))
        let client = PasskeyAPIClient(
            baseURL: URL(string: "https://example.com")!,
            configuration: .init(sleep: { _ in throw CancellationError() }), transport: transport)
        let error = await failure(of: client, HealthOperation())
        XCTAssertEqual(error?.code, .cancelled)
        XCTAssertEqual(transport.requests.count, 1)
    }

    // MARK: - Requests

    func testRequestsGoUnderTheBaseURLWithTheirBodies() async throws {
        let transport = ScriptedTransport(always: ScriptedTransport.noContent)
        let client = makeClient(transport, baseURL: "https://example.com/auth/", userAgent: "Shiny/1.0")
        try await client.execute(PasskeyRemovalOperation(credentialID: Data([0xFB, 0xFF, 0x01])))
        try await client.execute(SessionRevocationOperation(sessionID: "s 1"))
        let requests = transport.requests
        XCTAssertEqual(requests[0].url.absoluteString, "https://example.com/auth/v1/passkeys/-_8B")
        XCTAssertEqual(requests[1].url.absoluteString, "https://example.com/auth/v1/sessions/s%201")
        XCTAssertNil(requests[0].body)
        XCTAssertEqual(requests[0].headers["user-agent"], "Shiny/1.0")

        let empty = await failure(of: client, SessionRevocationOperation(sessionID: ""))
        XCTAssertEqual(empty?.code, .invalidArgument)
        XCTAssertEqual(transport.requests.count, 2, "nothing is sent for an invalid argument")
    }

    func testFinishBodiesInBothEncodings() throws {
        func json(_ operation: some PasskeyAPIOperation) throws -> String {
            String(decoding: try XCTUnwrap(operation.body.encoded()).data, as: UTF8.self)
        }
        let credential = PasskeyRegistrationCredential(
            credentialID: Data([0xFB, 0xFF]), clientDataJSON: Data("{}".utf8), attestationObject: Data([0xA0]),
            transports: ["internal"], authenticatorAttachment: "platform", isDiscoverable: true)
        XCTAssertEqual(
            try json(PasskeyRegistrationFinishOperation(challengeID: "c", credential: credential)),
            #"{"attestationObject":"oA","challengeID":"c","clientDataJSON":"e30","credentialID":"-_8","transports":["internal"]}"#
        )
        XCTAssertEqual(
            try json(
                PasskeyRegistrationFinishOperation(challengeID: "c", credential: credential, encoding: .webAuthnJSON)),
            #"{"challengeID":"c","credential":{"authenticatorAttachment":"platform","clientExtensionResults":{"credProps":{"rk":true}},"id":"-_8","rawId":"-_8","response":{"attestationObject":"oA","clientDataJSON":"e30","transports":["internal"]},"type":"public-key"}}"#
        )
        let assertion = PasskeyAssertion(
            credentialID: Data([1]), clientDataJSON: Data("{}".utf8), authenticatorData: Data([2]),
            signature: Data([3]), userHandle: nil)
        XCTAssertEqual(
            try json(PasskeyAuthenticationFinishOperation(challengeID: "c", assertion: assertion)),
            #"{"authenticatorData":"Ag","challengeID":"c","clientDataJSON":"e30","credentialID":"AQ","signature":"Aw"}"#
        )
        XCTAssertEqual(
            try json(
                PasskeyAuthenticationFinishOperation(challengeID: "c", assertion: assertion, encoding: .webAuthnJSON)),
            #"{"challengeID":"c","credential":{"clientExtensionResults":{},"id":"AQ","rawId":"AQ","response":{"authenticatorData":"Ag","clientDataJSON":"e30","signature":"Aw"},"type":"public-key"}}"#
        )
        XCTAssertEqual(
            try json(
                PasskeyAccountCreationFinishOperation(
                    registrationID: "r", emailAddress: "g@example.com", displayName: nil, credentialID: Data([1]),
                    clientDataJSON: Data([2]), attestationObject: Data([3]))),
            #"{"attestationObject":"Aw","clientDataJSON":"Ag","credentialID":"AQ","email":"g@example.com","registrationID":"r"}"#
        )
        XCTAssertEqual(try json(PasskeyAccountCreationStartOperation()), "{}")
        XCTAssertEqual(try json(PasskeyRegistrationStartOperation(mode: .conditional)), #"{"mode":"conditional"}"#)
    }

    func testOptionsForThePlatformComeFromTheStartResponses() async throws {
        let registration =
            #"{"challengeID":"c","relyingPartyID":"example.com","userID":"CQk","userName":"ada@example.com","displayName":"Ada","challenge":"AQID","expiresAt":"2026-11-29T18:30:00Z","mode":"conditional","mediation":"conditional","publicKey":{"rp":{"id":"example.com","name":"Example"},"user":{"id":"CQk","name":"ada@example.com","displayName":"Ada"},"challenge":"AQID","pubKeyCredParams":[{"type":"public-key","alg":-7}],"timeout":300000,"excludeCredentials":[{"type":"public-key","id":"AQ"}],"authenticatorSelection":{"residentKey":"required","userVerification":"preferred"},"attestation":"none"}}"#
        let start = try await makeClient(ScriptedTransport(always: ScriptedTransport.json(200, registration)))
            .execute(PasskeyRegistrationStartOperation(mode: .conditional))
        XCTAssertEqual(
            start.options,
            PasskeyRegistrationOptions(
                relyingPartyID: "example.com", challenge: Data([1, 2, 3]), userID: Data([9, 9]),
                userName: "ada@example.com", displayName: "Ada", mode: .conditional, excludedCredentialIDs: [Data([1])])
        )
    }

    // MARK: - Base64URL

    func testBase64URLRoundTripsAndRefusesOtherAlphabets() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let text = Base64URLCodec.encode(data)
            XCTAssertFalse(text.contains("=") || text.contains("+") || text.contains("/"), text)
            XCTAssertEqual(try Base64URLCodec.decode(text), data)
        }
        XCTAssertEqual(Base64URLCodec.encode(Data([0xFB, 0xFF])), "-_8")
        XCTAssertEqual(Base64URLCodec.encode(Data("hello".utf8)), "aGVsbG8")
        for bad in ["+_8", "/_8", "aGVsbG8=", "a", "aGVs bG8", "aGVsbG8\n", "é"] {
            XCTAssertNil(Base64URLCodec.decodeIfValid(bad), bad)
            XCTAssertThrowsError(try Base64URLCodec.decode(bad)) { error in
                XCTAssertEqual((error as? PasskeyClientError)?.code, .invalidArgument)
            }
        }
    }

    // MARK: - Helpers

    func failure<Operation: PasskeyAPIOperation>(of client: PasskeyAPIClient, _ operation: Operation) async
        -> PasskeyClientError?
    {
        do {
            _ = try await client.send(operation)
            XCTFail("\(operation.route) succeeded")
            return nil
        } catch let error as PasskeyClientError {
            return error
        } catch {
            XCTFail("\(operation.route) threw \(error)")
            return nil
        }
    }

    func anyFailure(of client: PasskeyAPIClient, _ operation: any PasskeyAPIOperation) async -> PasskeyClientError? {
        await failure(of: client, operation)
    }
}

/// A store whose every call fails.
struct BrokenStore: AccessTokenStore {
    struct Failure: Error {}
    func load() async throws -> AccessToken? { throw Failure() }
    func save(_ token: AccessToken) async throws { throw Failure() }
    func remove() async throws { throw Failure() }
}

/// A store that hands out `first` once and `then` afterwards, as if a sign-in elsewhere replaced the token while
/// a request with the first was out.
final class SwappingStore: AccessTokenStore {
    private let state: Mutex<(loads: Int, removed: Bool)> = Mutex((0, false))
    let first: AccessToken
    let then: AccessToken
    init(first: AccessToken, then: AccessToken) {
        self.first = first
        self.then = then
    }
    var wasRemoved: Bool { state.withLock { $0.removed } }
    func load() async throws -> AccessToken? {
        state.withLock { state in
            state.loads += 1
            return state.removed ? nil : (state.loads == 1 ? first : then)
        }
    }
    func save(_ token: AccessToken) async throws {}
    func remove() async throws { state.withLock { $0.removed = true } }
}
