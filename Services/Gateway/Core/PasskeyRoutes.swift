import Configuration
import Domain
import Encoding
import HTTPMessages
import JSON
import ServiceContracts

/// The passkey ceremonies: adding a passkey to the signed-in account, creating an account with a passkey, and
/// signing in with one.
extension GatewayApplication {
    // MARK: - Adding a passkey

    func beginRegistration(_ context: PublicContext) async throws -> HTTPResponse {
        // A recovery session may start one (the route admits it): registering a passkey is what it is for.
        let session = try context.validatedSession()
        let body = try RegistrationStartBody(context.body)
        // Adding a passkey is a sensitive change: a fresh sign-in, except for a recovery session (which exists for
        // it) and the automatic upgrade, whose own rule (a password sign-in moments ago) challenge-service applies.
        if session.authenticationMethod != .recovery && body.mode != .conditional {
            try recentSignIn.require(session)
        }
        // Whether conditional mode is granted (a password sign-in moments ago) is challenge-service's decision,
        // stored with the challenge; the gateway vouches for the session it validated.
        var request = BeginRegistrationRequest()
        request.accountID = session.accountID
        request.mode = body.mode
        request.sessionAuthenticationMethod = session.authenticationMethod
        request.sessionCreatedAtUnixMilliseconds = session.createdAtUnixMilliseconds
        let response = try await challengeService(context).beginRegistration(request)
        return Self.json(200, ResponseDocuments.registrationStart(response, options: ceremonyOptions))
    }

    func finishRegistration(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try RegistrationFinishBody(context.body)
        var request = FinishRegistrationRequest()
        request.accountID = session.accountID
        request.challengeID = body.challengeID
        request.credential = body.credential
        _ = try await verificationService(context, ceremony: .registration).finishRegistration(request)
        return Self.noContent
    }

    // MARK: - Creating an account with a passkey

    func beginAccountRegistration(_ context: PublicContext) async throws -> HTTPResponse {
        // A sign-up (the route counts it against the sign-up limits, not the starts', so that a sign-up flood
        // leaves sign-ins alone).
        let body = try AccountRegistrationStartBody(context.body)
        var request = BeginAccountRegistrationRequest()
        request.email = body.email ?? ""
        request.displayName = body.displayName ?? ""
        let response = try await challengeService(context).beginAccountRegistration(request)
        return Self.json(200, ResponseDocuments.accountRegistrationStart(response, options: ceremonyOptions))
    }

    func finishAccountRegistration(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try AccountRegistrationFinishBody(context.body)
        var request = FinishAccountRegistrationRequest()
        request.registrationID = body.registrationID
        request.email = body.email ?? ""
        request.displayName = body.displayName ?? ""
        request.credential = body.credential
        let response = try await verificationService(context, ceremony: .registration).finishAccountRegistration(
            request)
        // The new account is signed in: its first session comes with it (`accountID` stays where it was).
        guard let issued = response.session else { return Self.json(201, ["accountID": .string(response.accountID)]) }
        return sessionResponse(201, issued, context)
    }

    // MARK: - Signing in with a passkey

    func beginAuthentication(_ context: PublicContext) async throws -> HTTPResponse {
        let response = try await challengeService(context).beginAuthentication(BeginAuthenticationRequest())
        return Self.json(200, ResponseDocuments.authenticationStart(response, options: ceremonyOptions))
    }

    func finishAuthentication(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try AuthenticationFinishBody(context.body)
        var request = FinishAuthenticationRequest()
        request.challengeID = body.challengeID
        request.credential = body.credential
        let verified = try await verificationService(context, ceremony: .authentication).finishAuthentication(request)
        // verification-service issued the session in the statement that recorded the verified sign-in.
        guard let issued = verified.session else {
            throw APIProblem.unavailable
        }
        return sessionResponse(200, issued, context)
    }
}
