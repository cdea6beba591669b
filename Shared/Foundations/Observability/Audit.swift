/// The security events the services record, each under one name. Each is logged once, by the service that decides
/// it (the gateway logs none), with the request's ID and client address when the gateway sent them.
public enum AuditEvent: String, CaseIterable, Sendable {
    case accountCreated = "audit.account.created"
    case accountRenamed = "audit.account.renamed"
    case signInSucceeded = "audit.sign_in.succeeded"
    case signInFailed = "audit.sign_in.failed"
    case passkeyRegistered = "audit.passkey.registered"
    case passkeyRegistrationFailed = "audit.passkey.registration_failed"
    case passkeyRemoved = "audit.passkey.removed"
    case passkeyCloneWarning = "audit.passkey.clone_warning"
    /// A sign-in showed another BE flag than the one stored, and it was accepted and stored
    /// (`PASSKEY_BACKUP_ELIGIBILITY_CHANGE=update`); the detail has the old and new BE and BS.
    case passkeyBackupStateChanged = "audit.passkey.backup_state_changed"
    /// A stored legacy or weaker password hash was replaced by the current argon2id at a sign-in.
    case passwordRehashed = "audit.password.rehashed"
    /// The account removed its password (stage ③: passkeys only).
    case passwordRemoved = "audit.password.removed"
    /// The account set a password where it had none, or changed its password (every other session revoked with it).
    case passwordSet = "audit.password.set"
    case passwordChanged = "audit.password.changed"
    /// An operator voided the account's password and ended its sessions; a recovery code went to its address.
    case passwordReset = "audit.password.reset"
    /// A password removal was refused (with `reason`).
    case passwordRemovalRefused = "audit.password.removal_refused"
    case sessionRevoked = "audit.session.revoked"
    /// A live session proved a credential again (`method`: passkey or password): its sign-in time is now.
    case sessionReauthenticated = "audit.session.reauthenticated"
    /// A refresh token that had been replaced came back after the reuse window: the session was ended.
    case sessionRefreshReused = "audit.session.refresh_reused"
    /// A token-signing key was made (published now, signing from its activation) or retired.
    case signingKeyCreated = "audit.signing_key.created"
    case signingKeyRetired = "audit.signing_key.retired"
    case emailVerificationSent = "audit.email.verification_sent"
    case emailVerified = "audit.email.verified"
    case emailVerificationFailed = "audit.email.verification_failed"
    case recoveryStarted = "audit.recovery.started"
    case recoveryFailed = "audit.recovery.failed"
    /// A code was accepted and a recovery session issued.
    case recoverySessionIssued = "audit.recovery.session_issued"
    /// The recovery session registered a passkey and ended; the user is signed in.
    case recoveryCompleted = "audit.recovery.completed"
    case recoveryCodesGenerated = "audit.recovery_codes.generated"
    /// An admin token was made (by the CLI, or through the admin API by another token).
    case adminTokenCreated = "audit.admin_token.created"
    case adminTokenRevoked = "audit.admin_token.revoked"
    /// An operator erased an account: every row of it deleted, its earlier events too; this tombstone keeps only the
    /// account's ID, when and by whom.
    case accountErased = "audit.account.erased"
    /// An operator disabled the account (its sessions revoked with it) or enabled it again.
    case accountDisabled = "audit.account.disabled"
    case accountEnabled = "audit.account.enabled"
    /// An operator searched accounts (the detail says by what, never the value) or opened one account's detail.
    case adminAccountsSearched = "audit.admin.accounts_searched"
    case adminAccountViewed = "audit.admin.account_viewed"
    /// An operator read the audit trail (of one account, or all).
    case adminAuditRead = "audit.admin.audit_read"
    /// An operator registered, deleted or enabled a webhook endpoint.
    case webhookCreated = "audit.webhook.created"
    case webhookDeleted = "audit.webhook.deleted"
    case webhookEnabled = "audit.webhook.enabled"
    /// The system disabled an endpoint that had failed for longer than `PASSKEY_WEBHOOK_DISABLE_AFTER`.
    case webhookDisabled = "audit.webhook.disabled"

    /// Events that want an operator's attention are warnings; the rest are info.
    public var level: LogLevel { self == .passkeyCloneWarning || self == .webhookDisabled ? .warning : .info }
}

/// Where the request being served came from, as the gateway told the service (gRPC metadata `x-request-id` and
/// `x-client-address`). Set for the duration of each call's handler.
public struct AuditContext: Sendable, Equatable {
    public static let requestIDKey = "x-request-id"
    public static let clientAddressKey = "x-client-address"

    public var requestID: String?
    public var clientAddress: String?
    /// Who asked for the change: the account's own user unless an operator or the system acts.
    public var actor: AuditActor

    public init(requestID: String?, clientAddress: String?, actor: AuditActor = .user) {
        self.requestID = requestID
        self.clientAddress = clientAddress
        self.actor = actor
    }

    @TaskLocal public static var current = AuditContext(requestID: nil, clientAddress: nil)
}

/// Who made a change, as the audit trail records it.
public enum AuditActor: Sendable, Equatable {
    /// The account's user, through the public API.
    case user
    /// An operator: through the admin API with the admin token of this ID, or at the database with
    /// `passkey-admin` (`cli:<login>`).
    case admin(tokenID: String)
    /// The service itself: a sweep, an import.
    case system

    /// The `actor` column's value.
    public var kind: String {
        switch self {
        case .user: "user"
        case .admin: "admin"
        case .system: "system"
        }
    }

    /// The `actor_id` column's value: the admin token's ID, else none.
    public var identifier: String? {
        if case .admin(let tokenID) = self { return tokenID }
        return nil
    }
}

extension Logger {
    /// Logs `event` with `pairs` and the current request's ID and client address.
    public func audit(_ event: AuditEvent, _ pairs: KeyValuePairs<String, String> = [:]) {
        var fields: [(String, String)] = []
        let context = AuditContext.current
        if let requestID = context.requestID { fields.append(("request.id", requestID)) }
        if let address = context.clientAddress { fields.append(("client.address", address)) }
        fields.append(contentsOf: pairs.map { ($0.key, $0.value) })
        log(event.level, event.rawValue, fields: fields)
    }
}
