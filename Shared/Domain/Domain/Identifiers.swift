import Encoding
import Foundation

/// The identifier of an account (`accounts.id`).
public struct AccountID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    /// A new random identifier.
    public static func random() -> AccountID { AccountID(UUID.randomV4()) }
    public var description: String { rawValue.lowercaseText }
}

/// The identifier of a single-use challenge row (registration or authentication).
public struct ChallengeID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public static func random() -> ChallengeID { ChallengeID(UUID.randomV4()) }
    public var description: String { rawValue.lowercaseText }
}

/// The identifier of a passkey account registration in progress (`passkey_account_registrations.id`).
public struct AccountRegistrationID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public static func random() -> AccountRegistrationID { AccountRegistrationID(UUID.randomV4()) }
    public var description: String { rawValue.lowercaseText }
}

/// The identifier of an authentication session (`authentication_sessions.id`), never the bearer token itself.
public struct SessionID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: UUID
    public init(_ rawValue: UUID) { self.rawValue = rawValue }
    public static func random() -> SessionID { SessionID(UUID.randomV4()) }
    /// A new time-ordered identifier (UUIDv7): sessions are inserted on every sign-in, and time-ordered keys keep
    /// those inserts at the right edge of the primary-key index.
    public static func timeOrdered(at date: Date) -> SessionID { SessionID(UUID.timeOrderedV7(at: date)) }
    public var description: String { rawValue.lowercaseText }
}

/// A WebAuthn credential ID: opaque bytes chosen by the authenticator, at most 1023 bytes.
public struct CredentialID: Hashable, Sendable, Codable {
    /// The longest credential ID WebAuthn Level 3 allows.
    public static let maximumLength = 1023
    public let bytes: [UInt8]
    /// Returns nil for an empty or over-long ID.
    public init?(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, bytes.count <= CredentialID.maximumLength else { return nil }
        self.bytes = bytes
    }
}

/// A WebAuthn user handle (`user.id`): random bytes, stable for an account, 1 to 64 bytes.
public struct UserHandle: Hashable, Sendable, Codable {
    /// The longest user handle WebAuthn allows.
    public static let maximumLength = 64
    public let bytes: [UInt8]
    /// Returns nil for an empty or over-long handle.
    public init?(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, bytes.count <= UserHandle.maximumLength else { return nil }
        self.bytes = bytes
    }
}
