import Foundation

// The gateway's response documents (docs/api.md, `openapi.json`). Members the contract requires are non-optional, so a
// response without one fails decoding with an error naming it; binary members are `Data` (base64url on the wire)
// and times are `Date` (RFC 3339).

/// How a session was created.
public struct AuthenticationMethod: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Password sign-in.
    public static let password = AuthenticationMethod(rawValue: "password")
    /// Passkey sign-in.
    public static let passkey = AuthenticationMethod(rawValue: "passkey")
    /// A recovery session: it may only register a new passkey (``RecoveryPasskeyRegistrationFinishOperation``).
    public static let recovery = AuthenticationMethod(rawValue: "recovery")
}

/// How the app will ask for a new passkey.
public struct RegistrationMode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// A sheet the user confirms (UP must be 1).
    public static let modal = RegistrationMode(rawValue: "modal")
    /// Automatic Passkey Upgrade: the credential manager may create it silently right after a password sign-in
    /// (UP may be 0). The gateway grants it only to a password session less than five minutes old.
    public static let conditional = RegistrationMode(rawValue: "conditional")
}

/// `Session`: what a sign-in (password, passkey, a new passkey account, a recovery's new passkey) and a refresh
/// return. Its description and mirror leave the tokens out.
public struct Session: Decodable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The bearer token, a JWT with signed access tokens; ``PasskeyAPIClient`` keeps it in its ``AccessTokenStore``.
    public let accessToken: String
    /// `Bearer`.
    public let tokenType: String
    /// When the access token expires, by the gateway's clock (the session's end for an opaque token).
    public let expiresAt: Date
    /// Seconds until the access token expires, as the gateway counted them when it answered.
    public let expiresIn: Int
    /// The single-use refresh token that gets the next access token (``SessionRefreshOperation``); nil for an
    /// opaque access token, and for a browser whose refresh token travels in a cookie.
    public let refreshToken: String?
    /// When the refresh token stops working unless used: the idle timeout, within the session's lifetime. Nil when
    /// the session has no refresh token.
    public let refreshTokenExpiresAt: Date?
    /// The session, as ``SessionSummary/sessionID`` names it.
    public let sessionID: String
    /// When the session ends, however often it is refreshed.
    public let sessionExpiresAt: Date
    /// The signed-in account.
    public let accountID: String
    /// The account's display name.
    public let displayName: String

    public var description: String {
        "Session(accountID: \(accountID), displayName: \(displayName), sessionID: \(sessionID), "
            + "expiresAt: \(expiresAt), refreshable: \(refreshToken != nil))"
    }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accountID": accountID, "displayName": displayName, "sessionID": sessionID, "expiresAt": expiresAt,
                "expiresIn": expiresIn, "refreshTokenExpiresAt": refreshTokenExpiresAt as Any,
                "sessionExpiresAt": sessionExpiresAt,
            ])
    }
}

/// `201 {accountID}` of `POST /v1/accounts/password`.
public struct AccountCreated: Decodable, Sendable, Equatable {
    /// The new account.
    public let accountID: String
}

/// A credential in `excludeCredentials` or `allowCredentials`.
public struct PublicKeyCredentialDescriptor: Decodable, Sendable, Equatable {
    /// `public-key`.
    public let type: String
    /// The credential ID.
    public let id: Data
    /// Transport hints.
    public let transports: [String]?
}

/// A standard PublicKeyCredentialCreationOptionsJSON, as browsers and Android's Credential Manager take it.
public struct PublicKeyCredentialCreationOptions: Decodable, Sendable, Equatable {
    /// `rp`.
    public struct RelyingParty: Decodable, Sendable, Equatable {
        /// The RP ID: the domain the app's associated domains must name.
        public let id: String
        /// The RP's name.
        public let name: String
    }

    /// `user`.
    public struct User: Decodable, Sendable, Equatable {
        /// The user handle.
        public let id: Data
        /// The user name shown by the credential manager.
        public let name: String
        /// The display name.
        public let displayName: String
    }

    /// One of `pubKeyCredParams`.
    public struct Parameters: Decodable, Sendable, Equatable {
        /// `public-key`.
        public let type: String
        /// The COSE algorithm: -7 ES256, -8 EdDSA, -257 RS256.
        public let alg: Int
    }

    /// `authenticatorSelection`.
    public struct AuthenticatorSelection: Decodable, Sendable, Equatable {
        /// `required`.
        public let residentKey: String?
        /// `true`.
        public let requireResidentKey: Bool?
        /// `preferred`.
        public let userVerification: String?
    }

    /// `extensions`.
    public struct Extensions: Decodable, Sendable, Equatable {
        /// Whether `credProps` is asked for.
        public let credProps: Bool?
    }

    /// The relying party.
    public let rp: RelyingParty
    /// The account.
    public let user: User
    /// The challenge.
    public let challenge: Data
    /// The algorithms the gateway accepts, preferred first.
    public let pubKeyCredParams: [Parameters]
    /// Milliseconds the ceremony may take.
    public let timeout: Int
    /// The account's passkeys, which the authenticator must not register again.
    public let excludeCredentials: [PublicKeyCredentialDescriptor]
    /// Resident key and user verification, as the server's policy sets them.
    public let authenticatorSelection: AuthenticatorSelection
    /// Attestation conveyance: `none` unless the server asks for more.
    public let attestation: String
    /// Hints for the client's UI (`security-key`, `client-device`, `hybrid`), in order; nil when none are given.
    public let hints: [String]?
    /// Requested extensions.
    public let extensions: Extensions?
}

/// A standard PublicKeyCredentialRequestOptionsJSON.
public struct PublicKeyCredentialRequestOptions: Decodable, Sendable, Equatable {
    /// The RP ID.
    public let rpId: String
    /// The challenge.
    public let challenge: Data
    /// Milliseconds the ceremony may take.
    public let timeout: Int
    /// Empty: sign-in is discoverable.
    public let allowCredentials: [PublicKeyCredentialDescriptor]
    /// `required`, `preferred` or `discouraged`, as the server's policy sets it.
    public let userVerification: String
    /// Hints for the client's UI, in order; nil when none are given.
    public let hints: [String]?
}

/// `200` of `POST /v1/passkeys/registrations`: flat fields for AuthenticationServices, and `publicKey` for
/// WebAuthn clients.
public struct PasskeyRegistrationStart: Decodable, Sendable, Equatable {
    /// Sent back with the finish.
    public let challengeID: String
    /// The RP ID.
    public let relyingPartyID: String
    /// The account's user handle, the same in every registration.
    public let userID: Data
    /// The user name for the credential manager.
    public let userName: String
    /// The display name.
    public let displayName: String
    /// The challenge.
    public let challenge: Data
    /// When the challenge expires.
    public let expiresAt: Date
    /// The mode the challenge was issued for.
    public let mode: RegistrationMode?
    /// `conditional` in conditional mode.
    public let mediation: String?
    /// The creation options.
    public let publicKey: PublicKeyCredentialCreationOptions

    /// The finish for the passkey the platform created from ``options``.
    public func finishOperation(
        with credential: PasskeyRegistrationCredential, encoding: CredentialEncoding = .flat
    ) -> PasskeyRegistrationFinishOperation {
        PasskeyRegistrationFinishOperation(challengeID: challengeID, credential: credential, encoding: encoding)
    }

    /// What the platform's registration request needs.
    public var options: PasskeyRegistrationOptions {
        PasskeyRegistrationOptions(
            relyingPartyID: relyingPartyID, challenge: challenge, userID: userID, userName: userName,
            displayName: displayName, mode: mode ?? (mediation == "conditional" ? .conditional : .modal),
            excludedCredentialIDs: publicKey.excludeCredentials.map(\.id),
            userVerification: publicKey.authenticatorSelection.userVerification ?? "preferred")
    }
}

/// `200` of `POST /v1/passkeys/account-registrations`. Nothing is written to accounts yet.
public struct PasskeyAccountCreationStart: Decodable, Sendable, Equatable {
    /// Sent back with the finish.
    public let registrationID: String
    /// The RP ID.
    public let relyingPartyID: String
    /// The new account's user handle.
    public let userID: Data
    /// The user name, when an email was given at start.
    public let userName: String?
    /// The display name, when given at start.
    public let displayName: String?
    /// The challenge.
    public let challenge: Data
    /// When the registration expires.
    public let expiresAt: Date
    /// The creation options.
    public let publicKey: PublicKeyCredentialCreationOptions

    /// The finish for what the platform returned from a request made from ``options``.
    public func finishOperation(with result: PasskeyAccountCreationResult, encoding: CredentialEncoding = .flat)
        -> PasskeyAccountCreationFinishOperation
    {
        PasskeyAccountCreationFinishOperation(
            registrationID: registrationID, emailAddress: result.emailAddress, displayName: result.displayName,
            credential: result.credential, encoding: encoding)
    }

    /// What the platform's account creation request needs.
    public var options: PasskeyAccountCreationOptions {
        var options = PasskeyAccountCreationOptions(
            relyingPartyID: relyingPartyID, challenge: challenge, userID: userID)
        options.userName = userName
        options.displayName = displayName
        return options
    }
}

/// `200` of `POST /v1/passkeys/authentications`.
public struct PasskeyAuthenticationStart: Decodable, Sendable, Equatable {
    /// Sent back with the finish.
    public let challengeID: String
    /// The RP ID.
    public let relyingPartyID: String
    /// The challenge.
    public let challenge: Data
    /// When the challenge expires.
    public let expiresAt: Date
    /// The request options.
    public let publicKey: PublicKeyCredentialRequestOptions

    /// The finish for the assertion the platform made from ``options``.
    public func finishOperation(with assertion: PasskeyAssertion, encoding: CredentialEncoding = .flat)
        -> PasskeyAuthenticationFinishOperation
    {
        PasskeyAuthenticationFinishOperation(challengeID: challengeID, assertion: assertion, encoding: encoding)
    }

    /// What the platform's assertion request needs.
    public var options: PasskeyAuthenticationOptions {
        var options = PasskeyAuthenticationOptions(relyingPartyID: relyingPartyID, challenge: challenge)
        options.userVerification = publicKey.userVerification
        return options
    }
}

/// `200` of `GET /v1/session`.
public struct CurrentSession: Decodable, Sendable, Equatable {
    /// The session.
    public let sessionID: String
    /// The account.
    public let accountID: String
    /// The account's display name.
    public let displayName: String
    /// How the session was created.
    public let authenticationMethod: AuthenticationMethod
    /// When it was created.
    public let createdAt: Date
    /// When it ends.
    public let expiresAt: Date
}

/// One of the account's live sessions.
public struct SessionSummary: Decodable, Sendable, Equatable {
    /// The session, for ``SessionRevocationOperation``.
    public let sessionID: String
    /// How it was created.
    public let authenticationMethod: AuthenticationMethod
    /// When it was created.
    public let createdAt: Date
    /// When it ends.
    public let expiresAt: Date
    /// Whether it is the session of the token that asked.
    public let current: Bool
}

/// `200` of `GET /v1/sessions`: live sessions only.
public struct SessionList: Decodable, Sendable, Equatable {
    /// The sessions.
    public let sessions: [SessionSummary]
}

/// `200` of `GET /v1/account`.
public struct Account: Decodable, Sendable, Equatable {
    /// The account.
    public let accountID: String
    /// Its display name.
    public let displayName: String
    /// Its email addresses.
    public let emails: [String]
    /// Whether it can sign in with a password.
    public let hasPassword: Bool
    /// How many passkeys it has.
    public let passkeyCount: Int
    /// Whether every email address of the account is verified (only a verified one can recover the account).
    public let emailVerified: Bool
    /// The verified addresses.
    public let verifiedEmails: [String]
    /// Recovery codes generated and not used yet.
    public let recoveryCodesRemaining: Int
    /// The WebAuthn user handle (`user.id`) of the account's passkeys: what the Signal API names the account by.
    public let userHandle: Data
    /// The WebAuthn `user.name` its passkeys were created with (the first email, else the display name).
    public let userName: String
}

/// `200 {codes}` of ``RecoveryCodesOperation``: ten single-use codes, shown this once.
public struct RecoveryCodes: Decodable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The codes, each `XXXX-XXXX-XXXX-XXXX`.
    public let codes: [String]

    public var description: String { "RecoveryCodes(count: \(codes.count))" }
    public var customMirror: Mirror { Mirror(self, children: ["count": codes.count]) }
}

/// `200` of ``PasswordChangeOperation``.
public struct PasswordChanged: Decodable, Sendable, Equatable {
    /// False when the account had no password before.
    public let replaced: Bool
    /// The account's other sessions the change ended.
    public let sessionsRevoked: Int
}

/// `200` of ``RecoveryFinishOperation``: a recovery session, which may only register a new passkey.
public struct RecoverySession: Decodable, Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// The recovery session's bearer token.
    public let accessToken: String
    /// `Bearer`.
    public let tokenType: String
    /// When the recovery session ends (minutes from now).
    public let expiresAt: Date
    /// The recovered account.
    public let accountID: String
    /// Its display name.
    public let displayName: String
    /// `recovery`.
    public let authenticationMethod: AuthenticationMethod

    public var description: String { "RecoverySession(accountID: \(accountID), expiresAt: \(expiresAt))" }
    public var customMirror: Mirror { Mirror(self, children: ["accountID": accountID, "expiresAt": expiresAt]) }
}

/// One of the account's passkeys.
public struct Passkey: Decodable, Sendable, Equatable {
    /// The credential ID, for ``PasskeyRenameOperation`` and ``PasskeyRemovalOperation``.
    public let credentialID: Data
    /// The name the user gave it (or the default).
    public let name: String
    /// The authenticator model.
    public let aaguid: String
    /// When it was registered.
    public let createdAt: Date
    /// When it last signed in; nil if never.
    public let lastUsedAt: Date?
    /// Whether it may be synced.
    public let backupEligible: Bool
    /// Whether it is synced.
    public let backedUp: Bool
    /// Transport hints.
    public let transports: [String]
    /// True once a sign-in was accepted although its signature counter did not increase: it may be cloned.
    public let cloneWarning: Bool
    /// The passkey provider its AAGUID names (e.g. "Google Password Manager"); nil when the list does not know it.
    public let providerName: String?
    /// The provider's icon for light backgrounds, a path on the gateway (``PasskeyProviderIconOperation``).
    public let providerIconLight: String?
    /// The provider's icon for dark backgrounds.
    public let providerIconDark: String?
}

/// `200` of `GET /v1/passkeys`.
public struct PasskeyList: Decodable, Sendable, Equatable {
    /// The RP ID the passkeys belong to.
    public let rpID: String
    /// The account's WebAuthn user handle.
    public let userHandle: Data
    /// The passkeys.
    public let passkeys: [Passkey]

    /// Every credential ID the account accepts: with ``rpID`` and ``userHandle``, what a platform's "all accepted
    /// credentials" signal (WebAuthn's `signalAllAcceptedCredentials`, or the platform's equivalent) takes after a
    /// sign-in or a removal.
    public var acceptedCredentialIDs: [Data] { passkeys.map(\.credentialID) }
}

/// `/.well-known/apple-app-site-association`.
public struct AppleAppSiteAssociation: Decodable, Sendable, Equatable {
    /// `webcredentials`.
    public struct WebCredentials: Decodable, Sendable, Equatable {
        /// `TEAMID.bundle.id` of each app that may use the RP's passkeys.
        public let apps: [String]?
    }

    /// The apps for passkeys and passwords.
    public let webcredentials: WebCredentials
}

/// One statement of `/.well-known/assetlinks.json`.
public struct AssetLinkStatement: Decodable, Sendable, Equatable {
    /// `target`.
    public struct Target: Decodable, Sendable, Equatable {
        /// `android_app`.
        public let namespace: String?
        /// The Android package.
        public let packageName: String?
        /// The signing certificates' SHA-256 fingerprints.
        public let sha256CertFingerprints: [String]?

        enum CodingKeys: String, CodingKey {
            case namespace
            case packageName = "package_name"
            case sha256CertFingerprints = "sha256_cert_fingerprints"
        }
    }

    /// `delegate_permission/common.get_login_creds`.
    public let relation: [String]?
    /// The app.
    public let target: Target?
}

/// `/.well-known/webauthn`: the related origins.
public struct RelatedOrigins: Decodable, Sendable, Equatable {
    /// The origins.
    public let origins: [String]?
}

/// `/.well-known/passkey-endpoints`.
public struct PasskeyEndpoints: Decodable, Sendable, Equatable {
    /// Where a passkey can be created.
    public let enroll: URL?
    /// Where passkeys are managed.
    public let manage: URL?
}

/// `/.well-known/jwks.json`: the public keys the gateway's access tokens are signed with (RFC 7517), for a backend
/// that verifies them itself.
public struct JSONWebKeySet: Decodable, Sendable, Equatable {
    /// One public key.
    public struct Key: Decodable, Sendable, Equatable {
        /// `EC` or `OKP`.
        public let kty: String
        /// The key's ID, as tokens name it in their `kid` header.
        public let kid: String
        /// `ES256` or `EdDSA`.
        public let alg: String
        /// `sig`.
        public let use: String
        /// `P-256` or `Ed25519`.
        public let crv: String
        /// The public key's x coordinate (or the Ed25519 key), base64url.
        public let x: String
        /// The y coordinate of a P-256 key, base64url.
        public let y: String?
    }

    /// The keys published now.
    public let keys: [Key]
}

/// `/.well-known/openid-configuration`: where a JWT consumer finds the issuer and its keys. It names no OAuth or
/// OpenID Connect flow, as the gateway serves none.
public struct DiscoveryDocument: Decodable, Sendable, Equatable {
    /// The access tokens' `iss`.
    public let issuer: String
    /// The URL of ``JSONWebKeySet``.
    public let jwksURI: String
    /// `public`.
    public let subjectTypesSupported: [String]?
    /// Empty: no OAuth flow is served.
    public let responseTypesSupported: [String]?
    /// Empty: no token endpoint is served.
    public let tokenEndpointAuthMethodsSupported: [String]?
    /// The algorithms access tokens may be signed with.
    public let accessTokenSigningAlgValuesSupported: [String]?

    enum CodingKeys: String, CodingKey {
        case issuer
        case jwksURI = "jwks_uri"
        case subjectTypesSupported = "subject_types_supported"
        case responseTypesSupported = "response_types_supported"
        case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
        case accessTokenSigningAlgValuesSupported = "access_token_signing_alg_values_supported"
    }
}

/// `200` of `/healthz`.
public struct HealthStatus: Decodable, Sendable, Equatable {
    /// `ok`.
    public let status: String?
}

/// `/readyz`: 200 when every backend service answers, 503 otherwise; both decode.
public struct Readiness: Decodable, Sendable, Equatable {
    /// `ready` or `unavailable`.
    public let status: String
    /// Each service: `serving` or `unavailable`.
    public let services: [String: String]
}

/// The parts of `/openapi.json` a client reads: the version and each path's operations.
public struct OpenAPIDescription: Decodable, Sendable, Equatable {
    /// `info`.
    public struct Info: Decodable, Sendable, Equatable {
        /// The API's title.
        public let title: String
        /// The API's version.
        public let version: String
    }

    /// One operation.
    public struct Operation: Decodable, Sendable, Equatable {
        /// The `operationId`.
        public let operationId: String
        /// The summary.
        public let summary: String?
    }

    /// The operations of one path, by lowercase method.
    public struct PathItem: Decodable, Sendable, Equatable {
        /// Each method's operation.
        public let operations: [String: Operation]

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Method.self)
            var operations: [String: Operation] = [:]
            for method in Method.allCases {
                if let operation = try container.decodeIfPresent(Operation.self, forKey: method) {
                    operations[method.rawValue] = operation
                }
            }
            self.operations = operations
        }

        enum Method: String, CodingKey, CaseIterable {
            case get, put, post, delete, patch, head, options
        }
    }

    /// `3.1.0`.
    public let openapi: String
    /// The title and version.
    public let info: Info
    /// The paths.
    public let paths: [String: PathItem]

    /// Every operation as `METHOD path`.
    public var routes: Set<String> {
        Set(paths.flatMap { path, item in item.operations.keys.map { "\($0.uppercased()) \(path)" } })
    }
}
