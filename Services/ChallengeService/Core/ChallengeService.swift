import Domain
import Foundation
import GRPC
import ServiceContracts
import ServiceIdentity

/// challenge-service's gRPC surface: `passkey.v1.ChallengeService`, translated to `ChallengeUseCases` calls.
public struct ChallengeService: ChallengeServiceHandler {
    let useCases: ChallengeUseCases
    let relyingParty: ChallengeUseCases.RelyingParty
    /// The `timeout` the options suggest to clients, in milliseconds.
    let timeoutMilliseconds: Int64

    public init(useCases: ChallengeUseCases, relyingParty: ChallengeUseCases.RelyingParty, timeoutMilliseconds: Int64) {
        self.useCases = useCases
        self.relyingParty = relyingParty
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    public func beginRegistration(_ request: BeginRegistrationRequest, context: ServerContext) async throws
        -> BeginRegistrationResponse
    {
        let mode = request.mode ?? .modal
        let issued = try await useCases.beginRegistration(
            accountID: try RequestFields.accountID(request.accountID), mode: mode,
            sessionMethod: request.sessionAuthenticationMethod,
            sessionCreatedAt: request.sessionCreatedAtUnixMilliseconds == 0
                ? nil : Date(unixMilliseconds: request.sessionCreatedAtUnixMilliseconds))
        var response = BeginRegistrationResponse()
        response.challengeID = issued.challenge.id.description
        response.challenge = issued.challenge.challenge
        response.expiresAtUnixMilliseconds = issued.challenge.expiresAt.unixMilliseconds
        response.relyingPartyID = relyingParty.id
        response.relyingPartyName = relyingParty.name
        response.userHandle = issued.account.userHandle.bytes
        response.userName = issued.userName
        response.userDisplayName = issued.account.displayName
        response.excludeCredentials = issued.excludeCredentials.map { credential in
            var descriptor = CredentialDescriptor()
            descriptor.id = credential.credentialID.bytes
            descriptor.transports = credential.transports
            return descriptor
        }
        response.mode = mode
        response.timeoutMilliseconds = timeoutMilliseconds
        return response
    }

    public func beginAccountRegistration(_ request: BeginAccountRegistrationRequest, context: ServerContext)
        async throws -> BeginAccountRegistrationResponse
    {
        let registration = try await useCases.beginAccountRegistration(
            email: request.email, displayName: request.displayName)
        var response = BeginAccountRegistrationResponse()
        response.registrationID = registration.id.description
        response.challenge = registration.challenge
        response.expiresAtUnixMilliseconds = registration.expiresAt.unixMilliseconds
        response.relyingPartyID = relyingParty.id
        response.relyingPartyName = relyingParty.name
        response.userHandle = registration.userHandle.bytes
        response.userName = registration.email ?? registration.displayName ?? ""
        response.userDisplayName = registration.displayName ?? registration.email ?? ""
        response.timeoutMilliseconds = timeoutMilliseconds
        return response
    }

    public func beginAuthentication(_ request: BeginAuthenticationRequest, context: ServerContext) async throws
        -> BeginAuthenticationResponse
    {
        let challenge = try await useCases.beginAuthentication()
        var response = BeginAuthenticationResponse()
        response.challengeID = challenge.id.description
        response.challenge = challenge.challenge
        response.expiresAtUnixMilliseconds = challenge.expiresAt.unixMilliseconds
        response.relyingPartyID = relyingParty.id
        response.timeoutMilliseconds = timeoutMilliseconds
        return response
    }
}

extension ChallengeService {
    /// Who may call each method: only the gateway, which serves apps; no service calls another.
    public static let callers: [CallerPolicy.Rule] = [
        CallerPolicy.Rule(
            [
                ChallengeServiceMethods.beginRegistration.path,
                ChallengeServiceMethods.beginAccountRegistration.path,
                ChallengeServiceMethods.beginAuthentication.path,
            ], callers: [ServiceIdentity.Name.gateway])
    ]
}
