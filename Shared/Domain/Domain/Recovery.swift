import Foundation

/// What a one-time email code proves once it is entered.
public enum EmailCodePurpose: String, Hashable, Sendable, CaseIterable {
    /// That the account's owner reads mail sent to the address.
    case verification
    /// That whoever recovers the account reads mail sent to its verified address.
    case recovery
}

/// A one-time code sent by email, as stored: only a keyed digest of the code, never the code.
public struct EmailCode: Hashable, Sendable {
    public var id: UUID
    public var accountID: AccountID
    /// The `account_emails` row the code was sent to.
    public var emailID: UUID
    public var purpose: EmailCodePurpose
    public var salt: [UInt8]
    /// HMAC-SHA256 of the salt and the code under the key `digestKeyID` names; for a code stored before digests were
    /// keyed (`digestKeyID` nil), SHA-256 of the salt and the code.
    public var codeDigest: [UInt8]
    /// The key of the secret key ring the digest was made with; nil for an unkeyed digest, which is accepted until
    /// its code expires (ten minutes at most) and never made any more.
    public var digestKeyID: String?
    /// Attempts made so far, the current one included.
    public var attempts: Int
    public var createdAt: Date
    public var expiresAt: Date

    public init(
        id: UUID, accountID: AccountID, emailID: UUID, purpose: EmailCodePurpose, salt: [UInt8], codeDigest: [UInt8],
        digestKeyID: String?, attempts: Int, createdAt: Date, expiresAt: Date
    ) {
        self.id = id
        self.accountID = accountID
        self.emailID = emailID
        self.purpose = purpose
        self.salt = salt
        self.codeDigest = codeDigest
        self.digestKeyID = digestKeyID
        self.attempts = attempts
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// The kinds of mail the services send, each with a plain-text template of the same name.
public enum MailTemplate: String, Hashable, Sendable, CaseIterable {
    case emailVerification = "email_verification"
    case recoveryCode = "recovery_code"
    // Security notifications: sent to every verified address when the account's factors change. They carry no
    // secret, only what happened, when, from which address and with which passkey (``OutboxMessage/notice``).
    case passkeyAdded = "notice_passkey_added"
    case passkeyRemoved = "notice_passkey_removed"
    case passwordSet = "notice_password_set"
    case passwordChanged = "notice_password_changed"
    case passwordRemoved = "notice_password_removed"
    case passwordReset = "notice_password_reset"
    case recoveryCodesGenerated = "notice_recovery_codes_generated"
    case recoveryCompleted = "notice_recovery_completed"
    case accountDisabled = "notice_account_disabled"
    case accountEnabled = "notice_account_enabled"

    /// Whether the template is a security notification (no code; a day to be delivered).
    public var isNotice: Bool { rawValue.hasPrefix("notice_") }
}

/// What a security notification names: when the change happened, the client address it came from and the passkey
/// it concerns (its name), each when known. Never a secret.
public struct SecurityNotice: Hashable, Sendable {
    public var occurredAt: String?
    public var clientAddress: String?
    public var device: String?

    public init(occurredAt: String? = nil, clientAddress: String? = nil, device: String? = nil) {
        self.occurredAt = occurredAt
        self.clientAddress = clientAddress
        self.device = device
    }
}

/// The one-time code a queued message carries, as the outbox keeps it.
public enum OutboxCode: Hashable, Sendable {
    /// Sealed (AES-256-GCM) under the secret key ring's key `keyID` names, bound to the message's ID: the only
    /// form written. Only the outbox worker, which holds the ring, opens it, as it sends the message.
    case sealed(keyID: String, box: [UInt8])
    /// In clear: read only from a message queued before codes were sealed (migration 0018), until it is sent or
    /// given up, which clears it; never written.
    case clear(String)
}

/// A message waiting in the outbox.
public struct OutboxMessage: Hashable, Sendable {
    public var id: UUID
    public var recipient: String
    public var template: MailTemplate
    /// The one-time code the message carries.
    public var code: OutboxCode?
    /// When the code expires; a message still unsent by then is given up.
    public var expiresAt: Date
    public var createdAt: Date
    /// Delivery attempts before this one.
    public var attempts: Int
    /// What a security notification names; nil for a message that carries a code.
    public var notice: SecurityNotice?

    public init(
        id: UUID, recipient: String, template: MailTemplate, code: OutboxCode?, expiresAt: Date, createdAt: Date,
        attempts: Int = 0, notice: SecurityNotice? = nil
    ) {
        self.notice = notice
        self.id = id
        self.recipient = recipient
        self.template = template
        self.code = code
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.attempts = attempts
    }
}

/// A new code and the message that carries it, stored together: the code exists only if its mail is queued.
public struct EmailCodeDelivery: Hashable, Sendable {
    public var code: EmailCode
    public var message: OutboxMessage

    public init(code: EmailCode, message: OutboxMessage) {
        self.code = code
        self.message = message
    }
}

/// An account's email address, as recovery and verification see it.
public struct RecoveryTarget: Hashable, Sendable {
    public var accountID: AccountID
    public var emailID: UUID
    public var address: String
    public var verified: Bool
    public var displayName: String
    /// The account's failed code attempts (`GuessLimit`), read with the address by the recovery and verification
    /// lookups; nil when none are stored (or the lookup does not read them).
    public var failedCodeGuesses: FailedGuesses?

    public init(
        accountID: AccountID, emailID: UUID, address: String, verified: Bool, displayName: String,
        failedCodeGuesses: FailedGuesses? = nil
    ) {
        self.accountID = accountID
        self.emailID = emailID
        self.address = address
        self.verified = verified
        self.displayName = displayName
        self.failedCodeGuesses = failedCodeGuesses
    }
}

/// One unused recovery code of an account: its row and digest.
public struct RecoveryCodeRecord: Hashable, Sendable {
    public var id: UUID
    public var codeDigest: [UInt8]

    public init(id: UUID, codeDigest: [UInt8]) {
        self.id = id
        self.codeDigest = codeDigest
    }
}

/// What a recovery consumed: an email code or a recovery code, by row.
public enum RecoveryProof: Hashable, Sendable {
    case emailCode(UUID)
    case recoveryCode(UUID)
}

/// What became of one delivery attempt.
public enum DeliveryOutcome: Hashable, Sendable {
    /// The relay accepted the message.
    case delivered
    /// Try again after this many seconds.
    case retry(after: TimeInterval, error: String)
    /// Never try again.
    case giveUp(error: String)
}

/// `email_codes`, `recovery_codes`, the verified state of `account_emails`, and the recovery sessions of
/// `authentication_sessions`: what verification and recovery read and write.
public protocol AccountRecoveryRepository: Sendable {
    /// The email row with this normalized address, with its account's display name and failed code guesses, or nil.
    func target(normalizedEmail: String) async throws -> RecoveryTarget?
    /// The account's first email, with its failed code guesses, or nil when it has none.
    func firstEmail(of accountID: AccountID) async throws -> RecoveryTarget?
    /// Stores the code and queues its message in one transaction; the address's earlier live codes of the same
    /// purpose are consumed, so at most one is live.
    func issue(_ delivery: EmailCodeDelivery) async throws
    /// Counts one attempt against the newest live code of `purpose` sent to the email and returns it, or nil when
    /// there is none or it has had `maximumAttempts` already. In the same statement the attempt claims a place in
    /// the account's failed code guesses (`FailedGuessRepository.claimGuess`): it counts there whatever the code
    /// turns out to be, and with no room there the code is not tried (nil).
    func attempt(emailID: UUID, purpose: EmailCodePurpose, maximumAttempts: Int, claiming charge: GuessCharge)
        async throws -> EmailCode?
    /// A failed attempt with no code to count it against, at the cost of a counted one (one row updated in its own
    /// commit), so that its time does not tell an unknown address from a known one. `slot` spreads concurrent
    /// attempts over rows (0 to 63).
    func countDecoyAttempt(slot: Int) async throws
    /// Consumes the verification code and marks its email verified, in one transaction; false when the code was
    /// consumed or expired meanwhile.
    func completeVerification(codeID: UUID) async throws -> Bool
    /// The account's recovery codes not used yet.
    func unusedRecoveryCodes(of accountID: AccountID) async throws -> [RecoveryCodeRecord]
    /// Replaces the account's recovery codes with these digests, in one transaction.
    func replaceRecoveryCodes(of accountID: AccountID, digests: [[UInt8]], at now: Date) async throws
    /// Consumes the proof and stores the recovery session, after revoking the account's other live sessions when
    /// asked, in one transaction. nil when the proof was used or expired meanwhile (nothing is written); otherwise
    /// how many sessions were revoked.
    func startRecoverySession(
        _ session: AuthenticationSession, consuming proof: RecoveryProof, revokingOtherSessions: Bool
    ) async throws -> Int?
    /// Deletes at most `limit` email codes that expired or were consumed before `cutoff`; returns how many.
    func deleteEndedCodes(before cutoff: Date, limit: Int) async throws -> Int
}

/// `email_outbox`.
public protocol EmailOutboxRepository: Sendable {
    /// Takes the next due message, hands it to `deliver` while its row is locked, and records the outcome in the
    /// same transaction: a crash before the commit leaves the message pending, and once the commit is done the
    /// message is never handed out again. False when no message is due.
    func deliverNext(_ deliver: @escaping @Sendable (OutboxMessage) -> DeliveryOutcome) async throws -> Bool
    /// Deletes at most `limit` messages sent or given up before `cutoff`; returns how many.
    func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int
    /// The messages neither sent nor given up yet, and how long the oldest of them has waited.
    func backlog() async throws -> OutboxBacklog
}

/// What waits in an outbox.
public struct OutboxBacklog: Sendable, Equatable {
    /// Messages neither sent nor given up.
    public var pending: Int
    /// Seconds since the oldest pending message was queued; 0 when none is.
    public var oldestPendingSeconds: Double

    public init(pending: Int, oldestPendingSeconds: Double) {
        self.pending = pending
        self.oldestPendingSeconds = oldestPendingSeconds
    }
}

/// `passkey_credentials` and `authentication_sessions`: the passkey a recovery session registers, which ends it
/// and signs the user in (verification-service).
public protocol RecoveryRegistrationRepository: Sendable {
    /// In one transaction: ends the live recovery session `recoverySessionID` of the credential's account, stores
    /// the credential and stores `session`. Returns the account's display name, or nil (nothing written) when that
    /// recovery session is not live. Throws `credentialAlreadyRegistered`.
    func completeRecovery(
        _ credential: PasskeyCredential, endingRecoverySession recoverySessionID: SessionID,
        session: AuthenticationSession
    ) async throws -> String?
}
