import AccessTokens
import Domain
import Foundation
import GRPC
import JSON
import ServiceContracts
import ServiceIdentity

/// session-service's gRPC surface: `passkey.v1.SessionService`, translated to `SessionUseCases` calls.
public struct SessionService: SessionServiceHandler {
    let useCases: SessionUseCases
    let recovery: RecoveryUseCases
    let refresh: SessionRefreshUseCases?
    let security: AccountSecurityUseCases?

    public init(
        useCases: SessionUseCases, recovery: RecoveryUseCases, refresh: SessionRefreshUseCases? = nil,
        security: AccountSecurityUseCases? = nil
    ) {
        self.useCases = useCases
        self.recovery = recovery
        self.refresh = refresh
        self.security = security
    }

    private func securityUseCases() throws -> AccountSecurityUseCases {
        guard let security else { throw DomainError(.unavailable, "account security changes are not wired") }
        return security
    }

    public func setPassword(_ request: SetPasswordRequest, context: ServerContext) async throws -> SetPasswordResponse {
        let change = try await securityUseCases().setPassword(
            try RequestFields.password(request.password), of: try RequestFields.accountID(request.accountID),
            keeping: try RequestFields.sessionID(request.sessionID))
        var response = SetPasswordResponse()
        response.replaced = change.hadPassword
        response.sessionsRevoked = Int32(clamping: change.sessionsRevoked)
        return response
    }

    public func reauthenticate(_ request: ReauthenticateRequest, context: ServerContext) async throws -> SessionInfo {
        let accountID = try RequestFields.accountID(request.accountID)
        let sessionID = try RequestFields.sessionID(request.sessionID)
        try await securityUseCases().reauthenticate(
            sessionID, of: accountID, password: try RequestFields.password(request.password))
        var info = SessionInfo()
        info.sessionID = sessionID.description
        info.accountID = accountID.description
        return info
    }

    public func finishRecoveryWithPassword(_ request: FinishRecoveryWithPasswordRequest, context: ServerContext)
        async throws -> IssuedSession
    {
        IssuedSession(
            try await securityUseCases().finishRecovery(
                withPassword: try RequestFields.password(request.password),
                of: try RequestFields.accountID(request.accountID),
                recoverySession: try RequestFields.sessionID(request.recoverySessionID)))
    }

    public func refreshSession(_ request: RefreshSessionRequest, context: ServerContext) async throws -> IssuedSession {
        guard let refresh, request.refreshToken.utf8.count <= 256 else {
            throw DomainError(.unauthenticated, "the refresh token is not valid", reason: "refresh_token_invalid")
        }
        return IssuedSession(try await refresh.refresh(request.refreshToken))
    }

    public func getPublishedKeys(_ request: GetPublishedKeysRequest, context: ServerContext) async throws
        -> PublishedKeys
    {
        var keys = PublishedKeys()
        keys.jwksJSON = JSONWriter.string(await refresh?.publishedKeySet() ?? JSONWebKey.keySet([]))
        return keys
    }

    public func createPasswordAccount(_ request: CreatePasswordAccountRequest, context: ServerContext) async throws
        -> CreatePasswordAccountResponse
    {
        let id = try await useCases.createPasswordAccount(
            email: request.email, password: request.password, displayName: request.displayName)
        var response = CreatePasswordAccountResponse()
        response.accountID = id.description
        return response
    }

    public func signInWithPassword(_ request: SignInWithPasswordRequest, context: ServerContext) async throws
        -> IssuedSession
    {
        IssuedSession(try await useCases.signInWithPassword(email: request.email, password: request.password))
    }

    public func validateSession(_ request: ValidateSessionRequest, context: ServerContext) async throws -> SessionInfo {
        let (session, displayName) = try await useCases.validate(token: request.accessToken)
        var info = SessionInfo()
        info.sessionID = session.id.description
        info.accountID = session.accountID.description
        info.displayName = displayName
        info.authenticationMethod = session.authenticationMethod
        info.createdAtUnixMilliseconds = session.createdAt.unixMilliseconds
        info.expiresAtUnixMilliseconds = session.expiresAt.unixMilliseconds
        info.authenticatedAtUnixMilliseconds = session.authenticatedAt.unixMilliseconds
        return info
    }

    public func revokeSession(_ request: RevokeSessionRequest, context: ServerContext) async throws
        -> RevokeSessionResponse
    {
        try await useCases.revoke(
            sessionID: try RequestFields.sessionID(request.sessionID),
            of: try RequestFields.accountID(request.accountID))
        return RevokeSessionResponse()
    }

    public func listSessions(_ request: ListSessionsRequest, context: ServerContext) async throws
        -> ListSessionsResponse
    {
        let sessions = try await useCases.liveSessions(of: try RequestFields.accountID(request.accountID))
        var response = ListSessionsResponse()
        response.sessions = sessions.map { session in
            var summary = SessionSummary()
            summary.sessionID = session.id.description
            summary.authenticationMethod = session.authenticationMethod
            summary.createdAtUnixMilliseconds = session.createdAt.unixMilliseconds
            summary.expiresAtUnixMilliseconds = session.expiresAt.unixMilliseconds
            summary.current = session.id.description == request.currentSessionID.lowercased()
            return summary
        }
        return response
    }

    public func getAccount(_ request: GetAccountRequest, context: ServerContext) async throws
        -> ServiceContracts.AccountSummary
    {
        Self.summary(try await useCases.summary(of: try RequestFields.accountID(request.accountID)))
    }

    public func updateDisplayName(_ request: UpdateDisplayNameRequest, context: ServerContext) async throws
        -> ServiceContracts.AccountSummary
    {
        Self.summary(
            try await useCases.rename(try RequestFields.accountID(request.accountID), to: request.displayName))
    }

    static func summary(_ summary: Domain.AccountSummary) -> ServiceContracts.AccountSummary {
        var response = ServiceContracts.AccountSummary()
        response.accountID = summary.account.id.description
        response.displayName = summary.account.displayName
        response.emails = summary.emails
        response.hasPassword = summary.hasPassword
        response.passkeyCount = Int32(clamping: summary.passkeyCount)
        response.verifiedEmails = summary.verifiedEmails
        response.recoveryCodesRemaining = Int32(clamping: summary.recoveryCodesRemaining)
        response.userHandle = summary.account.userHandle.bytes
        response.userName = summary.emails.first ?? summary.account.displayName
        return response
    }

    // MARK: - Email verification and recovery

    public func requestEmailVerification(_ request: RequestEmailVerificationRequest, context: ServerContext)
        async throws -> RequestEmailVerificationResponse
    {
        try await recovery.requestVerification(of: try RequestFields.accountID(request.accountID))
        return RequestEmailVerificationResponse()
    }

    public func verifyEmail(_ request: VerifyEmailRequest, context: ServerContext) async throws -> VerifyEmailResponse {
        try await recovery.verifyEmail(of: try RequestFields.accountID(request.accountID), code: request.code)
        return VerifyEmailResponse()
    }

    public func startRecovery(_ request: StartRecoveryRequest, context: ServerContext) async throws
        -> StartRecoveryResponse
    {
        try await recovery.startRecovery(email: request.email)
        return StartRecoveryResponse()
    }

    public func finishRecovery(_ request: FinishRecoveryRequest, context: ServerContext) async throws
        -> IssuedSession
    {
        IssuedSession(
            try await recovery.finishRecovery(
                email: request.email, code: request.code, recoveryCode: request.recoveryCode))
    }

    public func generateRecoveryCodes(_ request: GenerateRecoveryCodesRequest, context: ServerContext) async throws
        -> GenerateRecoveryCodesResponse
    {
        var response = GenerateRecoveryCodesResponse()
        response.codes = try await recovery.generateRecoveryCodes(for: try RequestFields.accountID(request.accountID))
        return response
    }

    public func removePassword(_ request: RemovePasswordRequest, context: ServerContext) async throws
        -> RemovePasswordResponse
    {
        try await useCases.removePassword(of: try RequestFields.accountID(request.accountID))
        return RemovePasswordResponse()
    }
}

extension SessionService {
    /// Who may call each method: only the gateway, which serves apps; no service calls another.
    public static let callers: [CallerPolicy.Rule] = [
        CallerPolicy.Rule(
            [
                SessionServiceMethods.createPasswordAccount.path,
                SessionServiceMethods.signInWithPassword.path,
                SessionServiceMethods.validateSession.path,
                SessionServiceMethods.revokeSession.path,
                SessionServiceMethods.listSessions.path,
                SessionServiceMethods.getAccount.path,
                SessionServiceMethods.updateDisplayName.path,
                SessionServiceMethods.requestEmailVerification.path,
                SessionServiceMethods.verifyEmail.path,
                SessionServiceMethods.startRecovery.path,
                SessionServiceMethods.finishRecovery.path,
                SessionServiceMethods.generateRecoveryCodes.path,
                SessionServiceMethods.removePassword.path,
                SessionServiceMethods.refreshSession.path,
                SessionServiceMethods.getPublishedKeys.path,
                SessionServiceMethods.setPassword.path,
                SessionServiceMethods.reauthenticate.path,
                SessionServiceMethods.finishRecoveryWithPassword.path,
            ], callers: [ServiceIdentity.Name.gateway])
    ]
}
