import Foundation
import PasskeyClient
import SoftwareAuthenticator
import WebAuthn
import XCTest

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a finish request carries the WebAuthn response.
enum BodyForm: CaseIterable {
    /// Flat fields, as the talk's iOS code sends them.
    case flat
    /// `credential`: PublicKeyCredential.toJSON(), as browsers and Android send it.
    case credential

    var encoding: CredentialEncoding { self == .flat ? .flat : .webAuthnJSON }
}

/// What an operation gave: its response, or the typed error. Either way it says which client sent it, so a
/// sign-in's outcome carries the client that now holds the session's token.
struct Outcome<Value: Sendable>: Sendable, CustomStringConvertible {
    let result: Result<PasskeyAPIResponse<Value>, PasskeyClientError>
    let client: PasskeyAPIClient

    var value: Value? { try? result.get().value }
    var error: PasskeyClientError? {
        if case .failure(let error) = result { return error }
        return nil
    }
    /// The HTTP status of the response or of the error (nil when no response came).
    var status: Int? {
        switch result {
        case .success(let response): response.status
        case .failure(let error): error.status
        }
    }
    var code: PasskeyClientError.Code? { error?.code }
    var reason: PasskeyClientError.Reason? { error?.reason }
    var headers: [String: String] {
        switch result {
        case .success(let response): response.headers
        case .failure(let error): error.headers
        }
    }
    /// The value, or the error thrown.
    func get() throws -> Value { try result.get().value }

    var description: String {
        switch result {
        case .success(let response): "\(response.status) \(response.value)"
        case .failure(let error): error.description
        }
    }
}

/// A password account and a client signed in to it.
struct PasswordUser {
    let accountID: String
    let email: String
    let client: PasskeyAPIClient
}

/// The app-side steps of every flow, through the PasskeyClient library.
struct Flows {
    let baseURL: URL

    /// One transport for every client of the tests, with room for the concurrent ones.
    static let transport: URLSessionTransport = {
        let configuration = URLSessionTransport.apiConfiguration()
        configuration.httpMaximumConnectionsPerHost = 64
        return URLSessionTransport(configuration: configuration)
    }()

    init(baseURL: URL) { self.baseURL = baseURL }
    init(_ stack: Stack) { self.init(baseURL: stack.gatewayURL) }

    /// A client with a store of its own, holding `token` if given.
    func client(token: String? = nil, retryPolicy: PasskeyAPIClient.RetryPolicy = .standard) -> PasskeyAPIClient {
        PasskeyAPIClient(
            baseURL: baseURL, configuration: .init(retryPolicy: retryPolicy),
            tokenStore: InMemoryAccessTokenStore(token.map { AccessToken(value: $0) }), transport: Self.transport)
    }

    /// Sends `operation` with `client` (a new one if nil).
    func outcome<Operation: PasskeyAPIOperation>(_ operation: Operation, with client: PasskeyAPIClient? = nil) async
        -> Outcome<Operation.Response>
    {
        let client = client ?? self.client()
        do {
            return Outcome(result: .success(try await client.send(operation)), client: client)
        } catch let error as PasskeyClientError {
            return Outcome(result: .failure(error), client: client)
        } catch {
            return Outcome(
                result: .failure(PasskeyClientError(code: .internalError, detail: "\(error)")), client: client)
        }
    }

    /// The status and code `operation` gave, for a list of operations of different kinds.
    func statusAndCode(_ operation: any PasskeyAPIOperation, with client: PasskeyAPIClient? = nil) async
        -> (status: Int?, code: PasskeyClientError.Code?)
    {
        await statusAndCode(of: operation, with: client)
    }

    private func statusAndCode<Operation: PasskeyAPIOperation>(of operation: Operation, with client: PasskeyAPIClient?)
        async -> (status: Int?, code: PasskeyClientError.Code?)
    {
        let outcome = await outcome(operation, with: client)
        return (outcome.status, outcome.code)
    }

    func uniqueEmail(_ prefix: String = "user") -> String { "\(prefix)-\(UUID().uuidString.prefix(8))@example.com" }

    /// Creates a password account; returns its ID.
    func signUpWithPassword(email: String, password: String = "correct horse battery", name: String = "Ada")
        async throws -> String
    {
        let created = await outcome(
            PasswordAccountCreationOperation(email: email, password: password, displayName: name))
        XCTAssertEqual(created.status, 201, created.description)
        return created.value?.accountID ?? ""
    }

    /// Signs in with a password; returns the client holding the session.
    func signInWithPassword(email: String, password: String = "correct horse battery") async throws -> PasskeyAPIClient
    {
        let signIn = await outcome(PasswordSignInOperation(email: email, password: password))
        XCTAssertEqual(signIn.status, 200, signIn.description)
        return signIn.client
    }

    /// A password account, signed in.
    func passwordUser() async throws -> PasswordUser {
        let email = uniqueEmail()
        let accountID = try await signUpWithPassword(email: email)
        return PasswordUser(accountID: accountID, email: email, client: try await signInWithPassword(email: email))
    }

    /// Starts adding a passkey.
    func beginRegistration(_ client: PasskeyAPIClient, mode: RegistrationMode = .modal) async
        -> Outcome<PasskeyRegistrationStart>
    {
        await outcome(PasskeyRegistrationStartOperation(mode: mode), with: client)
    }

    /// Completes a registration start with the authenticator.
    func finishRegistration(
        _ client: PasskeyAPIClient, start: PasskeyRegistrationStart, authenticator: SoftwareAuthenticator,
        form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        attestation: SoftwareAuthenticator.Attestation = .none, origin: String = Stack.origin
    ) async -> Outcome<NoContent> {
        let registration = authenticator.makeRegistration(
            challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: origin, flags: flags,
            attestation: attestation)
        return await outcome(
            PasskeyRegistrationFinishOperation(
                challengeID: start.challengeID, credential: credential(registration), encoding: form.encoding),
            with: client)
    }

    /// Adds a passkey to a signed-in account, asserting success.
    func addPasskey(_ client: PasskeyAPIClient, authenticator: SoftwareAuthenticator, form: BodyForm = .flat)
        async throws
    {
        let start = await beginRegistration(client)
        XCTAssertEqual(start.status, 200, start.description)
        let finish = await finishRegistration(client, start: try start.get(), authenticator: authenticator, form: form)
        XCTAssertEqual(finish.status, 204, finish.description)
    }

    /// Creates an account with a passkey; returns the finish's outcome.
    func createPasskeyAccount(
        authenticator: inout SoftwareAuthenticator, email: String?, displayName: String? = "Grace",
        emailAtFinish: String? = nil, form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData],
        attestation: SoftwareAuthenticator.Attestation = .none
    ) async throws -> Outcome<Session> {
        let started = await outcome(PasskeyAccountCreationStartOperation(emailAddress: email, displayName: displayName))
        XCTAssertEqual(started.status, 200, started.description)
        let start = try started.get()
        authenticator.userHandle = [UInt8](start.userID)
        let registration = authenticator.makeRegistration(
            challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: Stack.origin, flags: flags,
            attestation: attestation)
        return await outcome(
            PasskeyAccountCreationFinishOperation(
                registrationID: start.registrationID, emailAddress: emailAtFinish, credential: credential(registration),
                encoding: form.encoding))
    }

    /// Starts a passkey sign-in.
    func beginAuthentication() async throws -> PasskeyAuthenticationStart {
        let start = await outcome(PasskeyAuthenticationStartOperation())
        XCTAssertEqual(start.status, 200, start.description)
        return try start.get()
    }

    /// Finishes a passkey sign-in with `assertion`, from a new client.
    func finishAuthentication(challengeID: String, assertion: AuthenticationResponse, form: BodyForm = .flat) async
        -> Outcome<Session>
    {
        await outcome(
            PasskeyAuthenticationFinishOperation(
                challengeID: challengeID, assertion: self.assertion(assertion), encoding: form.encoding))
    }

    /// Signs in with the authenticator's passkey.
    func signInWithPasskey(
        _ authenticator: inout SoftwareAuthenticator, form: BodyForm = .flat,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified]
    ) async throws -> Outcome<Session> {
        let start = try await beginAuthentication()
        let assertion = authenticator.makeAssertion(
            challenge: [UInt8](start.challenge), rpID: start.relyingPartyID, origin: Stack.origin, flags: flags)
        return await finishAuthentication(challengeID: start.challengeID, assertion: assertion, form: form)
    }

    /// A software authenticator's registration as the library's credential (what AuthenticationServices gives an
    /// app).
    func credential(_ registration: RegistrationResponse) -> PasskeyRegistrationCredential {
        Self.credential(registration)
    }

    /// A software authenticator's assertion as the library's.
    func assertion(_ assertion: AuthenticationResponse) -> PasskeyAssertion { Self.assertion(assertion) }

    static func credential(_ registration: RegistrationResponse) -> PasskeyRegistrationCredential {
        PasskeyRegistrationCredential(
            credentialID: Data(registration.credentialID), clientDataJSON: Data(registration.clientDataJSON),
            attestationObject: Data(registration.attestationObject), transports: registration.transports,
            authenticatorAttachment: "platform", isDiscoverable: true)
    }

    static func assertion(_ assertion: AuthenticationResponse) -> PasskeyAssertion {
        PasskeyAssertion(
            credentialID: Data(assertion.credentialID), clientDataJSON: Data(assertion.clientDataJSON),
            authenticatorData: Data(assertion.authenticatorData), signature: Data(assertion.signature),
            userHandle: assertion.userHandle.map { Data($0) })
    }
}

/// A request outside the typed operations: malformed bodies, pages, unknown paths.
struct RawRequest: PasskeyAPIOperation {
    typealias Response = NoContent
    let route: APIRoute
    let body: APIRequestBody

    init(_ method: HTTPMethod, _ path: String, body: APIRequestBody = .none) {
        route = APIRoute(method, path, operationID: "test")
        self.body = body
    }

    /// A JSON body written as text, for bodies no operation would send.
    init(_ method: HTTPMethod, _ path: String, json: String) {
        self.init(method, path, body: .raw(Data(json.utf8), contentType: "application/json"))
    }
}

/// `GET path` answered with text: the web page's files, and the services' `/healthz`.
struct TextRequest: PasskeyAPIOperation {
    typealias Response = TextDocument
    let route: APIRoute

    init(_ path: String) { route = APIRoute(.get, path, operationID: "test") }
}

/// An operation whose response also carries the body as sent, for assertions on the wire format itself.
struct Verbatim<Wrapped: PasskeyAPIOperation>: PasskeyAPIOperation {
    typealias Response = (value: Wrapped.Response, json: [String: String])
    let wrapped: Wrapped

    init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    var route: APIRoute { wrapped.route }
    var pathParameters: [String: String] { wrapped.pathParameters }
    var body: APIRequestBody { wrapped.body }

    /// The wrapped value, and the body's top-level string members.
    func decodeResponse(_ response: PasskeyHTTPResponse) throws -> Response {
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        return (try wrapped.decodeResponse(response), object.compactMapValues { $0 as? String })
    }

    func accessTokenChange(for response: Response) -> AccessTokenChange? {
        wrapped.accessTokenChange(for: response.value)
    }
}

/// The software authenticator in the place of AuthenticationServices: it answers the requests an app would make
/// from the library's options with what the platform would return.
extension SoftwareAuthenticator {
    /// The new passkey for a registration request made from `options`.
    func credential(
        for options: PasskeyRegistrationOptions, origin: String = Stack.origin,
        flags: AuthenticatorData.Flags = [.userPresent, .userVerified, .attestedCredentialData]
    ) -> PasskeyRegistrationCredential {
        Flows.credential(
            makeRegistration(
                challenge: [UInt8](options.challenge), rpID: options.relyingPartyID, origin: origin, flags: flags))
    }

    /// The new passkey for an account creation request made from `options`.
    func credential(for options: PasskeyAccountCreationOptions, origin: String = Stack.origin)
        -> PasskeyRegistrationCredential
    {
        Flows.credential(
            makeRegistration(challenge: [UInt8](options.challenge), rpID: options.relyingPartyID, origin: origin))
    }

    /// The assertion for a sign-in request made from `options`.
    mutating func assertion(for options: PasskeyAuthenticationOptions, origin: String = Stack.origin)
        -> PasskeyAssertion
    {
        Flows.assertion(
            makeAssertion(challenge: [UInt8](options.challenge), rpID: options.relyingPartyID, origin: origin))
    }
}
