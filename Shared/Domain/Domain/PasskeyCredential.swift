import Foundation

/// A registered passkey: the public key and what the authenticator said about itself (`passkey_credentials`).
public struct PasskeyCredential: Hashable, Sendable {
    public var id: UUID
    public var credentialID: CredentialID
    public var accountID: AccountID
    /// The COSE_Key bytes exactly as the authenticator sent them.
    public var publicKey: [UInt8]
    /// The COSE algorithm identifier, for example -7 for ES256.
    public var algorithm: Int
    public var signCount: UInt32
    public var backupEligible: Bool
    public var backedUp: Bool
    /// Whether user verification was performed at registration.
    public var uvInitialized: Bool
    public var transports: [String]
    public var aaguid: UUID
    public var attestationFormat: String
    /// Set when a sign-in showed a counter that did not increase: the credential may have been cloned.
    public var cloneWarning: Bool
    /// The user-facing label.
    public var name: String
    public var createdAt: Date
    public var lastUsedAt: Date?

    public init(
        id: UUID, credentialID: CredentialID, accountID: AccountID, publicKey: [UInt8], algorithm: Int,
        signCount: UInt32, backupEligible: Bool, backedUp: Bool, uvInitialized: Bool, transports: [String],
        aaguid: UUID, attestationFormat: String, cloneWarning: Bool, name: String, createdAt: Date,
        lastUsedAt: Date?
    ) {
        self.id = id
        self.credentialID = credentialID
        self.accountID = accountID
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signCount = signCount
        self.backupEligible = backupEligible
        self.backedUp = backedUp
        self.uvInitialized = uvInitialized
        self.transports = transports
        self.aaguid = aaguid
        self.attestationFormat = attestationFormat
        self.cloneWarning = cloneWarning
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// A stored passkey together with its account's user handle, which a sign-in compares with the assertion's.
public struct PasskeyCredentialWithOwner: Hashable, Sendable {
    public var credential: PasskeyCredential
    public var userHandle: UserHandle
    public var displayName: String

    public init(credential: PasskeyCredential, userHandle: UserHandle, displayName: String) {
        self.credential = credential
        self.userHandle = userHandle
        self.displayName = displayName
    }
}

/// What a successful sign-in changes on the stored passkey, written in one statement.
public struct PasskeyUsage: Hashable, Sendable {
    public var signCount: UInt32
    public var backedUp: Bool
    /// The BE flag the assertion showed when it differs from the stored one and the policy accepted that
    /// (`PASSKEY_BACKUP_ELIGIBILITY_CHANGE=update`); nil when it is unchanged. A change is stored with its audit event
    /// (`audit.passkey.backup_state_changed`, the old and new BE and BS) in the same commit.
    public var backupEligible: Bool?
    /// Sticky: once set it stays set.
    public var cloneWarning: Bool
    public var usedAt: Date

    public init(signCount: UInt32, backedUp: Bool, backupEligible: Bool? = nil, cloneWarning: Bool, usedAt: Date) {
        self.signCount = signCount
        self.backedUp = backedUp
        self.backupEligible = backupEligible
        self.cloneWarning = cloneWarning
        self.usedAt = usedAt
    }
}

extension PasskeyUsage {
    /// Whether this use changes what a later sign-in is checked against: a sign count that moved (authenticators
    /// that keep one), a changed backup state or backup eligibility, or a new clone warning. Such a use is written
    /// durably in the same commit as the session it grants; any other use only moves `last_used_at`, which may be
    /// written later.
    public func changesSecurityState(of stored: PasskeyCredential) -> Bool {
        signCount != stored.signCount || backedUp != stored.backedUp
            || (backupEligible.map { $0 != stored.backupEligible } ?? false) || (cloneWarning && !stored.cloneWarning)
    }
}

/// The one write of a verified passkey sign-in: the challenge consumed, the new session, and the passkey's use when
/// that use changes its security state, all or nothing. It happens only if the challenge is unconsumed, unexpired and
/// the one the client signed, and the passkey still exists, still belongs to the session's account, and still has
/// the sign count, backup state and backup eligibility the assertion was checked against.
public struct PasskeySignInRecord: Sendable {
    public var challengeID: ChallengeID
    /// The challenge the signed client data carries; it must be the stored one.
    public var challenge: [UInt8]
    public var credentialID: CredentialID
    public var expectedSignCount: UInt32
    public var expectedBackedUp: Bool
    public var expectedBackupEligible: Bool
    /// Written with the session when set; nil when the use changes nothing but `last_used_at`.
    public var usage: PasskeyUsage?
    public var session: AuthenticationSession
    /// A reauthentication: instead of storing `session` (whose creation time is the sign-in's), the statement moves
    /// this live session of this account to a sign-in at that time.
    public var reauthenticating: Reauthentication?

    /// The live session a reauthentication refreshes, and its account.
    public struct Reauthentication: Hashable, Sendable {
        public var sessionID: SessionID
        public var accountID: AccountID

        public init(sessionID: SessionID, accountID: AccountID) {
            self.sessionID = sessionID
            self.accountID = accountID
        }
    }

    public init(
        challengeID: ChallengeID, challenge: [UInt8], credentialID: CredentialID, expectedSignCount: UInt32,
        expectedBackedUp: Bool, expectedBackupEligible: Bool, usage: PasskeyUsage?, session: AuthenticationSession,
        reauthenticating: Reauthentication? = nil
    ) {
        self.reauthenticating = reauthenticating
        self.challengeID = challengeID
        self.challenge = challenge
        self.credentialID = credentialID
        self.expectedSignCount = expectedSignCount
        self.expectedBackedUp = expectedBackedUp
        self.expectedBackupEligible = expectedBackupEligible
        self.usage = usage
        self.session = session
    }

    /// The BE flag the passkey has once the record is written: the usage's when it changes it, else the expected one.
    public var backupEligibleAfter: Bool { usage?.backupEligible ?? expectedBackupEligible }

    /// Whether writing the record changes the passkey's BE flag.
    public var changesBackupEligibility: Bool { backupEligibleAfter != expectedBackupEligible }
}

/// What became of a `PasskeySignInRecord`.
public enum PasskeySignInOutcome: Hashable, Sendable {
    /// Everything was written; the account's display name.
    case signedIn(displayName: String)
    /// The passkey is gone, belongs to another account, or its sign count, backup state or backup eligibility moved
    /// on since it was read. Nothing was written; the challenge is untouched.
    case passkeyChanged
    /// The challenge is unknown, expired, used, or not the one stored. Nothing was written.
    case challengeUnavailable
    /// The challenge was consumed, but another sign-in moved the passkey's state at the same moment: nothing else
    /// was written.
    case concurrentUse
    /// The challenge was consumed, but the account is disabled: nothing else was written.
    case accountDisabled
    /// A reauthentication's challenge was consumed, but its session is no longer live: nothing else was written.
    case sessionEnded
}
