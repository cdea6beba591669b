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
    /// Sticky: once set it stays set.
    public var cloneWarning: Bool
    public var usedAt: Date

    public init(signCount: UInt32, backedUp: Bool, cloneWarning: Bool, usedAt: Date) {
        self.signCount = signCount
        self.backedUp = backedUp
        self.cloneWarning = cloneWarning
        self.usedAt = usedAt
    }
}
