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
        let session = try await authenticate(context)
        let body = try RegistrationStartBody(context.jsonBody(emptyAllowed: true))
        // Whether conditional mode is granted (a password sign-in moments ago) is challenge-service's decision,
        // stored with the challenge; the gateway vouches for the session it validated.
        var request = BeginRegistrationRequest()
        request.accountID = session.accountID
        request.mode = body.mode
        request.sessionAuthenticationMethod = session.authenticationMethod
        request.sessionCreatedAtUnixMilliseconds = session.createdAtUnixMilliseconds
        var response = try await challengeService(context).beginRegistration(request)
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
        let info = try await verificationService(context, ceremony: .registration).finishRegistration(request)
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
        let body = try AccountRegistrationStartBody(context.jsonBody(emptyAllowed: true))
        var request = BeginAccountRegistrationRequest()
        request.email = body.email ?? ""
        request.displayName = body.displayName ?? ""
        var response = try await challengeService(context).beginAccountRegistration(request)
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
        let response = try await verificationService(context, ceremony: .registration).finishAccountRegistration(request)
        audit("audit.account.created", context, accountID: response.accountID, [("method", "passkey")])
        audit(
            "audit.passkey.registered", context, accountID: response.accountID,
            [("credential.id", Base64URL.encode(body.credential.credentialID))])
        return Self.json(201, ["accountID": .string(response.accountID)])
    }

    // MARK: - Signing in with a passkey

    func beginAuthentication(_ context: RequestContext) async throws -> HTTPResponse {
        _ = try context.jsonBody(emptyAllowed: true)
        var response = try await challengeService(context).beginAuthentication(BeginAuthenticationRequest())
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
            verified = try await verificationService(context, ceremony: .authentication).finishAuthentication(request)
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
        // verification-service issued the session in the statement that recorded the verified sign-in.
        guard let issued = verified.session else {
            throw APIProblem.unavailable
        }
        var fields = [("method", "passkey"), ("credential.id", Base64URL.encode(body.credential.credentialID))]
        if verified.cloneWarning { fields.append(("clone_warning", "true")) }
        audit("audit.sign_in.succeeded", context, accountID: verified.accountID, fields)
        return Self.json(200, ResponseDocuments.session(issued))
    }
}
