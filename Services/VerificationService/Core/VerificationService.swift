import Domain
import Encoding
import Foundation
import GRPC
import ServiceContracts
import ServiceIdentity
import WebAuthn

/// verification-service's gRPC surface: `passkey.v1.VerificationService`, translated to `PasskeyCeremonies` calls.
public struct VerificationService: VerificationServiceHandler {
    let ceremonies: PasskeyCeremonies

    public init(ceremonies: PasskeyCeremonies) { self.ceremonies = ceremonies }

    public func finishRegistration(_ request: FinishRegistrationRequest, context: ServerContext) async throws
        -> PasskeyCredentialInfo
    {
        let credential = try await ceremonies.finishRegistration(
            accountID: try RequestFields.accountID(request.accountID),
            challengeID: try RequestFields.challengeID(request.challengeID),
            response: try Self.registrationResponse(request.credential))
        return Self.info(credential)
    }

    public func finishRecoveryRegistration(_ request: FinishRecoveryRegistrationRequest, context: ServerContext)
        async throws -> IssuedSession
    {
        IssuedSession(
            try await ceremonies.finishRecoveryRegistration(
                accountID: try RequestFields.accountID(request.accountID),
                challengeID: try RequestFields.challengeID(request.challengeID),
                response: try Self.registrationResponse(request.credential),
                recoverySessionID: try RequestFields.sessionID(request.recoverySessionID)))
    }

    public func finishAccountRegistration(_ request: FinishAccountRegistrationRequest, context: ServerContext)
        async throws -> FinishAccountRegistrationResponse
    {
        let (account, session) = try await ceremonies.finishAccountRegistration(
            registrationID: try RequestFields.registrationID(request.registrationID), email: request.email,
            displayName: request.displayName, response: try Self.registrationResponse(request.credential))
        var response = FinishAccountRegistrationResponse()
        response.accountID = account.id.description
        response.displayName = account.displayName
        response.session = IssuedSession(session)
        return response
    }

    public func finishAuthentication(_ request: FinishAuthenticationRequest, context: ServerContext) async throws
        -> FinishAuthenticationResponse
    {
        guard let credential = request.credential else {
            throw DomainError(.invalidRequest, "credential is required")
        }
        let challengeID = try RequestFields.challengeID(request.challengeID)
        let assertion = AuthenticationResponse(
            credentialID: credential.credentialID, clientDataJSON: credential.clientDataJSON,
            authenticatorData: credential.authenticatorData, signature: credential.signature,
            userHandle: credential.userHandle.isEmpty ? nil : credential.userHandle)
        guard request.reauthenticateSessionID.isEmpty else {
            let accountID = try RequestFields.accountID(
                request.reauthenticateAccountID, field: "reauthenticate_account_id")
            try await ceremonies.reauthenticate(
                sessionID: try RequestFields.sessionID(
                    request.reauthenticateSessionID, field: "reauthenticate_session_id"),
                of: accountID, challengeID: challengeID, response: assertion)
            var response = FinishAuthenticationResponse()
            response.accountID = accountID.description
            response.credentialID = credential.credentialID
            return response
        }
        let signIn = try await ceremonies.finishAuthentication(challengeID: challengeID, response: assertion)
        var response = FinishAuthenticationResponse()
        response.accountID = signIn.accountID.description
        response.credentialID = signIn.credentialID.bytes
        response.userVerified = signIn.userVerified
        response.cloneWarning = signIn.cloneWarning
        response.session = IssuedSession(signIn.session)
        return response
    }

    public func listCredentials(_ request: ListCredentialsRequest, context: ServerContext) async throws
        -> ListCredentialsResponse
    {
        let listing = try await ceremonies.passkeyListing(of: try RequestFields.accountID(request.accountID))
        var response = ListCredentialsResponse()
        response.credentials = listing.credentials.map(Self.info)
        response.userHandle = listing.userHandle?.bytes ?? []
        return response
    }

    public func renameCredential(_ request: RenameCredentialRequest, context: ServerContext) async throws
        -> PasskeyCredentialInfo
    {
        Self.info(
            try await ceremonies.rename(
                credentialID: try RequestFields.credentialID(request.credentialID),
                of: try RequestFields.accountID(request.accountID), to: request.name))
    }

    public func removeCredential(_ request: RemoveCredentialRequest, context: ServerContext) async throws
        -> RemoveCredentialResponse
    {
        try await ceremonies.remove(
            credentialID: try RequestFields.credentialID(request.credentialID),
            of: try RequestFields.accountID(request.accountID))
        return RemoveCredentialResponse()
    }

    static func registrationResponse(_ credential: RegistrationCredential?) throws -> RegistrationResponse {
        guard let credential else { throw DomainError(.invalidRequest, "credential is required") }
        return RegistrationResponse(
            credentialID: credential.credentialID, clientDataJSON: credential.clientDataJSON,
            attestationObject: credential.attestationObject, transports: credential.transports,
            clientExtensionResultsJSON: credential.clientExtensionResultsJSON)
    }

    static func info(_ credential: PasskeyCredential) -> PasskeyCredentialInfo {
        var info = PasskeyCredentialInfo()
        info.credentialID = credential.credentialID.bytes
        info.name = credential.name
        info.aaguid = credential.aaguid.lowercaseText
        info.createdAtUnixMilliseconds = credential.createdAt.unixMilliseconds
        info.lastUsedAtUnixMilliseconds = credential.lastUsedAt?.unixMilliseconds ?? 0
        info.backupEligible = credential.backupEligible
        info.backedUp = credential.backedUp
        info.transports = credential.transports
        info.cloneWarning = credential.cloneWarning
        return info
    }
}

extension VerificationService {
    /// Who may call each method: only the gateway, which serves apps; no service calls another.
    public static let callers: [CallerPolicy.Rule] = [
        CallerPolicy.Rule(
            [
                VerificationServiceMethods.finishRegistration.path,
                VerificationServiceMethods.finishRecoveryRegistration.path,
                VerificationServiceMethods.finishAccountRegistration.path,
                VerificationServiceMethods.finishAuthentication.path,
                VerificationServiceMethods.listCredentials.path,
                VerificationServiceMethods.renameCredential.path,
                VerificationServiceMethods.removeCredential.path,
            ], callers: [ServiceIdentity.Name.gateway])
    ]
}
