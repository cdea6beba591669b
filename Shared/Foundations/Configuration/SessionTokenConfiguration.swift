import Encoding
import Foundation

/// How sessions are handed out (docs/sessions.md): signed access tokens with refresh tokens, or opaque bearer
/// tokens. Read alike by the processes that issue sessions (session-service, verification-service); the gateway
/// reads the issuer for its discovery document.
public struct SessionTokenConfiguration: Sendable, Equatable {
    /// `PASSKEY_SESSION_TOKENS`.
    public enum Kind: String, Sendable, Equatable {
        /// Signed JWT access tokens and refresh tokens (the default).
        case jwt
        /// One opaque bearer token per session, as before.
        case opaque
    }

    public var kind: Kind
    /// `iss` (`PASSKEY_TOKEN_ISSUER`).
    public var issuer: String
    /// `aud` (`PASSKEY_TOKEN_AUDIENCE`).
    public var audience: String
    /// `client_id`: the relying party ID.
    public var clientID: String
    /// `PASSKEY_ACCESS_TOKEN_LIFETIME`, seconds.
    public var accessTokenLifetime: Double
    /// `PASSKEY_TOKEN_ALGORITHM`: `ES256` or `EdDSA`, for new keys.
    public var algorithm: String
    /// `PASSKEY_SESSION_IDLE_TIMEOUT`, seconds.
    public var idleTimeout: Double
    /// `PASSKEY_REFRESH_REUSE_WINDOW`, seconds.
    public var reuseWindow: Double
    /// `PASSKEY_SIGNING_KEY_PUBLISH_DELAY`, seconds: how long a rotated-in key is published before it signs.
    public var publishDelay: Double
    /// The key-encryption key read from `PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE` (32 bytes): the file's first key,
    /// the current one. With `jwt`, a process that issues sessions refuses to start without it
    /// (``requireKeyEncryptionKey()``).
    public var keyEncryptionKey: [UInt8]? { keyEncryptionKeys.first }
    /// Every key of the file, the current one first and then the previous ones a rotation keeps (docs/security.md):
    /// they still open what was sealed under them. Empty when the variable is unset.
    public var keyEncryptionKeys: [[UInt8]] = []

    public init(_ env: EnvironmentReader) throws {
        switch env.string("PASSKEY_SESSION_TOKENS", default: "jwt") {
        case "jwt": kind = .jwt
        case "opaque": kind = .opaque
        case let other:
            throw ConfigurationError(
                variable: "PASSKEY_SESSION_TOKENS", problem: "expected jwt or opaque, got \(other.prefix(40))")
        }
        issuer = try env.tokenIssuer()
        audience = env.string("PASSKEY_TOKEN_AUDIENCE", default: issuer)
        guard !audience.isEmpty, audience.utf8.count <= 256 else {
            throw ConfigurationError(variable: "PASSKEY_TOKEN_AUDIENCE", problem: "expected 1 to 256 characters")
        }
        clientID = try env.relyingPartyID()
        accessTokenLifetime = try env.duration("PASSKEY_ACCESS_TOKEN_LIFETIME", default: "10m")
        guard (30...86_400).contains(accessTokenLifetime) else {
            throw ConfigurationError(variable: "PASSKEY_ACCESS_TOKEN_LIFETIME", problem: "expected 30s to 1d")
        }
        algorithm = env.string("PASSKEY_TOKEN_ALGORITHM", default: "ES256")
        guard ["ES256", "EdDSA"].contains(algorithm) else {
            throw ConfigurationError(
                variable: "PASSKEY_TOKEN_ALGORITHM", problem: "expected ES256 or EdDSA, got \(algorithm.prefix(40))")
        }
        idleTimeout = try env.duration("PASSKEY_SESSION_IDLE_TIMEOUT", default: "7d")
        reuseWindow = try env.duration("PASSKEY_REFRESH_REUSE_WINDOW", default: "10s", allowingZero: true)
        guard reuseWindow <= 300 else {
            throw ConfigurationError(variable: "PASSKEY_REFRESH_REUSE_WINDOW", problem: "expected at most 5m")
        }
        publishDelay = try env.duration("PASSKEY_SIGNING_KEY_PUBLISH_DELAY", default: "10m")
        // A new key reaches the issuers and the gateway's JWKS within their reloads (5 s and 2 s): a shorter delay
        // would let tokens out before even the gateway publishes their key.
        guard (10...86_400).contains(publishDelay) else {
            throw ConfigurationError(variable: "PASSKEY_SIGNING_KEY_PUBLISH_DELAY", problem: "expected 10s to 1d")
        }
        let variable = "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE"
        if let path = env.raw(variable) {
            guard let data = FileManager.default.contents(atPath: path), data.count <= 4096 else {
                throw ConfigurationError(variable: variable, problem: "cannot read \(path)")
            }
            guard let keys = Self.keyRing(String(decoding: data, as: UTF8.self)) else {
                throw ConfigurationError(
                    variable: variable,
                    problem: "\(path) must hold 1 to \(Self.keyRingCapacity) different keys, one a line, each 32 bytes "
                        + "as 64 hex digits or base64")
            }
            keyEncryptionKeys = keys
        }
    }

    /// The most keys the file may hold: the current one and the previous ones of a rotation.
    public static let keyRingCapacity = 8

    /// The process's key ring: the file's keys, the current first. Every process that issues sessions or one-time
    /// codes, or keeps webhook secrets, needs it in either token mode: it seals one-time codes in the outbox and
    /// webhook secrets, and keys the digests of one-time codes (docs/security.md).
    public func requireKeyEncryptionKeys() throws -> [[UInt8]] {
        guard !keyEncryptionKeys.isEmpty else {
            throw ConfigurationError(
                variable: "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE",
                problem: "is required: a file holding 32 random bytes (openssl rand -hex 32)")
        }
        return keyEncryptionKeys
    }

    /// The key-encryption key, which a process that issues signed sessions cannot start without.
    public func requireKeyEncryptionKey() throws -> [UInt8] {
        guard let keyEncryptionKey else {
            throw ConfigurationError(
                variable: "PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE",
                problem:
                    "is required with PASSKEY_SESSION_TOKENS=jwt: a file holding 32 random bytes (openssl rand -hex 32)"
            )
        }
        return keyEncryptionKey
    }

    /// The keys of a key file: one a line (blank lines and lines starting with `#` skipped), each as ``keyBytes(_:)``
    /// reads it, the current one first; nil when there is none, one does not read, two are equal, or there are more
    /// than ``keyRingCapacity``.
    static func keyRing(_ text: String) -> [[UInt8]]? {
        var keys: [[UInt8]] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
            guard let key = keyBytes(trimmed), !keys.contains(key) else { return nil }
            keys.append(key)
        }
        return (1...keyRingCapacity).contains(keys.count) ? keys : nil
    }

    /// 32 bytes from 64 hex digits or base64/base64url text (whitespace around it ignored); nil otherwise.
    static func keyBytes(_ text: String) -> [UInt8]? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let bytes =
            trimmed.utf8.count == 64
            ? Hex.decode(trimmed)
            : Base64URL.decode(trimmed)
        return bytes?.count == 32 ? bytes : nil
    }
}

extension EnvironmentReader {
    /// `PASSKEY_TOKEN_ISSUER`: the `iss` of access tokens and of the discovery document; by default the first web
    /// origin of `PASSKEY_ORIGINS`.
    public func tokenIssuer() throws -> String {
        let fallback = try origins().first { $0.hasPrefix("https://") || $0.hasPrefix("http://") } ?? "http://localhost"
        let issuer = string("PASSKEY_TOKEN_ISSUER", default: fallback)
        guard issuer.hasPrefix("https://") || issuer.hasPrefix("http://"), issuer.utf8.count <= 256,
            !issuer.contains("?"), !issuer.contains("#")
        else {
            throw ConfigurationError(
                variable: "PASSKEY_TOKEN_ISSUER", problem: "expected an https:// URL without query")
        }
        return issuer
    }
}
