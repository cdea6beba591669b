import Foundation

// MARK: - Verifying the account's email and recovery codes

/// `POST /v1/account/email/verification` (bearer): sends a new verification code to the account's email (202;
/// nothing when it is verified already). 429 `rate_limited`.
public struct EmailVerificationRequestOperation: PasskeyAPIOperation {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/account/email/verification", operationID: "requestEmailVerification", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

/// `POST /v1/account/email/verify` (bearer): confirms the account's email with the eight-digit code from the
/// message (204). 400 `invalid_code` when it is wrong, expired, used or was tried five times.
public struct EmailVerificationOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/account/email/verify", operationID: "verifyEmail", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The code from the message.
    public var code: String

    /// Creates the operation.
    public init(code: String) { self.code = code }

    public var body: APIRequestBody { .json(["code": code]) }
    public var description: String { "EmailVerificationOperation()" }
    public var customMirror: Mirror { Mirror(self, children: []) }
}

/// `POST /v1/account/recovery-codes` (bearer): ten new single-use recovery codes, shown once; the earlier ones stop
/// working.
public struct RecoveryCodesOperation: PasskeyAPIOperation {
    public typealias Response = RecoveryCodes
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/account/recovery-codes", operationID: "generateRecoveryCodes", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// Creates the operation.
    public init() {}
}

// MARK: - Recovering an account

/// `POST /v1/recovery`: sends a recovery code to the address if it is an account's verified email (202 either way:
/// the answer never tells whether an account has the address). 429 `rate_limited`.
public struct RecoveryStartOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = NoContent
    /// The route.
    public static let route = APIRoute(.post, "/v1/recovery", operationID: "startRecovery")
    public var route: APIRoute { Self.route }

    /// The email address as typed.
    public var email: String

    /// Creates the operation.
    public init(email: String) { self.email = email }

    public var body: APIRequestBody { .json(["email": email]) }
    public var description: String { "RecoveryStartOperation(email: \(email))" }
    public var customMirror: Mirror { Mirror(self, children: ["email": email]) }
}

/// `POST /v1/recovery/finish`: trades the emailed code, or one of the account's recovery codes, for a recovery
/// session, which the client keeps. 400 `invalid_code` for any code that does not work, for any address.
public struct RecoveryFinishOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = RecoverySession
    /// The route.
    public static let route = APIRoute(.post, "/v1/recovery/finish", operationID: "finishRecovery")
    public var route: APIRoute { Self.route }

    /// What proves the recovery.
    public enum Proof: Sendable, Equatable {
        /// The eight digits of the recovery message.
        case emailCode(String)
        /// One of the account's recovery codes.
        case recoveryCode(String)
    }

    /// The email address as typed.
    public var email: String
    public var proof: Proof

    /// Creates the operation.
    public init(email: String, proof: Proof) {
        self.email = email
        self.proof = proof
    }

    public var body: APIRequestBody {
        switch proof {
        case .emailCode(let code): .json(["email": email, "code": code])
        case .recoveryCode(let code): .json(["email": email, "recoveryCode": code])
        }
    }

    public func accessTokenChange(for response: RecoverySession) -> AccessTokenChange? {
        .store(AccessToken(value: response.accessToken, expiresAt: response.expiresAt, accountID: response.accountID))
    }

    public var description: String { "RecoveryFinishOperation(email: \(email))" }
    public var customMirror: Mirror { Mirror(self, children: ["email": email]) }
}

/// `POST /v1/recovery/passkeys/finish` (the recovery session's bearer): registers the new passkey started with
/// ``PasskeyRegistrationStartOperation``; the recovery session ends and the answer is a normal session, which the
/// client keeps. The body is the one of ``PasskeyRegistrationFinishOperation``.
public struct RecoveryPasskeyRegistrationFinishOperation: PasskeyAPIOperation {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/recovery/passkeys/finish", operationID: "finishRecoveryRegistration", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The registration, as for adding a passkey.
    public var registration: PasskeyRegistrationFinishOperation

    /// Creates the operation.
    public init(challengeID: String, credential: PasskeyRegistrationCredential, encoding: CredentialEncoding = .flat) {
        registration = PasskeyRegistrationFinishOperation(
            challengeID: challengeID, credential: credential, encoding: encoding)
    }

    public var body: APIRequestBody { registration.body }
    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }
}

/// `POST /v1/recovery/password/finish` (the recovery session's bearer): ends the recovery with a new password
/// instead of a passkey (200): the recovery session ends and a password session is issued, which the client keeps.
/// The old password is void either way a recovery ends. 400 `invalid_request` (reason `password_length`) or
/// `weak_password` (reason `password_too_common`).
public struct RecoveryPasswordFinishOperation: PasskeyAPIOperation, CustomStringConvertible, CustomReflectable {
    public typealias Response = Session
    /// The route.
    public static let route = APIRoute(
        .post, "/v1/recovery/password/finish", operationID: "finishRecoveryWithPassword", requiresAccessToken: true)
    public var route: APIRoute { Self.route }

    /// The new password (never logged).
    public var password: String

    /// Creates the operation.
    public init(password: String) { self.password = password }

    public var body: APIRequestBody { .json(["password": password]) }
    public func accessTokenChange(for response: Session) -> AccessTokenChange? { .store(AccessToken(response)) }
    public var description: String { "RecoveryPasswordFinishOperation()" }
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
