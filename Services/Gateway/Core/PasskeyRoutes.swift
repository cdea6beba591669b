import Domain
import Encoding
import HTTPMessages
import JSON
import ServiceContracts

/// The passkey ceremonies: adding a passkey to the signed-in account, creating an account with a passkey, and
/// signing in with one.
extension GatewayApplication {
    // MARK: - Adding a passkey

    func beginRegistration(_ context: RequestContext) async throws -> HTTPResponse {
        try limit(perAddress: startPerAddress, global: startGlobal, name: "start", context)
        let session = try await authenticate(context)
        let body = try RegistrationStartBody(context.jsonBody(emptyAllowed: true))
        if body.mode == .conditional {
            let age = settings.now() - session.createdAtUnixMilliseconds
            // A little negative age is clock skew between the session service and this host, not a session from
            // the future.
            guard session.authenticationMethod == "password", age > -30_000,
                age < settings.conditionalRegistrationWindowMilliseconds
            else {
                throw APIProblem(
                    status: 403, code: DomainError.Code.forbidden.rawValue,
                    detail: "Conditional registration needs a password sign-in from the last five minutes.")
            }
        }
        var request = BeginRegistrationRequest()
        request.accountID = session.accountID
        request.mode = body.mode.rawValue
        request.sessionAuthenticationMethod = session.authenticationMethod
        request.sessionCreatedAtUnixMilliseconds = session.createdAtUnixMilliseconds
        var response = try await call(
            .challenge, ChallengeServiceMethods.beginRegistration, request, BeginRegistrationResponse.self,
            context: context)
        if response.timeoutMilliseconds <= 0 {
            response.timeoutMilliseconds = milliseconds(configuration.challengeLifetime)
        }
        return Self.json(200, ResponseDocuments.registrationStart(response))
    }

    func finishRegistration(_ context: RequestContext) async throws -> HTTPResponse {
        try limit(passkeyPerAddress, key: context.clientAddress, name: "passkey_per_address", context)
        let session = try await authenticate(context)
        let body = try RegistrationFinishBody(context.jsonBody())
        var request = FinishRegistrationRequest()
        request.accountID = session.accountID
        request.challengeID = body.challengeID
        request.credential = body.credential
        let info = try await call(
            .verification, VerificationServiceMethods.finishRegistration, request, PasskeyCredentialInfo.self,
            context: context, ceremony: .registration)
        audit(
            "audit.passkey.registered", context, accountID: session.accountID,
            [
                (
                    "credential.id",
                    Base64URL.encode(info.credentialID.isEmpty ? body.credential.credentialID : info.credentialID)
                )
            ])
        return Self.noContent
    }

    // MARK: - Creating an account with a passkey

    func beginAccountRegistration(_ context: RequestContext) async throws -> HTTPResponse {
        // A sign-up: its limits, not the starts', so that a sign-up flood leaves sign-ins alone.
        try limit(perAddress: signUpPerAddress, global: signUpGlobal, name: "signup", context)
        let body = try AccountRegistrationStartBody(context.jsonBody(emptyAllowed: true))
        var request = BeginAccountRegistrationRequest()
        request.email = body.email ?? ""
        request.displayName = body.displayName ?? ""
        var response = try await call(
            .challenge, ChallengeServiceMethods.beginAccountRegistration, request,
            BeginAccountRegistrationResponse.self, context: context)
        if response.timeoutMilliseconds <= 0 {
            response.timeoutMilliseconds = milliseconds(configuration.accountRegistrationLifetime)
        }
        return Self.json(200, ResponseDocuments.accountRegistrationStart(response))
    }

    func finishAccountRegistration(_ context: RequestContext) async throws -> HTTPResponse {
        try limit(passkeyPerAddress, key: context.clientAddress, name: "passkey_per_address", context)
        let body = try AccountRegistrationFinishBody(context.jsonBody())
        var request = FinishAccountRegistrationRequest()
        request.registrationID = body.registrationID
        request.email = body.email ?? ""
        request.displayName = body.displayName ?? ""
        request.credential = body.credential
        let response = try await call(
            .verification, VerificationServiceMethods.finishAccountRegistration, request,
            FinishAccountRegistrationResponse.self, context: context, ceremony: .registration)
        audit("audit.account.created", context, accountID: response.accountID, [("method", "passkey")])
        audit(
            "audit.passkey.registered", context, accountID: response.accountID,
            [("credential.id", Base64URL.encode(body.credential.credentialID))])
        return Self.json(201, ["accountID": .string(response.accountID)])
    }

    // MARK: - Signing in with a passkey

    func beginAuthentication(_ context: RequestContext) async throws -> HTTPResponse {
        try limit(perAddress: startPerAddress, global: startGlobal, name: "start", context)
        _ = try context.jsonBody(emptyAllowed: true)
        var response = try await call(
            .challenge, ChallengeServiceMethods.beginAuthentication, BeginAuthenticationRequest(),
            BeginAuthenticationResponse.self, context: context)
        if response.timeoutMilliseconds <= 0 {
            response.timeoutMilliseconds = milliseconds(configuration.challengeLifetime)
        }
        return Self.json(200, ResponseDocuments.authenticationStart(response))
    }

    func finishAuthentication(_ context: RequestContext) async throws -> HTTPResponse {
        try limit(passkeyPerAddress, key: context.clientAddress, name: "passkey_per_address", context)
        let body = try AuthenticationFinishBody(context.jsonBody())
        var request = FinishAuthenticationRequest()
        request.challengeID = body.challengeID
        request.credential = body.credential
        let verified: FinishAuthenticationResponse
        do {
            verified = try await call(
                .verification, VerificationServiceMethods.finishAuthentication, request,
                FinishAuthenticationResponse.self, context: context, ceremony: .authentication)
        } catch let problem as APIProblem {
            if problem.status != 503 {
                audit(
                    "audit.sign_in.failed", context, accountID: nil,
                    [
                        ("method", "passkey"), ("reason", problem.reason ?? problem.code),
                        ("credential.id", Base64URL.encode(body.credential.credentialID)),
                    ])
            }
            throw problem
        }
        var sessionRequest = CreateSessionRequest()
        sessionRequest.accountID = verified.accountID
        sessionRequest.authenticationMethod = "passkey"
        let issued = try await call(
            .session, SessionServiceMethods.createSession, sessionRequest, IssuedSession.self, context: context)
        var fields = [("method", "passkey"), ("credential.id", Base64URL.encode(body.credential.credentialID))]
        if verified.cloneWarning { fields.append(("clone_warning", "true")) }
        audit("audit.sign_in.succeeded", context, accountID: verified.accountID, fields)
        return Self.json(200, ResponseDocuments.session(issued))
    }
}
