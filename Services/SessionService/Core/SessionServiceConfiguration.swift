import Configuration

/// What session-service reads from the environment (docs/configuration.md, the rows read by `session-service`;
/// the webhook variables are read beside it, by `WebhookSettings`).
public struct SessionServiceConfiguration: ServiceConfiguration, Equatable {
    public static let service = GRPCServiceName.sessionService
    public var process: ServiceProcessConfiguration
    /// The name mails give the service.
    public var relyingPartyName: String
    /// Seconds a session issued by a password sign-in lasts.
    public var sessionLifetime: Double
    /// The sweep of the tables the service owns, and how long each kind of ended row is kept (seconds).
    public var sweep: SweepConfiguration
    public var sessionRetention: Double
    public var ceremonyRetention: Double
    public var auditRetention: Double
    /// Whether finishing a recovery revokes the account's other sessions.
    public var recoveryRevokesSessions: Bool
    public var mail: MailConfiguration
    /// Signed access tokens and refresh tokens, or opaque tokens (`PASSKEY_SESSION_TOKENS`, ...).
    public var sessionTokens: SessionTokenConfiguration

    public init(_ env: EnvironmentReader) throws {
        process = try ServiceProcessConfiguration(env, service: Self.service)
        relyingPartyName = env.relyingPartyName()
        sessionLifetime = try env.sessionLifetime()
        sweep = try SweepConfiguration(env)
        sessionRetention = try env.duration("PASSKEY_SESSION_RETENTION", default: "7d", allowingZero: true)
        ceremonyRetention = try env.ceremonyRetention()
        auditRetention = try env.duration("PASSKEY_AUDIT_RETENTION", default: "365d")
        recoveryRevokesSessions = try env.flag("PASSKEY_RECOVERY_REVOKES_SESSIONS", default: true)
        mail = try MailConfiguration(env)
        sessionTokens = try SessionTokenConfiguration(env)
    }
}

/// The mail relay session-service sends recovery and verification mail through (`SMTP_*`).
public struct MailConfiguration: Sendable, Equatable {
    /// `smtp://host[:port]` or `smtps://host[:port]`; nil: session-service sends no mail, and queued messages wait
    /// in the outbox.
    public var url: String?
    /// The relay's AUTH credentials, when it wants them.
    public var username: String?
    public var password: String?
    /// The `From` address of every message; `no-reply@` the relying party's domain unless set.
    public var from: String
    /// Whether a `smtp://` relay must upgrade with STARTTLS before anything, AUTH included, is sent.
    public var requireStartTLS: Bool
    /// Certificate authorities to trust for the relay instead of the system's.
    public var caFile: String?

    public init(_ env: EnvironmentReader) throws {
        url = env.raw("SMTP_URL")
        if let url, !Self.isValidSMTPURL(url) {
            throw ConfigurationError(
                variable: "SMTP_URL", problem: "expected smtp://host[:port] or smtps://host[:port], got \(url)")
        }
        username = env.raw("SMTP_USERNAME")
        password = env.raw("SMTP_PASSWORD")
        guard password == nil || username != nil else {
            throw ConfigurationError(variable: "SMTP_USERNAME", problem: "is required when SMTP_PASSWORD is set")
        }
        let relyingPartyID = try env.relyingPartyID()
        from = env.raw("SMTP_FROM") ?? "no-reply@\(relyingPartyID)"
        guard Self.isValidMailbox(from) else {
            throw ConfigurationError(
                variable: "SMTP_FROM", problem: "expected an address like no-reply@example.com, got \(from)")
        }
        switch env.string("SMTP_STARTTLS", default: "required") {
        case "required": requireStartTLS = true
        case "off": requireStartTLS = false
        case let other:
            throw ConfigurationError(variable: "SMTP_STARTTLS", problem: "expected required or off, got \(other)")
        }
        caFile = env.raw("SMTP_CA_FILE")
    }

    static func isValidSMTPURL(_ url: String) -> Bool {
        let scheme = url.hasPrefix("smtps://") ? "smtps://" : url.hasPrefix("smtp://") ? "smtp://" : nil
        guard let scheme else { return false }
        let rest = url.dropFirst(scheme.count)
        guard !rest.contains("@"), !rest.contains("?"), !rest.contains("#"),
            let authority = rest.split(separator: "/", omittingEmptySubsequences: false).first, !authority.isEmpty
        else { return false }
        return rest.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value != 0x7F }
    }

    static func isValidMailbox(_ address: String) -> Bool {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && address.utf8.count <= 254
            && address.unicodeScalars.allSatisfy {
                $0.isASCII && $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">"
            }
    }
}
