import Domain
import Encoding
import JSON
import ServiceContracts
import WebAuthn

/// The JSON documents the gateway answers with, built from service responses. Pure functions of their inputs.
public enum ResponseDocuments {
    /// RFC 3339 UTC in whole seconds for Unix milliseconds, e.g. `2026-11-29T18:30:00Z` (truncated). Whole seconds,
    /// because common app parsers (Foundation's `ISO8601DateFormatter` and `JSONDecoder`'s `.iso8601`) refuse a
    /// fraction.
    public static func timestamp(unixMilliseconds: Int64) -> String {
        TimestampText.string(unixMicroseconds: unixMilliseconds * 1000, fractionDigits: 0)
    }

    private static func credentialParameters(_ options: CeremonyOptions) -> JSONValue {
        .array(options.algorithms.map { ["type": "public-key", "alg": .integer($0)] })
    }

    private static func authenticatorSelection(_ options: CeremonyOptions, _ mediation: RegistrationMediation)
        -> JSONValue
    {
        [
            "residentKey": .string(options.residentKey.rawValue),
            "requireResidentKey": .boolean(options.residentKey == .required),
            "userVerification": .string(options.registrationUserVerification(for: mediation).rawValue),
        ]
    }

    /// The creation options' members the configured policy decides: what verification-service enforces for a
    /// registration of `mediation`.
    private static func creationPolicy(
        _ options: CeremonyOptions, mediation: RegistrationMediation = .modal, into object: inout JSONObject
    ) {
        object["pubKeyCredParams"] = credentialParameters(options)
        object["authenticatorSelection"] = authenticatorSelection(options, mediation)
        object["attestation"] = .string(options.attestation.rawValue)
        if !options.hints.isEmpty { object["hints"] = .array(options.hints.map { .string($0.rawValue) }) }
    }

    /// The PublicKeyCredentialCreationOptionsJSON for adding a passkey to an account.
    public static func creationOptions(_ response: BeginRegistrationResponse, options: CeremonyOptions) -> JSONValue {
        let excluded: [JSONValue] = response.excludeCredentials.map { descriptor in
            var object: JSONObject = ["type": "public-key", "id": .string(Base64URL.encode(descriptor.id))]
            if !descriptor.transports.isEmpty {
                object["transports"] = .array(descriptor.transports.map { .string($0) })
            }
            return .object(object)
        }
        var object: JSONObject = [
            "rp": ["id": .string(response.relyingPartyID), "name": .string(response.relyingPartyName)],
            "user": [
                "id": .string(Base64URL.encode(response.userHandle)), "name": .string(response.userName),
                "displayName": .string(response.userDisplayName),
            ],
            "challenge": .string(Base64URL.encode(response.challenge)),
            "timeout": .integer(response.timeoutMilliseconds),
            "excludeCredentials": .array(excluded),
            "extensions": ["credProps": true],
        ]
        creationPolicy(options, mediation: response.mode == .conditional ? .conditional : .modal, into: &object)
        return .object(object)
    }

    /// `200` of `POST /v1/passkeys/registrations`: flat fields, `publicKey`, and `mediation` in conditional mode.
    public static func registrationStart(_ response: BeginRegistrationResponse, options: CeremonyOptions) -> JSONValue {
        var object: JSONObject = [
            "challengeID": .string(response.challengeID),
            "relyingPartyID": .string(response.relyingPartyID),
            "userID": .string(Base64URL.encode(response.userHandle)),
            "userName": .string(response.userName),
            "displayName": .string(response.userDisplayName),
            "challenge": .string(Base64URL.encode(response.challenge)),
            "expiresAt": .string(timestamp(unixMilliseconds: response.expiresAtUnixMilliseconds)),
            "mode": .string((response.mode ?? .modal).rawValue),
            "publicKey": creationOptions(response, options: options),
        ]
        if response.mode == .conditional { object["mediation"] = "conditional" }
        return .object(object)
    }

    /// `200` of `POST /v1/passkeys/account-registrations`.
    public static func accountRegistrationStart(
        _ response: BeginAccountRegistrationResponse, options: CeremonyOptions
    ) -> JSONValue {
        var publicKey: JSONObject = [
            "rp": ["id": .string(response.relyingPartyID), "name": .string(response.relyingPartyName)],
            "user": [
                "id": .string(Base64URL.encode(response.userHandle)), "name": .string(response.userName),
                "displayName": .string(response.userDisplayName),
            ],
            "challenge": .string(Base64URL.encode(response.challenge)),
            "timeout": .integer(response.timeoutMilliseconds),
            "excludeCredentials": [],
            "extensions": ["credProps": true],
        ]
        creationPolicy(options, into: &publicKey)
        return [
            "registrationID": .string(response.registrationID),
            "relyingPartyID": .string(response.relyingPartyID),
            "userID": .string(Base64URL.encode(response.userHandle)),
            "userName": .string(response.userName),
            "displayName": .string(response.userDisplayName),
            "challenge": .string(Base64URL.encode(response.challenge)),
            "expiresAt": .string(timestamp(unixMilliseconds: response.expiresAtUnixMilliseconds)),
            "publicKey": .object(publicKey),
        ]
    }

    /// `200` of `POST /v1/passkeys/authentications`, with a PublicKeyCredentialRequestOptionsJSON.
    public static func authenticationStart(_ response: BeginAuthenticationResponse, options: CeremonyOptions)
        -> JSONValue
    {
        let challenge = JSONValue.string(Base64URL.encode(response.challenge))
        var publicKey: JSONObject = [
            "rpId": .string(response.relyingPartyID),
            "challenge": challenge,
            "timeout": .integer(response.timeoutMilliseconds),
            "allowCredentials": [],
            "userVerification": .string(options.authenticationUserVerification.rawValue),
        ]
        if !options.hints.isEmpty { publicKey["hints"] = .array(options.hints.map { .string($0.rawValue) }) }
        return [
            "challengeID": .string(response.challengeID),
            "relyingPartyID": .string(response.relyingPartyID),
            "challenge": challenge,
            "expiresAt": .string(timestamp(unixMilliseconds: response.expiresAtUnixMilliseconds)),
            "publicKey": .object(publicKey),
        ]
    }

    /// `Session`: `{accessToken, tokenType, expiresAt, expiresIn, refreshToken?, refreshTokenExpiresAt?,
    /// sessionID, sessionExpiresAt, accountID, displayName}`. `expiresAt` is when the access token expires (the
    /// session's end for an opaque token); the refresh members are there for a session with signed access tokens,
    /// unless the refresh token travels in a cookie. `now` (Unix milliseconds) is what `expiresIn` counts from.
    public static func session(
        _ issued: IssuedSession, includingRefreshToken: Bool = true, now: Int64 = unixMillisecondsNow()
    ) -> JSONValue {
        let accessExpiry =
            issued.accessTokenExpiresAtUnixMilliseconds > 0
            ? issued.accessTokenExpiresAtUnixMilliseconds : issued.expiresAtUnixMilliseconds
        var members: [(String, JSONValue)] = [
            ("accessToken", .string(issued.accessToken)),
            ("tokenType", "Bearer"),
            ("expiresAt", .string(timestamp(unixMilliseconds: accessExpiry))),
            ("expiresIn", .integer(max(0, (accessExpiry - now) / 1000))),
        ]
        if !issued.refreshToken.isEmpty {
            if includingRefreshToken { members.append(("refreshToken", .string(issued.refreshToken))) }
            members.append(
                (
                    "refreshTokenExpiresAt",
                    .string(timestamp(unixMilliseconds: issued.refreshTokenExpiresAtUnixMilliseconds))
                ))
        }
        members += [
            ("sessionID", .string(issued.sessionID)),
            ("sessionExpiresAt", .string(timestamp(unixMilliseconds: issued.expiresAtUnixMilliseconds))),
            ("accountID", .string(issued.accountID)),
            ("displayName", .string(issued.displayName)),
        ]
        return .object(JSONObject(members))
    }

    /// `200` of `GET /v1/session`.
    public static func currentSession(_ info: SessionInfo) -> JSONValue {
        [
            "sessionID": .string(info.sessionID),
            "accountID": .string(info.accountID),
            "displayName": .string(info.displayName),
            "authenticationMethod": .string(info.authenticationMethod?.rawValue ?? "unknown"),
            "createdAt": .string(timestamp(unixMilliseconds: info.createdAtUnixMilliseconds)),
            "expiresAt": .string(timestamp(unixMilliseconds: info.expiresAtUnixMilliseconds)),
        ]
    }

    /// `200` of `GET /v1/sessions`.
    public static func sessions(_ list: ListSessionsResponse) -> JSONValue {
        [
            "sessions": .array(
                list.sessions.map { session in
                    [
                        "sessionID": .string(session.sessionID),
                        "authenticationMethod": .string(session.authenticationMethod?.rawValue ?? "unknown"),
                        "createdAt": .string(timestamp(unixMilliseconds: session.createdAtUnixMilliseconds)),
                        "expiresAt": .string(timestamp(unixMilliseconds: session.expiresAtUnixMilliseconds)),
                        "current": .boolean(session.current),
                    ]
                })
        ]
    }

    /// `200` of `GET /v1/account`.
    public static func account(_ summary: ServiceContracts.AccountSummary) -> JSONValue {
        [
            "accountID": .string(summary.accountID),
            "displayName": .string(summary.displayName),
            "emails": .array(summary.emails.map { .string($0) }),
            "hasPassword": .boolean(summary.hasPassword),
            "passkeyCount": .integer(summary.passkeyCount),
            "emailVerified": .boolean(
                !summary.emails.isEmpty && summary.emails.allSatisfy(summary.verifiedEmails.contains)),
            "verifiedEmails": .array(summary.verifiedEmails.map { .string($0) }),
            "recoveryCodesRemaining": .integer(summary.recoveryCodesRemaining),
            "userHandle": .string(Base64URL.encode(summary.userHandle)),
            "userName": .string(summary.userName),
        ]
    }

    /// One passkey of `GET /v1/passkeys`; `lastUsedAt` is null when it was never used. `provider` adds the
    /// provider's fields for the passkey's AAGUID (`providerName`, `providerIconLight`, `providerIconDark`).
    public static func passkey(
        _ info: PasskeyCredentialInfo, provider: (String) -> [(String, JSONValue)] = noProvider
    ) -> JSONValue {
        var object: JSONObject = [
            "credentialID": .string(Base64URL.encode(info.credentialID)),
            "name": .string(info.name),
            "aaguid": .string(info.aaguid),
            "createdAt": .string(timestamp(unixMilliseconds: info.createdAtUnixMilliseconds)),
            "lastUsedAt": info.lastUsedAtUnixMilliseconds == 0
                ? .null : .string(timestamp(unixMilliseconds: info.lastUsedAtUnixMilliseconds)),
            "backupEligible": .boolean(info.backupEligible),
            "backedUp": .boolean(info.backedUp),
            "transports": .array(info.transports.map { .string($0) }),
            "cloneWarning": .boolean(info.cloneWarning),
        ]
        for (key, value) in provider(info.aaguid) { object[key] = value }
        return .object(object)
    }

    /// The provider fields of a passkey whose AAGUID names no provider.
    public static func noProvider(_ aaguid: String) -> [(String, JSONValue)] {
        [("providerName", .null), ("providerIconLight", .null), ("providerIconDark", .null)]
    }

    /// `200` of `GET /v1/passkeys`: the passkeys, and the RP ID and user handle that WebAuthn's Signal API
    /// names the account by (`signalAllAcceptedCredentials` takes them with the passkeys' credential IDs).
    public static func passkeys(
        _ list: ListCredentialsResponse, relyingPartyID: String, userHandle: [UInt8],
        provider: (String) -> [(String, JSONValue)] = noProvider
    ) -> JSONValue {
        [
            "rpID": .string(relyingPartyID), "userHandle": .string(Base64URL.encode(userHandle)),
            "passkeys": .array(list.credentials.map { passkey($0, provider: provider) }),
        ]
    }
}
