import Domain
import HTTPMessages
import JSON
import ServiceContracts

/// The account's sensitive changes and the fresh sign-in they need: a password set or changed, a recovery finished
/// with a password, and a reauthentication with a password or a passkey bound to the session. Routes marked
/// `recentSignIn` admit a session only while its sign-in (or last reauthentication) is within
/// `PASSKEY_REAUTHENTICATION_WINDOW`; an older one gets 403 `reauthentication_required`, and the client proves a
/// credential again on one of the reauthentication routes, keeping its tokens (``RecentSignIn``).
extension GatewayApplication {
    /// Sets or changes the account's password; every other session ends.
    func setPassword(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try NewPasswordBody(context.body)
        var request = SetPasswordRequest()
        request.accountID = session.accountID
        request.sessionID = session.sessionID
        request.password = body.password
        let response = try await sessionService(context).setPassword(request)
        return Self.json(
            200, ["replaced": .boolean(response.replaced), "sessionsRevoked": .integer(response.sessionsRevoked)])
    }

    /// A fresh sign-in with the account's password, bound to the session: its sign-in time becomes now. The
    /// password guesses count as at sign-in (per client address here, per account in session-service).
    func reauthenticateWithPassword(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try PasswordBody(context.body)
        try limits.take(limits.passwordBuckets(emailKey: nil), context)
        var request = ReauthenticateRequest()
        request.accountID = session.accountID
        request.sessionID = session.sessionID
        request.password = body.password
        _ = try await sessionService(context).reauthenticate(request)
        return Self.noContent
    }

    /// A fresh sign-in with one of the account's passkeys, bound to the session: the assertion answers a challenge
    /// from `POST /v1/passkeys/authentications`, and is checked as a sign-in is.
    func reauthenticateWithPasskey(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try AuthenticationFinishBody(context.body)
        var request = FinishAuthenticationRequest()
        request.challengeID = body.challengeID
        request.credential = body.credential
        request.reauthenticateSessionID = session.sessionID
        request.reauthenticateAccountID = session.accountID
        _ = try await verificationService(context, ceremony: .authentication).finishAuthentication(request)
        return Self.noContent
    }

    /// Ends a recovery with a new password instead of a passkey: the recovery session ends and a password session
    /// is issued. The old password was voided when the recovery completed either way.
    func finishRecoveryWithPassword(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try NewPasswordBody(context.body)
        var request = FinishRecoveryWithPasswordRequest()
        request.accountID = session.accountID
        request.recoverySessionID = session.sessionID
        request.password = body.password
        let issued = try await sessionService(context).finishRecoveryWithPassword(request)
        return sessionResponse(200, issued, context)
    }
}

/// `{password}` for a new password: the policy's lengths (the common-password list is session-service's check).
public struct NewPasswordBody: Sendable, Equatable {
    /// The new password; never logged.
    public var password: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        password = try body.string("password", rule: FieldRules.isPassword, FieldRules.passwordRequirement)
    }
}

/// `{password}` proving the account's current password.
public struct PasswordBody: Sendable, Equatable {
    /// The password; never logged.
    public var password: String

    /// Reads the body: at most 1,024 bytes, what the hasher takes.
    public init(_ body: JSONBody) throws(APIProblem) {
        password = try body.string("password")
        guard password.utf8.count <= 1024 else { throw .invalidRequest("password is longer than 1024 bytes.") }
    }
}
