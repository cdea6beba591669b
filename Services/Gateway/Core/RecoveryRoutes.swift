import AccountRecovery
import Domain
import HTTPMessages
import JSON
import ServiceContracts

/// Email verification, account recovery (by one-time email code or recovery code) and recovery codes.
///
/// The routes that name an email address answer alike whether or not an account has it: starting a recovery is
/// always 202, and a failed finish is always 400 `invalid_code`. Both count against the address's and the client
/// address's recovery limits before any service is called.
extension GatewayApplication {
    // MARK: - Verifying the account's email

    func requestEmailVerification(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        try limitRecovery(key: "account:" + session.accountID, context)
        var request = RequestEmailVerificationRequest()
        request.accountID = session.accountID
        _ = try await sessionService(context).requestEmailVerification(request)
        return Self.accepted
    }

    func verifyEmail(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try EmailVerificationBody(context.body)
        try limitRecovery(key: "account:" + session.accountID, context)
        var request = VerifyEmailRequest()
        request.accountID = session.accountID
        request.code = body.code
        _ = try await sessionService(context).verifyEmail(request)
        return Self.noContent
    }

    // MARK: - Recovery codes

    func generateRecoveryCodes(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        try limitRecovery(key: "account:" + session.accountID, context)
        var request = GenerateRecoveryCodesRequest()
        request.accountID = session.accountID
        let response = try await sessionService(context).generateRecoveryCodes(request)
        return Self.json(200, ["codes": .array(response.codes.map { .string($0) })])
    }

    // MARK: - Recovering an account

    func startRecovery(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try RecoveryStartBody(context.body)
        try limitRecovery(key: "email:" + EmailAddress.limitKey(body.email), context)
        var request = StartRecoveryRequest()
        request.email = body.email
        _ = try await sessionService(context).startRecovery(request)
        return Self.accepted
    }

    func finishRecovery(_ context: PublicContext) async throws -> HTTPResponse {
        let body = try RecoveryFinishBody(context.body)
        try limitRecovery(key: "email:" + EmailAddress.limitKey(body.email), context)
        var request = FinishRecoveryRequest()
        request.email = body.email
        request.code = body.code ?? ""
        request.recoveryCode = body.recoveryCode ?? ""
        let issued = try await sessionService(context).finishRecovery(request)
        return sessionResponse(
            200, issued, context, extra: [("authenticationMethod", .string(AuthenticationMethod.recovery.rawValue))])
    }

    /// Finishes the passkey registration of a recovery session: the passkey is stored, the recovery session ends and
    /// a passkey session is issued, in one transaction (verification-service).
    func finishRecoveryRegistration(_ context: PublicContext) async throws -> HTTPResponse {
        let session = try context.validatedSession()
        let body = try RegistrationFinishBody(context.body)
        var request = FinishRecoveryRegistrationRequest()
        request.accountID = session.accountID
        request.challengeID = body.challengeID
        request.credential = body.credential
        request.recoverySessionID = session.sessionID
        let issued = try await verificationService(context, ceremony: .registration).finishRecoveryRegistration(request)
        return sessionResponse(200, issued, context)
    }

    /// The recovery limits: the client address's bucket, then the email's (or account's).
    func limitRecovery(key: String, _ context: PublicContext) throws {
        try limits.take(limits.recoveryBuckets(key: key), context)
    }
}

/// `{code}` for confirming the account's email.
public struct EmailVerificationBody: Sendable, Equatable {
    /// The eight digits from the message.
    public var code: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        code = try body.string("code", rule: FieldRules.isEmailCode, FieldRules.emailCodeRequirement)
    }
}

/// `{email}` for starting a recovery.
public struct RecoveryStartBody: Sendable, Equatable {
    /// The email address as typed.
    public var email: String

    /// Reads the body.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.string("email", rule: FieldRules.isEmail, FieldRules.emailRequirement)
    }
}

/// `{email, code}` or `{email, recoveryCode}` for finishing a recovery.
public struct RecoveryFinishBody: Sendable, Equatable {
    public var email: String
    /// The eight digits of the recovery message.
    public var code: String?
    /// One of the account's recovery codes.
    public var recoveryCode: String?

    /// Reads the body: exactly one of the two codes.
    public init(_ body: JSONBody) throws(APIProblem) {
        email = try body.string("email", rule: FieldRules.isEmail, FieldRules.emailRequirement)
        code = try body.optionalString("code", rule: FieldRules.isEmailCode, FieldRules.emailCodeRequirement)
        recoveryCode = try body.optionalString(
            "recoveryCode", rule: FieldRules.isRecoveryCode, FieldRules.recoveryCodeRequirement)
        guard RecoveryProofText(code: code, recoveryCode: recoveryCode) != nil else {
            throw .invalidRequest("Give exactly one of code and recoveryCode.")
        }
    }
}

extension FieldRules {
    static let emailCodeRequirement = "must be \(OneTimeCodes.digits) digits."
    static let recoveryCodeRequirement =
        "must be a recovery code: 16 letters and digits, in groups of four separated by dashes or spaces."

    /// A one-time email code: exactly eight ASCII digits.
    public static func isEmailCode(_ text: String) -> Bool { OneTimeCodes.isWellFormed(text) }

    /// A recovery code as typed: 16 symbols of Crockford's base32 (any case; O, I and L read as digits), with dashes
    /// or spaces anywhere, at most 64 characters.
    public static func isRecoveryCode(_ text: String) -> Bool { RecoveryCodes.normalized(text) != nil }
}
