import Crypto
import Encoding
import Foundation

/// What an admin token may do. Each admin operation needs one scope; no scope implies another.
public enum AdminScope: String, CaseIterable, Sendable, Comparable {
    /// Find and read accounts, their passkeys and sessions, and the audit trail.
    case read
    /// Revoke sessions, remove passkeys, disable and enable accounts, send mail, manage webhooks.
    case write
    /// Erase an account and every row of it.
    case erase

    public static func < (lhs: AdminScope, rhs: AdminScope) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// A comma-separated list (`read,write`): at least one scope, each known, none twice.
    public static func parseList(_ text: String) throws(AdminTokenError) -> [AdminScope] {
        guard text.utf8.count <= 64 else { throw .invalidScopes("the scope list is longer than 64 bytes") }
        var scopes: [AdminScope] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces)
            guard let scope = AdminScope(rawValue: name) else {
                throw .invalidScopes(
                    "unknown scope \"\(name.prefix(16))\" (known: \(allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            guard !scopes.contains(scope) else { throw .invalidScopes("scope \(name) is named twice") }
            scopes.append(scope)
        }
        return scopes.sorted()
    }
}

public enum AdminTokenError: Error, Equatable, CustomStringConvertible {
    case invalidScopes(String)
    case invalidName(String)
    case invalidExpiry(String)

    public var description: String {
        switch self {
        case .invalidScopes(let detail), .invalidName(let detail), .invalidExpiry(let detail): detail
        }
    }
}

/// An admin token's secret text and what is stored of it.
///
/// The text is `pkadm_<id>_<secret>`: `id` is 16 lowercase hex digits, stored in clear and shown in listings and in
/// the audit trail; `secret` is 32 random bytes in base64url. Only the SHA-256 digest of the whole text is stored,
/// so the database never holds a usable token; the text is shown once, when it is made.
public struct AdminTokenSecret: Sendable, Equatable {
    public static let prefix = "pkadm_"
    /// The length of every token text: the prefix, 16 hex digits, `_`, 43 base64url characters.
    public static let textLength = prefix.utf8.count + 16 + 1 + 43

    public let id: String
    public let text: String

    /// A new token from `random`.
    public init(random: some RandomSource) {
        id = Hex.encode(random.bytes(count: 8))
        text = Self.prefix + id + "_" + Base64URL.encode(random.bytes(count: 32))
    }

    /// The token a caller presented, when it has the token form; else nil (and the caller is refused as if the
    /// token were unknown).
    public init?(presented text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == Self.textLength, text.hasPrefix(Self.prefix) else { return nil }
        let id = bytes[Self.prefix.utf8.count..<Self.prefix.utf8.count + 16]
        let separator = bytes[Self.prefix.utf8.count + 16]
        let secret = bytes[(Self.prefix.utf8.count + 17)...]
        guard id.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
            separator == UInt8(ascii: "_"),
            secret.allSatisfy({ Self.isBase64URL($0) })
        else { return nil }
        self.id = String(decoding: id, as: UTF8.self)
        self.text = text
    }

    /// What the database keeps: SHA-256 of the token's text.
    public var digest: [UInt8] { sha256(Array(text.utf8)) }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }
}

/// A stored admin token, without its secret.
public struct AdminToken: Sendable, Equatable {
    public static let nameLimit = 64

    public var id: String
    public var name: String
    public var scopes: [AdminScope]
    /// Who made it: the CLI's user (`cli:<login>`), or the admin token that made it through the API.
    public var createdBy: String
    public var createdAt: Date
    public var expiresAt: Date?
    public var revokedAt: Date?
    public var lastUsedAt: Date?

    public init(
        id: String, name: String, scopes: [AdminScope], createdBy: String, createdAt: Date, expiresAt: Date?,
        revokedAt: Date? = nil, lastUsedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.scopes = scopes
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.lastUsedAt = lastUsedAt
    }

    /// A name: 1 to 64 characters of printable text.
    public static func validateName(_ name: String) throws(AdminTokenError) -> String {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard (1...nameLimit).contains(trimmed.unicodeScalars.count),
            trimmed.unicodeScalars.allSatisfy({ !CharacterSet.controlCharacters.contains($0) })
        else { throw .invalidName("the name must be 1 to \(nameLimit) printable characters") }
        return trimmed
    }

    /// Whether the token may be used now for an operation that needs `scope`.
    public func check(_ scope: AdminScope, at now: Date) -> AdminAccessDecision {
        if revokedAt != nil { return .refused(.revoked) }
        if let expiresAt, expiresAt <= now { return .refused(.expired) }
        return scopes.contains(scope) ? .allowed : .forbidden(missing: scope)
    }
}

/// The answer to a request made with an admin token.
public enum AdminAccessDecision: Sendable, Equatable {
    case allowed
    /// Not authenticated (401): no token, an unknown one, or one that is revoked or expired.
    case refused(Refusal)
    /// Authenticated, but without the scope the operation needs (403).
    case forbidden(missing: AdminScope)

    public enum Refusal: String, Sendable, Equatable {
        case missing, unknown, revoked, expired
    }
}
