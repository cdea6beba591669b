import Foundation

/// Every failure ``PasskeyAPIClient`` reports: the gateway's problem documents, error statuses without one, responses
/// that do not match the contract, and requests that got no answer. Compare ``code``; the other members say more
/// where they apply.
public struct PasskeyClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable code: the gateway's problem `code` (unknown ones are kept as sent), or one of the
    /// client's own (``unexpectedStatus``, ``malformedResponse``, ``networkFailure``, ``timedOut``, ``cancelled``,
    /// ``invalidArgument``, ``tokenStorageFailed``).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // The gateway's codes (docs/api.md).
        /// Malformed JSON, missing or mistyped fields, bad base64url (400).
        public static let invalidRequest = Code(rawValue: "invalid_request")
        /// A registration failed a WebAuthn check; ``PasskeyClientError/reason`` names it (400).
        public static let verificationFailed = Code(rawValue: "verification_failed")
        /// The access token is missing, unknown, expired or revoked, or a refresh was refused (401). The client
        /// refreshes a refused access token once; when that fails too, it forgets the tokens: the session is over.
        public static let unauthenticated = Code(rawValue: "unauthenticated")
        /// A password or passkey sign-in failed (401); with a reason when a WebAuthn check failed.
        public static let invalidCredentials = Code(rawValue: "invalid_credentials")
        /// The session may not do this, e.g. conditional registration without a fresh password sign-in (403).
        public static let forbidden = Code(rawValue: "forbidden")
        /// No such resource for this account (404).
        public static let notFound = Code(rawValue: "not_found")
        /// The email address belongs to an account already (409).
        public static let emailTaken = Code(rawValue: "email_taken")
        /// The passkey is registered already (409).
        public static let credentialAlreadyRegistered = Code(rawValue: "credential_already_registered")
        /// The passkey is the account's only way to sign in (409).
        public static let lastSignInMethod = Code(rawValue: "last_sign_in_method")
        /// The change conflicts with the resource's state (409), e.g. retiring the only signing key in the admin API.
        public static let conflict = Code(rawValue: "conflict")
        /// The challenge or registration is unknown, expired, used or another account's: start again (410).
        public static let challengeUnavailable = Code(rawValue: "challenge_unavailable")
        /// An email verification or recovery code is wrong, expired, used or was tried too often; the same for any
        /// address (400). Ask for a new code.
        // swift-format-ignore: DontRepeatTypeInStaticProperties
        // The gateway's code `invalid_code`, named as every other code is: after it.
        public static let invalidCode = Code(rawValue: "invalid_code")
        /// An operator disabled the account: sign-in is refused until it is enabled again (403). Told only after
        /// the password or the passkey was verified.
        public static let accountDisabled = Code(rawValue: "account_disabled")
        /// A sensitive change by a session whose sign-in is older than the gateway's reauthentication window (403):
        /// reauthenticate (``PasskeyReauthenticationOperation``, ``PasswordReauthenticationOperation``) and retry.
        public static let reauthenticationRequired = Code(rawValue: "reauthentication_required")
        /// A new password of an allowed length that is too easy to guess (400, reason `password_too_common`).
        public static let weakPassword = Code(rawValue: "weak_password")
        /// The body is over 64 KiB (413).
        public static let payloadTooLarge = Code(rawValue: "payload_too_large")
        /// The body is not JSON (415).
        public static let unsupportedMediaType = Code(rawValue: "unsupported_media_type")
        /// Too many attempts; ``PasskeyClientError/retryAfterSeconds`` says how long to wait (429).
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// A backend service cannot be reached (503).
        public static let unavailable = Code(rawValue: "unavailable")
        /// The path does not take this method (405).
        public static let methodNotAllowed = Code(rawValue: "method_not_allowed")
        /// The request head is too large (431).
        public static let headerFieldsTooLarge = Code(rawValue: "header_fields_too_large")
        /// The request did not reach the gateway in time (408).
        public static let requestTimeout = Code(rawValue: "request_timeout")
        /// An HTTP feature the gateway does not support (501, 505).
        public static let notImplemented = Code(rawValue: "not_implemented")
        /// The gateway failed in a way the client cannot fix (500).
        public static let internalError = Code(rawValue: "internal_error")

        // The client's own codes.
        /// An error status whose body is not a problem document (a proxy's 502, say); ``PasskeyClientError/status``
        /// has the status.
        public static let unexpectedStatus = Code(rawValue: "unexpected_status")
        /// A response that does not match the contract; ``PasskeyClientError/field`` names the member.
        public static let malformedResponse = Code(rawValue: "malformed_response")
        /// No response: the connection could not be made or was lost.
        public static let networkFailure = Code(rawValue: "network_failure")
        /// No response within ``PasskeyAPIClient/Configuration/timeout``.
        public static let timedOut = Code(rawValue: "timed_out")
        /// The calling task was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
        /// A value the app passed cannot be sent (an empty path parameter, a string that is not base64url).
        public static let invalidArgument = Code(rawValue: "invalid_argument")
        /// The ``AccessTokenStore`` failed to load, save or remove the token.
        public static let tokenStorageFailed = Code(rawValue: "token_storage_failed")

        /// The codes the gateway sends (the `code` enum of `openapi.json`'s `Problem`).
        public static let gatewayCodes: Set<Code> = [
            .invalidRequest, .verificationFailed, .unauthenticated, .invalidCredentials, .forbidden, .notFound,
            .emailTaken, .credentialAlreadyRegistered, .lastSignInMethod, .challengeUnavailable, .payloadTooLarge,
            .unsupportedMediaType, .rateLimited, .unavailable, .methodNotAllowed, .headerFieldsTooLarge,
            .requestTimeout, .notImplemented, .internalError, .invalidCode, .accountDisabled, .conflict,
            .reauthenticationRequired, .weakPassword,
        ]

        /// The codes the client produces itself, never sent by the gateway.
        public static let clientCodes: Set<Code> = [
            .unexpectedStatus, .malformedResponse, .networkFailure, .timedOut, .cancelled, .invalidArgument,
            .tokenStorageFailed,
        ]
    }

    /// Why the gateway refused, as it names it (docs/api.md): the WebAuthn check that failed, what is missing before a
    /// password can go, why a signed access token or a refresh was refused. Unknown values are kept as sent.
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The client data is not of the ceremony's type.
        public static let typeMismatch = Reason(rawValue: "type_mismatch")
        /// The client data carries another challenge.
        public static let challengeMismatch = Reason(rawValue: "challenge_mismatch")
        /// The client data's origin is not one the gateway allows: the app's associated domain or the Android
        /// signing-key origin is not configured in `PASSKEY_ORIGINS`.
        public static let originMismatch = Reason(rawValue: "origin_mismatch")
        /// The ceremony ran in a cross-origin frame.
        public static let crossOriginNotAllowed = Reason(rawValue: "cross_origin_not_allowed")
        /// The authenticator used another RP ID than the gateway's.
        public static let rpIDHashMismatch = Reason(rawValue: "rp_id_hash_mismatch")
        /// UP is 0 outside a conditional registration.
        public static let userPresentFlagNotSet = Reason(rawValue: "user_present_flag_not_set")
        /// UV was required and is 0.
        public static let userVerificationRequired = Reason(rawValue: "user_verification_required")
        /// BS is set without BE, or BE changed.
        public static let backupStateInvalid = Reason(rawValue: "backup_state_invalid")
        /// The key's algorithm is not one the gateway verifies.
        public static let unsupportedAlgorithm = Reason(rawValue: "unsupported_algorithm")
        /// The key's algorithm is not in `pubKeyCredParams`.
        public static let algorithmNotAllowed = Reason(rawValue: "algorithm_not_allowed")
        /// The credential ID is over 1023 bytes.
        public static let credentialIDTooLong = Reason(rawValue: "credential_id_too_long")
        /// The attestation statement does not verify.
        public static let attestationInvalid = Reason(rawValue: "attestation_invalid")
        /// The attestation chains to no trusted root.
        public static let attestationUntrusted = Reason(rawValue: "attestation_untrusted")
        /// The assertion's signature does not verify.
        public static let signatureInvalid = Reason(rawValue: "signature_invalid")
        /// The signature counter went backwards: a cloned authenticator, perhaps.
        public static let signCountRegressed = Reason(rawValue: "sign_count_regressed")
        /// The user handle is not the credential's account's.
        public static let userHandleMismatch = Reason(rawValue: "user_handle_mismatch")
        /// The attestation object is not valid CBOR.
        public static let malformedCBOR = Reason(rawValue: "malformed_cbor")
        /// The client data is not valid JSON of the right shape.
        public static let malformedClientData = Reason(rawValue: "malformed_client_data")
        /// The authenticator data is truncated or malformed.
        public static let malformedAuthenticatorData = Reason(rawValue: "malformed_authenticator_data")
        /// With `unavailable` on a sign-in finish: the sign-in was verified but could not be recorded, and its
        /// challenge is spent. Nothing was issued; start the sign-in again (a new challenge).
        public static let challengeSpent = Reason(rawValue: "challenge_spent")
        /// With `lastSignInMethod` on ``PasswordRemovalOperation``: the account has no passkey yet.
        public static let noPasskey = Reason(rawValue: "no_passkey")
        /// With `lastSignInMethod` on ``PasswordRemovalOperation``: none of the account's passkeys has signed in yet.
        public static let passkeySignInRequired = Reason(rawValue: "passkey_sign_in_required")
        /// With `invalidRequest` on a new password: not 8 to 256 characters.
        public static let passwordLength = Reason(rawValue: "password_length")
        /// With `weakPassword` on a new password: one of the common passwords the server refuses.
        public static let passwordTooCommon = Reason(rawValue: "password_too_common")
        /// With `invalid_credentials` on a sign-in finish: the credential ID is not registered (never sent for any
        /// other failure). The app may tell the platform to forget that passkey (WebAuthn's
        /// `signalUnknownCredential`, or the platform's equivalent).
        public static let unknownCredential = Reason(rawValue: "unknown_credential")

        // With `unauthenticated` on POST /v1/session/refresh: the session is over (the client signs out).
        /// A replaced refresh token was presented after the reuse window: taken as stolen, the session was ended.
        public static let refreshTokenReused = Reason(rawValue: "refresh_token_reused")
        /// No refresh token was sent, or it is not one of a live session.
        public static let refreshTokenInvalid = Reason(rawValue: "refresh_token_invalid")
        /// The session was revoked, is past its lifetime or idle timeout, or its account was disabled.
        public static let sessionEnded = Reason(rawValue: "session_ended")

        // With `unauthenticated` on a bearer route: why a signed access token was refused (the client refreshes it
        // once). `algorithm_not_allowed` and `signature_invalid` are sent for access tokens too.
        /// The access token is not a JWT of the expected shape.
        public static let malformed = Reason(rawValue: "malformed")
        /// The access token's `typ` is not `at+jwt`.
        public static let wrongType = Reason(rawValue: "wrong_type")
        /// No published key has the access token's `kid`.
        public static let unknownKey = Reason(rawValue: "unknown_key")
        /// The access token has expired.
        public static let expired = Reason(rawValue: "expired")
        /// The access token is not valid yet.
        public static let notYetValid = Reason(rawValue: "not_yet_valid")
        /// The access token's `iss` is not the gateway's issuer.
        public static let wrongIssuer = Reason(rawValue: "wrong_issuer")
        /// The access token's `aud` is not the gateway's audience.
        public static let wrongAudience = Reason(rawValue: "wrong_audience")
        /// The access token lacks a claim the gateway requires.
        public static let missingClaim = Reason(rawValue: "missing_claim")

        /// The reasons docs/api.md names.
        public static let known: Set<Reason> = [
            .typeMismatch, .challengeMismatch, .originMismatch, .crossOriginNotAllowed, .rpIDHashMismatch,
            .userPresentFlagNotSet, .userVerificationRequired, .backupStateInvalid, .unsupportedAlgorithm,
            .algorithmNotAllowed, .credentialIDTooLong, .attestationInvalid, .attestationUntrusted, .signatureInvalid,
            .signCountRegressed, .userHandleMismatch, .malformedCBOR, .malformedClientData, .malformedAuthenticatorData,
            .challengeSpent, .noPasskey, .passkeySignInRequired, .unknownCredential, .refreshTokenReused,
            .refreshTokenInvalid, .sessionEnded, .malformed, .wrongType, .unknownKey, .expired, .notYetValid,
            .wrongIssuer, .wrongAudience, .missingClaim, .passwordLength, .passwordTooCommon,
        ]
    }

    /// Whether a sign-in failed because its credential ID is not registered: `invalid_credentials` with reason
    /// `unknown_credential`, and nothing else.
    public var isUnknownCredential: Bool { code == .invalidCredentials && reason == .unknownCredential }

    /// What went wrong.
    public var code: Code
    /// The HTTP status, when a response arrived.
    public var status: Int?
    /// The WebAuthn check that failed, when the gateway named one.
    public var reason: Reason?
    /// A human-readable explanation: the problem's `detail`, or the client's own. Safe to log; show it to users only
    /// if nothing better is at hand.
    public var detail: String?
    /// For ``Code/malformedResponse``: the member that did not match, as a path such as `publicKey.challenge` or
    /// `sessions[1].expiresAt` (empty for the body as a whole).
    public var field: String?
    /// The problem document's `type` URI; nil unless the response was `application/problem+json`.
    public var problemType: String?
    /// Seconds from `Retry-After`, when the response had one (rate limits).
    public var retryAfterSeconds: Int?
    /// The gateway's `X-Request-ID` for this request, to quote to support.
    public var requestID: String?
    /// The response's header fields with lowercased names, when a response arrived.
    public var headers: [String: String]
    /// The operation that failed, as `METHOD pattern` (e.g. `POST /v1/passkeys/authentications/finish`).
    public var operation: String?

    /// Creates an error.
    public init(
        code: Code, status: Int? = nil, reason: Reason? = nil, detail: String? = nil, field: String? = nil,
        problemType: String? = nil, retryAfterSeconds: Int? = nil, requestID: String? = nil,
        headers: [String: String] = [:], operation: String? = nil
    ) {
        self.code = code
        self.status = status
        self.reason = reason
        self.detail = detail
        self.field = field
        self.problemType = problemType
        self.retryAfterSeconds = retryAfterSeconds
        self.requestID = requestID
        self.headers = headers
        self.operation = operation
    }

    /// Whether the gateway answered with a problem document (as opposed to a failure the client saw by itself).
    public var isProblem: Bool { problemType != nil }

    /// Whether trying the same request again later may succeed: the gateway or a proxy was unavailable, or no
    /// response came. The client retries only start routes and GETs on these.
    public var isTransient: Bool {
        switch code {
        case .networkFailure, .timedOut, .unavailable: return true
        default: return [502, 503, 504].contains(status ?? 0)
        }
    }

    public var description: String {
        var text = "PasskeyClientError(\(code)"
        if let status { text += ", status \(status)" }
        if let reason { text += ", reason \(reason)" }
        if let field { text += ", field \(field.isEmpty ? "(body)" : field)" }
        if let operation { text += ", \(operation)" }
        if let detail { text += ": \(detail)" }
        return text + ")"
    }
}

extension PasskeyClientError {
    /// The error for a response whose status the operation does not accept: its problem document when the body is
    /// `application/problem+json` with a `code`, otherwise ``Code/unexpectedStatus`` with the status.
    init(response: PasskeyHTTPResponse, operation: String) {
        let problem =
            MediaType.isProblemJSON(response.contentType)
            ? try? JSONCoding.decoder().decode(ProblemDocument.self, from: response.body) : nil
        self.init(
            code: problem.map { Code(rawValue: $0.code) } ?? .unexpectedStatus, status: response.status,
            reason: problem?.reason.map(Reason.init(rawValue:)),
            detail: problem?.detail ?? (problem == nil ? "HTTP \(response.status) without a problem document." : nil),
            problemType: problem.map { $0.type ?? "about:blank" },
            retryAfterSeconds: response.headers["retry-after"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) },
            requestID: response.headers["x-request-id"], headers: response.headers, operation: operation)
    }

    /// The error for a response body that does not match the contract.
    static func malformed(_ error: any Error, response: PasskeyHTTPResponse, operation: String) -> PasskeyClientError {
        let (field, detail) = JSONCoding.describe(error)
        return PasskeyClientError(
            code: .malformedResponse, status: response.status, detail: detail, field: field,
            requestID: response.headers["x-request-id"], headers: response.headers, operation: operation)
    }
}

/// `application/problem+json`: `{type, title, status, code, reason?, detail?}`.
struct ProblemDocument: Decodable, Equatable {
    let type: String?
    let title: String?
    let status: Int?
    let code: String
    let reason: String?
    let detail: String?
}
