import Foundation

// One operation per route of the gateway, named as in the talk (`PasskeyAccountCreationStartOperation`, ...).
// ``PasskeyAPI/routes`` lists their routes; a test compares the list with the gateway's router and `openapi.json`.

/// Every route the gateway serves, as the operations of this library send them.
public enum PasskeyAPI {
    /// The routes, in the gateway's order.
    public static let routes: [APIRoute] = [
        PasswordAccountCreationOperation.route, PasswordSignInOperation.route,
        PasskeyRegistrationStartOperation.route, PasskeyRegistrationFinishOperation.route,
        PasskeyAccountCreationStartOperation.route, PasskeyAccountCreationFinishOperation.route,
        PasskeyAuthenticationStartOperation.route, PasskeyAuthenticationFinishOperation.route,
        CurrentSessionOperation.route, SessionRefreshOperation.route, SignOutOperation.route,
        SessionListOperation.route,
        SessionRevocationOperation.route, AccountOperation.route, AccountRenameOperation.route,
        PasskeyListOperation.route, PasskeyRenameOperation.route, PasskeyRemovalOperation.route,
        PasskeyProviderIconOperation.route,
        EmailVerificationRequestOperation.route, EmailVerificationOperation.route, RecoveryCodesOperation.route,
        PasswordRemovalOperation.route, PasswordChangeOperation.route, PasswordReauthenticationOperation.route,
        PasskeyReauthenticationOperation.route, RecoveryStartOperation.route, RecoveryFinishOperation.route,
        RecoveryPasskeyRegistrationFinishOperation.route, RecoveryPasswordFinishOperation.route,
        AppleAppSiteAssociationOperation.route, AssetLinksOperation.route, RelatedOriginsOperation.route,
        PasskeyEndpointsOperation.route, JSONWebKeySetOperation.route, DiscoveryDocumentOperation.route,
        HealthOperation.route, ReadinessOperation.route, MetricsOperation.route,
        OpenAPIDocumentOperation.route,
    ]
}

// MARK: - Password accounts

/// `POST /v1/accounts/password`: creates an account with an email and password (201). 409 `email_taken`.
public struct PasswordAccountCreationOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = AccountCreated
    /// The route.
    public static let route = APIRoute(.post, "/v1/accounts/password", operationID: "createPasswordAccount")
    public var route: APIRoute { Self.route }

    /// The email address as typed.
    public var email: String
    /// The password (never logged).
    public var password: String
    /// The name shown for the account.
    public var displayName: String

    /// Creates the operation.
    public init(email: String, password: String, displayName: String) {
        self.email = email
        self.password = password
        self.displayName = displayName
    }

    public var body: APIRequestBody {
        .json(["email": email, "password": password, "displayName": displayName])
    }

    public var description: String { "PasswordAccountCreationOperation(email: \(email), displayName: \(displayName))" }
    public var customMirror: Mirror { Mirror(self, children: ["email": email, "displayName": displayName]) }
}

/// `POST /v1/sessions/password`: signs in with email and password; the client keeps the session's token. 401
/// `invalid_credentials` (an unknown email and a wrong password look the same), 429 `rate_limited`.
public struct PasswordSignInOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(.post, "/v1/sessions/password", operationID: "signInWithPassword")
    public var route: APIRoute { Self.route }

    /// The email address as typed.
    public var email: String
    /// The password (never logged).
    public var password: String

    /// Creates the operation.
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }

    public var body: APIRequestBody { .json(["email": email, "password": password]) }
    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }

    public var description: String { "PasswordSignInOperation(email: \(email))" }
    public var customMirror: Mirror { Mirror(self, children: ["email": email]) }
}

// MARK: - Adding a passkey to the signed-in account

/// `POST /v1/passkeys/registrations` (bearer): starts adding a passkey. Conditional mode (Automatic Passkey
/// Upgrade) is granted only to a password session less than five minutes old, otherwise 403 `forbidden`.
public struct PasskeyRegistrationStartOperation: PasskeyAPIOperation {
    public typealias Response = PasskeyRegistrationStart
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/registrations", operationID: "beginRegistration", requiresAccessToken: true,
        retryable: true)
    public var route: APIRoute { Self.route }

    /// The mode asked for.
    public var mode: RegistrationMode

    /// Creates the operation.
    public init(mode: RegistrationMode = .modal) { self.mode = mode }

    public var body: APIRequestBody { .json(["mode": mode.rawValue]) }
}

/// `POST /v1/passkeys/registrations/finish` (bearer): registers the passkey (204). 400 `verification_failed` with
/// a reason, 409 `credential_already_registered`, 410 `challenge_unavailable` (start again: a finish consumes its
/// challenge even when it fails).
public struct PasskeyRegistrationFinishOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/registrations/finish", operationID: "finishRegistration", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The start response's `challengeID`.
    public var challengeID: String
    /// The new passkey.
    public var credential: PasskeyRegistrationCredential
    /// How the body carries it.
    public var encoding: CredentialEncoding

    /// Creates the operation.
    public init(challengeID: String, credential: PasskeyRegistrationCredential, encoding: CredentialEncoding = .flat) {
        self.challengeID = challengeID
        self.credential = credential
        self.encoding = encoding
    }

    /// Creates the operation from the registration's values, in the talk's shape.
    public init(
        challengeID: String, credentialID: Data, clientDataJSON: Data, attestationObject: Data,
        transports: [String]? = nil
    ) {
        self.init(
            challengeID: challengeID,
            credential: PasskeyRegistrationCredential(
                credentialID: credentialID, clientDataJSON: clientDataJSON, attestationObject: attestationObject,
                transports: transports))
    }

    public var body: APIRequestBody {
        .json(
            FinishBody(
                fields: [("challengeID", challengeID)], credential: .registration(credential), encoding: encoding))
    }
}

// MARK: - Creating an account with a passkey

/// `POST /v1/passkeys/account-registrations`: starts creating an account with a passkey. The email and display
/// name may wait until the finish (the account creation sheet chooses them).
public struct PasskeyAccountCreationStartOperation: PasskeyAPIOperation {
    public typealias Response = PasskeyAccountCreationStart
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/account-registrations", operationID: "beginAccountRegistration", retryable: true)
    public var route: APIRoute { Self.route }

    /// The email address, when the form asked for it first.
    public var emailAddress: String?
    /// The display name, when the form asked for it first.
    public var displayName: String?

    /// Creates the operation.
    public init(emailAddress: String? = nil, displayName: String? = nil) {
        self.emailAddress = emailAddress
        self.displayName = displayName
    }

    public var body: APIRequestBody {
        var fields: [String: String] = [:]
        fields["email"] = emailAddress
        fields["displayName"] = displayName
        return .json(fields)
    }
}

/// `POST /v1/passkeys/account-registrations/finish`: creates the account, its email and its passkey together
/// and signs the new account in (201 with its ``Session``, which the client keeps like a sign-in's): one ceremony
/// from nothing to signed in. UP must be 1. 400 `invalid_request` when no email was given at start or here, 409
/// `email_taken` or `credential_already_registered`, 410 `challenge_unavailable`.
public struct PasskeyAccountCreationFinishOperation: PasskeyAPIOperation {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/account-registrations/finish", operationID: "finishAccountRegistration")
    public var route: APIRoute { Self.route }

    /// The start response's `registrationID`.
    public var registrationID: String
    /// The email address, unless given at start.
    public var emailAddress: String?
    /// The display name, unless given at start.
    public var displayName: String?
    /// The new passkey.
    public var credential: PasskeyRegistrationCredential
    /// How the body carries it.
    public var encoding: CredentialEncoding

    /// Creates the operation.
    public init(
        registrationID: String, emailAddress: String? = nil, displayName: String? = nil,
        credential: PasskeyRegistrationCredential, encoding: CredentialEncoding = .flat
    ) {
        self.registrationID = registrationID
        self.emailAddress = emailAddress
        self.displayName = displayName
        self.credential = credential
        self.encoding = encoding
    }

    /// Creates the operation from the registration's values, in the talk's shape.
    public init(
        registrationID: String, emailAddress: String?, displayName: String?, credentialID: Data, clientDataJSON: Data,
        attestationObject: Data
    ) {
        self.init(
            registrationID: registrationID, emailAddress: emailAddress, displayName: displayName,
            credential: PasskeyRegistrationCredential(
                credentialID: credentialID, clientDataJSON: clientDataJSON, attestationObject: attestationObject))
    }

    /// Creates the operation from what the account creation sheet returned.
    public init(registrationID: String, result: PasskeyAccountCreationResult) {
        self.init(
            registrationID: registrationID, emailAddress: result.emailAddress, displayName: result.displayName,
            credential: result.credential)
    }

    public var body: APIRequestBody {
        var fields = [(name: "registrationID", value: registrationID)]
        if let emailAddress { fields.append(("email", emailAddress)) }
        if let displayName { fields.append(("displayName", displayName)) }
        return .json(FinishBody(fields: fields, credential: .registration(credential), encoding: encoding))
    }

    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }
}

// MARK: - Signing in with a passkey

/// `POST /v1/passkeys/authentications`: starts a discoverable sign-in (no account named).
public struct PasskeyAuthenticationStartOperation: PasskeyAPIOperation {
    public typealias Response = PasskeyAuthenticationStart
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/authentications", operationID: "beginAuthentication", retryable: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}

    public var body: APIRequestBody { .json([String: String]()) }
}

/// `POST /v1/passkeys/authentications/finish`: verifies the assertion and signs in; the client keeps the
/// session's token. 401 `invalid_credentials` (with a reason when a WebAuthn check failed), 410
/// `challenge_unavailable`, 429 `rate_limited`.
public struct PasskeyAuthenticationFinishOperation: PasskeyAPIOperation {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/passkeys/authentications/finish", operationID: "finishAuthentication")
    public var route: APIRoute { Self.route }

    /// The start response's `challengeID`.
    public var challengeID: String
    /// The assertion.
    public var assertion: PasskeyAssertion
    /// How the body carries it.
    public var encoding: CredentialEncoding

    /// Creates the operation.
    public init(challengeID: String, assertion: PasskeyAssertion, encoding: CredentialEncoding = .flat) {
        self.challengeID = challengeID
        self.assertion = assertion
        self.encoding = encoding
    }

    /// Creates the operation from the assertion's values, in the talk's shape.
    public init(
        challengeID: String, credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data,
        userHandle: Data?
    ) {
        self.init(
            challengeID: challengeID,
            assertion: PasskeyAssertion(
                credentialID: credentialID, clientDataJSON: clientDataJSON, authenticatorData: authenticatorData,
                signature: signature, userHandle: userHandle))
    }

    public var body: APIRequestBody {
        .json(FinishBody(fields: [("challengeID", challengeID)], credential: .assertion(assertion), encoding: encoding))
    }

    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }
}

// MARK: - The signed-in account

/// `GET /v1/session` (bearer): the current session.
public struct CurrentSessionOperation: PasskeyAPIOperation {
    public typealias Response = CurrentSession
    /// The route.
    public static let route = APIRoute(.get, "/v1/session", operationID: "currentSession", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `POST /v1/session/refresh`: trades the refresh token for a new access token and the next refresh token; the
/// client keeps them. A refresh token is single-use: a repeat of the same one within the gateway's reuse window (10
/// s by default) gets the same successor, and one presented after that ends the whole session. 401
/// `unauthenticated` with reason `refresh_token_reused`, `refresh_token_invalid` or `session_ended`: the session is
/// over. ``PasskeyAPIClient`` sends this by itself before the access token expires
/// (``PasskeyAPIClient/refreshSession()`` does it on demand); an app rarely sends it. Not retried: a repeat after the
/// reuse window would end the session.
public struct SessionRefreshOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(.post, "/v1/session/refresh", operationID: "refreshSession")
    public var route: APIRoute { Self.route }

    /// The refresh token (never logged).
    public var refreshToken: String

    /// Creates the operation.
    public init(refreshToken: String) { self.refreshToken = refreshToken }

    public var body: APIRequestBody { .json(["refreshToken": refreshToken]) }
    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }

    public var description: String { "SessionRefreshOperation()" }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// `DELETE /v1/session` (bearer): signs out; the token stops working at once and the client forgets it.
public struct SignOutOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(.delete, "/v1/session", operationID: "signOut", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}

    public func accessTokenChange(for response: NoContent) -> AccessTokenChange? { .remove }
}

/// `GET /v1/sessions` (bearer): the account's live sessions.
public struct SessionListOperation: PasskeyAPIOperation {
    public typealias Response = SessionList
    /// The route.
    public static let route = APIRoute(.get, "/v1/sessions", operationID: "listSessions", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `DELETE /v1/sessions/{sessionID}` (bearer): revokes one of the account's sessions (204); another account's is
/// 404 `not_found`.
public struct SessionRevocationOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .delete, "/v1/sessions/{sessionID}", operationID: "revokeSession", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The session to revoke.
    public var sessionID: String

    /// Creates the operation.
    public init(sessionID: String) { self.sessionID = sessionID }

    public var pathParameters: [String: String] { ["sessionID": sessionID] }
}

/// `GET /v1/account` (bearer): the signed-in account.
public struct AccountOperation: PasskeyAPIOperation {
    public typealias Response = Account
    /// The route.
    public static let route = APIRoute(.get, "/v1/account", operationID: "account", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `PATCH /v1/account` (bearer): changes the display name; answers with the account. 400 `invalid_request` for a
/// name that is empty after trimming, over 128 characters or has control characters.
public struct AccountRenameOperation: PasskeyAPIOperation {
    public typealias Response = Account
    /// The route.
    public static let route = APIRoute(.patch, "/v1/account", operationID: "renameAccount", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The new display name.
    public var displayName: String

    /// Creates the operation.
    public init(displayName: String) { self.displayName = displayName }

    public var body: APIRequestBody { .json(["displayName": displayName]) }
}

/// `GET /v1/passkeys` (bearer): the account's passkeys.
public struct PasskeyListOperation: PasskeyAPIOperation {
    public typealias Response = PasskeyList
    /// The route.
    public static let route = APIRoute(.get, "/v1/passkeys", operationID: "listPasskeys", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `PATCH /v1/passkeys/{credentialID}` (bearer): renames a passkey; answers with the passkey. 404 `not_found` for
/// another account's.
public struct PasskeyRenameOperation: PasskeyAPIOperation {
    public typealias Response = Passkey
    /// The route.
    public static let route = APIRoute(
        .patch, "/v1/passkeys/{credentialID}", operationID: "renamePasskey", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The passkey.
    public var credentialID: Data
    /// The new name.
    public var name: String

    /// Creates the operation.
    public init(credentialID: Data, name: String) {
        self.credentialID = credentialID
        self.name = name
    }

    public var pathParameters: [String: String] { ["credentialID": Base64URLCodec.encode(credentialID)] }
    public var body: APIRequestBody { .json(["name": name]) }
}

/// `GET /v1/passkey-providers/{aaguid}/icons/{variant}`: a passkey provider's icon (``Passkey/providerIconLight``,
/// ``Passkey/providerIconDark``). 404 `not_found` for an unlisted provider or a missing icon.
public struct PasskeyProviderIconOperation: PasskeyAPIOperation {
    public typealias Response = ImageDocument
    /// The route.
    public static let route = APIRoute(
        .get, "/v1/passkey-providers/{aaguid}/icons/{variant}", operationID: "passkeyProviderIcon")
    public var route: APIRoute { Self.route }

    /// Which background an icon is drawn for.
    public enum Variant: String, Sendable {
        case light, dark
    }

    /// The passkey's AAGUID, as ``Passkey/aaguid`` gives it.
    public var aaguid: String
    /// The icon wanted.
    public var variant: Variant

    /// Creates the operation.
    public init(aaguid: String, variant: Variant) {
        self.aaguid = aaguid
        self.variant = variant
    }

    public var pathParameters: [String: String] { ["aaguid": aaguid, "variant": variant.rawValue] }
}

/// `DELETE /v1/passkeys/{credentialID}` (bearer): removes a passkey (204). 409 `last_sign_in_method` when it is
/// the account's only way to sign in.
public struct PasskeyRemovalOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .delete, "/v1/passkeys/{credentialID}", operationID: "removePasskey", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The passkey.
    public var credentialID: Data

    /// Creates the operation.
    public init(credentialID: Data) { self.credentialID = credentialID }

    public var pathParameters: [String: String] { ["credentialID": Base64URLCodec.encode(credentialID)] }
}

/// `DELETE /v1/account/password` (bearer): removes the account's password (204), so it signs in with passkeys only.
/// 409 `last_sign_in_method` with reason `no_passkey` or `passkey_sign_in_required` until it has a passkey and has
/// signed in with one; 404 `not_found` when it has no password.
public struct PasswordRemovalOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .delete, "/v1/account/password", operationID: "removePassword", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `POST /v1/account/password` (bearer, recent sign-in): sets or changes the account's password (200); every other
/// session of the account ends. 400 `invalid_request` with reason `password_length`, or `weak_password` with reason `password_too_common`; 403
/// `reauthentication_required` for a session whose sign-in is too old.
public struct PasswordChangeOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = PasswordChanged
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/account/password", operationID: "setPassword", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The new password (never logged).
    public var password: String

    /// Creates the operation.
    public init(password: String) { self.password = password }

    public var body: APIRequestBody { .json(["password": password]) }
    public var description: String { "PasswordChangeOperation()" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// `POST /v1/session/reauthentication/password` (bearer): proves the account's password again; the session's
/// sign-in time becomes now (204) and its tokens stay. 401 `invalid_credentials` for a wrong password.
public struct PasswordReauthenticationOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/session/reauthentication/password", operationID: "reauthenticateWithPassword",
        requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The account's password (never logged).
    public var password: String

    /// Creates the operation.
    public init(password: String) { self.password = password }

    public var body: APIRequestBody { .json(["password": password]) }
    public var description: String { "PasswordReauthenticationOperation()" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

/// `POST /v1/session/reauthentication/passkey` (bearer): proves one of the account's passkeys again, answering a
/// challenge from ``PasskeyAuthenticationStartOperation``; the session's sign-in time becomes now (204) and its
/// tokens stay. 401 `invalid_credentials` as at sign-in, also for another account's passkey.
public struct PasskeyReauthenticationOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/session/reauthentication/passkey", operationID: "reauthenticateWithPasskey",
        requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The assertion, as a sign-in sends it.
    public var assertion: PasskeyAuthenticationFinishOperation

    /// Creates the operation.
    public init(challengeID: String, assertion: PasskeyAssertion, encoding: CredentialEncoding = .flat) {
        self.assertion = PasskeyAuthenticationFinishOperation(
            challengeID: challengeID, assertion: assertion, encoding: encoding)
    }

    public var body: APIRequestBody { assertion.body }
}

// MARK: - Files for the platforms, and operations

/// `GET /.well-known/apple-app-site-association`: the apps allowed to use the RP's passkeys.
public struct AppleAppSiteAssociationOperation: PasskeyAPIOperation {
    public typealias Response = AppleAppSiteAssociation
    /// The route.
    public static let route = APIRoute(
        .get, "/.well-known/apple-app-site-association", operationID: "appleAppSiteAssociation")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /.well-known/assetlinks.json`: the Android apps allowed to use the RP's passkeys.
public struct AssetLinksOperation: PasskeyAPIOperation {
    public typealias Response = [AssetLinkStatement]
    /// The route.
    public static let route = APIRoute(.get, "/.well-known/assetlinks.json", operationID: "assetLinks")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /.well-known/webauthn`: the related origins.
public struct RelatedOriginsOperation: PasskeyAPIOperation {
    public typealias Response = RelatedOrigins
    /// The route.
    public static let route = APIRoute(.get, "/.well-known/webauthn", operationID: "relatedOrigins")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /.well-known/passkey-endpoints`: where passkeys are created and managed (404 when no web origin is
/// configured).
public struct PasskeyEndpointsOperation: PasskeyAPIOperation {
    public typealias Response = PasskeyEndpoints
    /// The route.
    public static let route = APIRoute(.get, "/.well-known/passkey-endpoints", operationID: "passkeyEndpoints")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /.well-known/jwks.json`: the public keys access tokens are signed with, for a backend that verifies them
/// itself. A key is published before it signs and stays until the last token it signed has expired.
public struct JSONWebKeySetOperation: PasskeyAPIOperation {
    public typealias Response = JSONWebKeySet
    /// The route.
    public static let route = APIRoute(.get, "/.well-known/jwks.json", operationID: "jsonWebKeySet")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /.well-known/openid-configuration`: the access tokens' issuer and where its keys are.
public struct DiscoveryDocumentOperation: PasskeyAPIOperation {
    public typealias Response = DiscoveryDocument
    /// The route.
    public static let route = APIRoute(.get, "/.well-known/openid-configuration", operationID: "discoveryDocument")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /healthz`: the gateway process is alive.
public struct HealthOperation: PasskeyAPIOperation {
    public typealias Response = HealthStatus
    /// The route.
    public static let route = APIRoute(.get, "/healthz", operationID: "health")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /readyz`: whether every backend service answers. 503 is an answer too (``Readiness/status`` says
/// `unavailable`), so it is not retried.
public struct ReadinessOperation: PasskeyAPIOperation {
    public typealias Response = Readiness
    /// The route.
    public static let route = APIRoute(.get, "/readyz", operationID: "readiness")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}

    public func accepts(status: Int) -> Bool { status == 200 || status == 503 }
}

/// `GET /metrics`: Prometheus text.
public struct MetricsOperation: PasskeyAPIOperation {
    public typealias Response = TextDocument
    /// The route.
    public static let route = APIRoute(.get, "/metrics", operationID: "metrics")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `GET /openapi.json`: the OpenAPI 3.1 description of this API.
public struct OpenAPIDocumentOperation: PasskeyAPIOperation {
    public typealias Response = OpenAPIDescription
    /// The route.
    public static let route = APIRoute(.get, "/openapi.json", operationID: "openAPI")
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}
