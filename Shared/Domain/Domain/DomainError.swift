/// An error a use case reports to its caller: a stable code, a message safe to show, and where it was raised.
public struct DomainError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The stable, machine-readable kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The request itself is malformed.
        case invalidRequest = "invalid_request"
        /// The normalized email already belongs to an account.
        case emailTaken = "email_taken"
        /// The credential ID is already registered.
        case credentialAlreadyRegistered = "credential_already_registered"
        /// Removing this would leave the account with no way to sign in.
        case lastSignInMethod = "last_sign_in_method"
        /// No such resource for this account.
        case notFound = "not_found"
        /// The challenge or registration is unknown, expired, already used, or bound to another account.
        case challengeUnavailable = "challenge_unavailable"
        /// Missing, unknown, expired or revoked session.
        case unauthenticated
        /// Sign-in failed; which check failed is not revealed beyond the WebAuthn reason.
        case invalidCredentials = "invalid_credentials"
        /// The session may not do this.
        case forbidden
        /// A registration response failed a WebAuthn check.
        case verificationFailed = "verification_failed"
        /// A one-time email code or recovery code is wrong, expired, used, tried too often, or not this account's:
        /// deliberately indistinguishable, and the same whether or not the account exists.
        case invalidCode = "invalid_code"
        /// Too many attempts.
        case rateLimited = "rate_limited"
        /// A dependency (the database, another service) cannot be reached.
        case unavailable
        /// An operator disabled the account: it cannot sign in by any method until it is enabled again.
        case accountDisabled = "account_disabled"
        /// The change conflicts with the resource's state (retiring the only signing key, for example).
        case conflict
        /// A new password of an allowed length that is refused all the same: one of the common ones (reason
        /// `password_too_common`). Well formed, so not `invalidRequest`.
        case weakPassword = "weak_password"
    }

    public let code: Code
    /// A message safe to show to a client.
    public let message: String
    /// The WebAuthn reason code, when a WebAuthn check failed, or why a request was refused
    /// (`too_many_failed_guesses`).
    public let reason: String?
    /// For `rateLimited`: the seconds until a retry can be admitted, when the refusal knows them.
    public let retryAfterSeconds: Int?
    public let file: String
    public let line: Int

    public init(
        _ code: Code, _ message: String, reason: String? = nil, retryAfterSeconds: Int? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
        self.file = file
        self.line = line
    }

    public var description: String {
        "\(code.rawValue): \(message)" + (reason.map { " (reason=\($0))" } ?? "") + " at \(file):\(line)"
    }

    public static func == (lhs: DomainError, rhs: DomainError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.reason == rhs.reason
            && lhs.retryAfterSeconds == rhs.retryAfterSeconds
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(reason)
        hasher.combine(retryAfterSeconds)
    }
}
