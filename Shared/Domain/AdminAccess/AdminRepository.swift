import Domain
import Foundation

/// One stored audit event, as `audit_events` holds it.
public struct StoredAuditEvent: Sendable, Equatable {
    public var id: Int64
    public var occurredAt: Date
    public var type: String
    public var accountID: AccountID?
    /// `user`, `admin` or `system`.
    public var actor: String
    /// The admin token's ID when an operator acted.
    public var actorID: String?
    public var requestID: String?
    public var clientAddress: String?
    public var detail: [String: String]

    public init(
        id: Int64, occurredAt: Date, type: String, accountID: AccountID?, actor: String, actorID: String?,
        requestID: String?, clientAddress: String?, detail: [String: String]
    ) {
        self.id = id
        self.occurredAt = occurredAt
        self.type = type
        self.accountID = accountID
        self.actor = actor
        self.actorID = actorID
        self.requestID = requestID
        self.clientAddress = clientAddress
        self.detail = detail
    }
}

/// What to read of the trail: an account's events, of some types, in a time range, a page at a time by ID.
public struct AuditEventQuery: Sendable, Equatable {
    /// The most events one page holds.
    public static let pageLimit = 500

    public var accountID: AccountID?
    /// Event types (`audit.session.revoked`, …); empty for every type.
    public var types: [String]
    public var since: Date?
    public var until: Date?
    /// Events older than this ID (the previous page's last), newest first.
    public var before: Int64?
    public var limit: Int

    public init(
        accountID: AccountID? = nil, types: [String] = [], since: Date? = nil, until: Date? = nil,
        before: Int64? = nil, limit: Int = 100
    ) {
        self.accountID = accountID
        self.types = types
        self.since = since
        self.until = until
        self.before = before
        self.limit = min(max(1, limit), Self.pageLimit)
    }

    /// Whether `type` can name an event type: 1 to 64 bytes of ASCII letters, digits, `.`, `_` and `-`. Anything
    /// else (a NUL, which a database text value cannot hold, a control character, invalid or non-ASCII text) names
    /// none, and is refused rather than searched for.
    public static func isWellFormedType(_ type: String) -> Bool {
        (1...64).contains(type.utf8.count)
            && type.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    return true
                default:
                    return false
                }
            }
    }
}

/// How an operator finds an account: by one of its email addresses, its ID, the ID of one of its passkeys, or the
/// external ID it was imported with.
public enum AccountLookup: Sendable, Equatable {
    case email(normalized: String)
    case accountID(AccountID)
    case credentialID(CredentialID)
    case externalID(String)
}

/// A page of every account, oldest first, narrowed by filters; a nil filter takes every account.
public struct AccountListing: Sendable, Equatable {
    public static let pageLimit = 200

    public var hasPassword: Bool?
    public var hasPasskey: Bool?
    public var disabled: Bool?
    public var createdSince: Date?
    public var createdUntil: Date?
    /// The previous page's `AccountCursor`: accounts after it.
    public var after: AccountCursor?
    public var limit: Int

    public init(
        hasPassword: Bool? = nil, hasPasskey: Bool? = nil, disabled: Bool? = nil, createdSince: Date? = nil,
        createdUntil: Date? = nil, after: AccountCursor? = nil, limit: Int = 50
    ) {
        self.hasPassword = hasPassword
        self.hasPasskey = hasPasskey
        self.disabled = disabled
        self.createdSince = createdSince
        self.createdUntil = createdUntil
        self.after = after
        self.limit = min(max(1, limit), Self.pageLimit)
    }
}

/// Where a listing page ended: the last account's creation time (microseconds since 1970, as stored) and ID, as
/// the opaque text `<microseconds>_<uuid>`.
public struct AccountCursor: Sendable, Equatable {
    /// The latest creation time a cursor can name: the end of year 9999 (the admin API's time bound), in
    /// microseconds. A larger number, though it fits in 64 bits, is past what a database timestamp holds.
    public static let maximumMicroseconds: Int64 = 253_402_300_799_999_999

    public var createdMicroseconds: Int64
    public var accountID: AccountID

    public init(createdMicroseconds: Int64, accountID: AccountID) {
        self.createdMicroseconds = createdMicroseconds
        self.accountID = accountID
    }

    public init?(text: String) {
        let parts = text.split(separator: "_")
        guard text.utf8.count <= 60, parts.count == 2, parts[0].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let micros = Int64(parts[0]), micros <= Self.maximumMicroseconds, parts[1].utf8.count == 36,
            let id = UUID(uuidString: String(parts[1]))
        else { return nil }
        createdMicroseconds = micros
        accountID = AccountID(id)
    }

    public var text: String { "\(createdMicroseconds)_\(accountID.description)" }
}

/// An account as a search or a listing shows it.
public struct AdminAccountSummaryRecord: Sendable, Equatable {
    public var account: Account
    public var emails: [String]
    public var hasPassword: Bool
    public var passkeyCount: Int
    public var disabledAt: Date?
    public var externalID: String?
    /// Where a listing continues after this account.
    public var cursor: AccountCursor?

    public init(
        account: Account, emails: [String], hasPassword: Bool = false, passkeyCount: Int = 0, disabledAt: Date? = nil,
        externalID: String? = nil, cursor: AccountCursor? = nil
    ) {
        self.account = account
        self.emails = emails
        self.hasPassword = hasPassword
        self.passkeyCount = passkeyCount
        self.disabledAt = disabledAt
        self.externalID = externalID
        self.cursor = cursor
    }
}

/// Everything an operator sees of one account.
public struct AdminAccountRecord: Sendable, Equatable {
    public var account: Account
    /// Each address, and whether it is verified.
    public var emails: [(address: String, verified: Bool)]
    public var hasPassword: Bool
    public var passkeys: [PasskeyCredential]
    /// The live sessions, newest first.
    public var sessions: [AuthenticationSession]
    public var recoveryCodesRemaining: Int
    /// When an operator disabled it; nil while it is enabled.
    public var disabledAt: Date?
    /// Where it came from: made by passkey-import (with the operator's external ID, if the record had one).
    public var imported: Bool
    public var externalID: String?

    public init(
        account: Account, emails: [(address: String, verified: Bool)], hasPassword: Bool, passkeys: [PasskeyCredential],
        sessions: [AuthenticationSession], recoveryCodesRemaining: Int, disabledAt: Date? = nil, imported: Bool = false,
        externalID: String? = nil
    ) {
        self.imported = imported
        self.externalID = externalID
        self.account = account
        self.emails = emails
        self.hasPassword = hasPassword
        self.passkeys = passkeys
        self.sessions = sessions
        self.recoveryCodesRemaining = recoveryCodesRemaining
        self.disabledAt = disabledAt
    }

    public static func == (lhs: AdminAccountRecord, rhs: AdminAccountRecord) -> Bool {
        lhs.account == rhs.account && lhs.emails.map(\.address) == rhs.emails.map(\.address)
            && lhs.emails.map(\.verified) == rhs.emails.map(\.verified) && lhs.hasPassword == rhs.hasPassword
            && lhs.passkeys == rhs.passkeys && lhs.sessions == rhs.sessions
            && lhs.recoveryCodesRemaining == rhs.recoveryCodesRemaining && lhs.disabledAt == rhs.disabledAt
            && lhs.imported == rhs.imported && lhs.externalID == rhs.externalID
    }
}

/// The admin API's storage port. Changes record their audit events in their own transactions, with the actor the
/// call runs as.
public protocol AdminRepository: Sendable {
    /// The admin token whose secret has this digest, revoked and expired ones included.
    func token(digest: [UInt8]) async throws -> AdminToken?
    /// Notes that the token was used (at most about once a minute per token is written).
    func recordUse(of tokenID: String, at now: Date) async throws
    /// At most `limit` accounts that match.
    func findAccounts(_ lookup: AccountLookup, limit: Int) async throws -> [AdminAccountSummaryRecord]
    func accountDetail(_ accountID: AccountID, at now: Date) async throws -> AdminAccountRecord?
    /// A page of accounts matching the listing's filters, oldest first (an audit event of its own).
    func listAccounts(_ listing: AccountListing) async throws -> [AdminAccountSummaryRecord]
    /// Revokes one live session of the account, or all of them when `sessionID` is nil; returns how many.
    func revokeSessions(of accountID: AccountID, sessionID: SessionID?, at now: Date) async throws -> Int
    /// Removes a passkey of the account. The last-sign-in-method rule applies (`DomainError.lastSignInMethod`)
    /// unless `overridingLastMethod`; `DomainError.notFound` when the account has no such passkey.
    func removePasskey(_ credentialID: CredentialID, of accountID: AccountID, overridingLastMethod: Bool) async throws
    func auditEvents(_ query: AuditEventQuery) async throws -> [StoredAuditEvent]
    /// Deletes every row of the account, in one transaction: the account and what it owns, its registrations, the
    /// mail queued to its addresses and its audit events, leaving one tombstone event. False when there is no such
    /// account.
    func eraseAccount(_ accountID: AccountID) async throws -> Bool
    /// Disables the account and revokes its live sessions in one transaction, or enables it again. Nil when there
    /// is no such account; else whether anything changed (disabling a disabled account changes nothing), and how
    /// many sessions were revoked.
    func setDisabled(_ accountID: AccountID, disabled: Bool, at now: Date) async throws -> (
        changed: Bool, revoked: Int
    )?
    /// The account's email addresses, oldest first, and whether it is disabled; nil when there is no such account.
    func mailTargets(of accountID: AccountID) async throws -> (disabled: Bool, targets: [RecoveryTarget])?
}
