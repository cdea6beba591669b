import Configuration
import Domain
import Encoding
import HTTPMessages
import JSON
import ServiceContracts

/// Password accounts and what a signed-in account manages: its session, sessions and passkeys.
extension GatewayApplication {
    // MARK: - Password accounts

    func createPasswordAccount(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try PasswordAccountBody(context.body)
        var request = CreatePasswordAccountRequest()
        request.email = body.email
        request.password = body.password
        request.displayName = body.displayName
        let response = try await sessionService(context).createPasswordAccount(request)
        return Self.json(201, ["accountID": .string(response.accountID)])
    }

    func signInWithPassword(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try PasswordSignInBody(context.body)
        let emailKey = EmailAddress.limitKey(body.email)
        try limits.take(limits.passwordBuckets(emailKey: emailKey), context)
        var request = SignInWithPasswordRequest()
        request.email = body.email
        request.password = body.password
        let issued = try await sessionService(context).signInWithPassword(request)
        return sessionResponse(200, issued, context)
    }

    // MARK: - The signed-in account

    func currentSession(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        return Self.json(200, ResponseDocuments.currentSession(session))
    }

    func signOut(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        var request = RevokeSessionRequest()
        request.accountID = session.accountID
        request.sessionID = session.sessionID
        _ = try await sessionService(context).revokeSession(request)
        var response = Self.noContent
        if configuration.refreshCookie, browserOrigin(of: context) != nil {
            response.headers.add("set-cookie", Self.refreshCookie(value: "", maxAge: 0))
        }
        return response
    }

    func listSessions(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        var request = ListSessionsRequest()
        request.accountID = session.accountID
        request.currentSessionID = session.sessionID
        let list = try await sessionService(context).listSessions(request, idempotent: true)
        return Self.json(200, ResponseDocuments.sessions(list))
    }

    func revokeSession(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let sessionID = context.parameter("sessionID")
        guard FieldRules.isUUID(sessionID) else {
            throw APIProblem.invalidRequest("The session ID in the path must be a UUID.")
        }
        var request = RevokeSessionRequest()
        request.accountID = session.accountID
        request.sessionID = sessionID
        _ = try await sessionService(context).revokeSession(request)
        return Self.noContent
    }

    func account(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        var request = GetAccountRequest()
        request.accountID = session.accountID
        let summary = try await sessionService(context).getAccount(request, idempotent: true)
        return Self.json(200, ResponseDocuments.account(summary))
    }

    func renameAccount(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try RenameAccountBody(context.body)
        var request = UpdateDisplayNameRequest()
        request.accountID = session.accountID
        request.displayName = body.displayName
        let summary = try await sessionService(context).updateDisplayName(request)
        return Self.json(200, ResponseDocuments.account(summary))
    }

    /// The account's passkeys, each with its provider, and what the page's Signal API calls name the account by
    /// (the RP ID and the user handle, which verification-service reads with the passkeys).
    func listPasskeys(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        var request = ListCredentialsRequest()
        request.accountID = session.accountID
        let list = try await verificationService(context).listCredentials(request, idempotent: true)
        return Self.json(
            200,
            ResponseDocuments.passkeys(
                list, relyingPartyID: configuration.relyingPartyID, userHandle: list.userHandle,
                provider: providers.fields(aaguid:)))
    }

    func renamePasskey(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let credentialID = try Self.credentialID(context)
        let body = try RenamePasskeyBody(context.body)
        var request = RenameCredentialRequest()
        request.accountID = session.accountID
        request.credentialID = credentialID
        request.name = body.name
        let info = try await verificationService(context).renameCredential(request)
        return Self.json(200, ResponseDocuments.passkey(info, provider: providers.fields(aaguid:)))
    }

    func removePasskey(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let credentialID = try Self.credentialID(context)
        var request = RemoveCredentialRequest()
        request.accountID = session.accountID
        request.credentialID = credentialID
        _ = try await verificationService(context).removeCredential(request)
        return Self.noContent
    }

    /// Stage ③: the account gives up its password once a passkey has signed it in.
    func removePassword(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        var request = RemovePasswordRequest()
        request.accountID = session.accountID
        _ = try await sessionService(context).removePassword(request)
        return Self.noContent
    }

    static func credentialID(_ context: PublicContext) throws(APIProblem) -> [UInt8] {
        guard let bytes = Base64URL.decode(context.parameter("credentialID")),
            FieldRules.credentialIDLengths.contains(bytes.count)
        else {
            throw .invalidRequest(
                "The credential ID in the path must be base64url of 1 to \(CredentialID.maximumLength) bytes.")
        }
        return bytes
    }
}
