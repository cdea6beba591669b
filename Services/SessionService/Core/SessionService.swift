import Domain
import Foundation
import GRPC
import ServiceContracts
import ServiceRuntime

/// session-service's gRPC surface: translates the contract's messages to `SessionUseCases` calls.
public struct SessionService: Sendable {
    let useCases: SessionUseCases

    public init(useCases: SessionUseCases) { self.useCases = useCases }

    /// Registers every method of `passkey.v1.SessionService` on `server`.
    public func register(on server: GRPCServer, context: ServiceContext) {
        server.register(
            context.unary(SessionServiceMethods.createPasswordAccount) {
                (request: CreatePasswordAccountRequest, _) in
                let id = try await useCases.createPasswordAccount(
                    email: request.email, password: request.password, displayName: request.displayName)
                var response = CreatePasswordAccountResponse()
                response.accountID = id.description
                return response
            })
        server.register(
            context.unary(SessionServiceMethods.signInWithPassword) { (request: SignInWithPasswordRequest, _) in
                IssuedSession(try await useCases.signInWithPassword(email: request.email, password: request.password))
            })
        server.register(
            context.unary(SessionServiceMethods.validateSession) { (request: ValidateSessionRequest, _) in
                let (session, displayName) = try await useCases.validate(token: request.accessToken)
                var info = SessionInfo()
                info.sessionID = session.id.description
                info.accountID = session.accountID.description
                info.displayName = displayName
                info.authenticationMethod = session.authenticationMethod.rawValue
                info.createdAtUnixMilliseconds = session.createdAt.unixMilliseconds
                info.expiresAtUnixMilliseconds = session.expiresAt.unixMilliseconds
                return info
            })
        server.register(
            context.unary(SessionServiceMethods.revokeSession) { (request: RevokeSessionRequest, _) in
                try await useCases.revoke(
                    sessionID: try RequestFields.sessionID(request.sessionID),
                    of: try RequestFields.accountID(request.accountID))
                return RevokeSessionResponse()
            })
        server.register(
            context.unary(SessionServiceMethods.listSessions) { (request: ListSessionsRequest, _) in
                let sessions = try await useCases.liveSessions(of: try RequestFields.accountID(request.accountID))
                var response = ListSessionsResponse()
                response.sessions = sessions.map { session in
                    var summary = SessionSummary()
                    summary.sessionID = session.id.description
                    summary.authenticationMethod = session.authenticationMethod.rawValue
                    summary.createdAtUnixMilliseconds = session.createdAt.unixMilliseconds
                    summary.expiresAtUnixMilliseconds = session.expiresAt.unixMilliseconds
                    summary.current = session.id.description == request.currentSessionID.lowercased()
                    return summary
                }
                return response
            })
        server.register(
            context.unary(SessionServiceMethods.getAccount) { (request: GetAccountRequest, _) in
                let summary = try await useCases.summary(of: try RequestFields.accountID(request.accountID))
                var response = AccountSummary()
                response.accountID = summary.account.id.description
                response.displayName = summary.account.displayName
                response.emails = summary.emails
                response.hasPassword = summary.hasPassword
                response.passkeyCount = Int32(clamping: summary.passkeyCount)
                return response
            })
    }
}
