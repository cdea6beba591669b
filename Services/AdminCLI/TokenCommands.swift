import AdminAccess
import Configuration
import Crypto
import Foundation
import JSON
import Observability
import Postgres
import PostgresStorage

/// `token create|list|revoke`: admin tokens made, listed and revoked in the database at `DATABASE_URL`, so that the
/// first token can be made before the admin API has any.
enum TokenCommands {
    static func run(_ arguments: ArraySlice<String>) async {
        guard let command = arguments.first else { finish(.usage, usage) }
        let rest = arguments.dropFirst()
        // Every change below is the CLI operator's, in the audit trail.
        let context = AuditContext(requestID: nil, clientAddress: nil, actor: .admin(tokenID: operatorName()))

        switch command {
        case "create":
            let options = Options(rest, valued: ["--name", "--scopes", "--expires-in"], flags: ["--json"])
            guard options.positional.isEmpty else {
                finish(.usage, "unexpected argument \(options.positional[0].prefix(40))")
            }
            guard let nameText = options.values["--name"], let scopeText = options.values["--scopes"] else {
                finish(.usage, "token create needs --name and --scopes\n\(usage)")
            }
            let name: String
            let scopes: [AdminScope]
            do {
                name = try AdminToken.validateName(nameText)
                scopes = try AdminScope.parseList(scopeText)
            } catch { finish(.usage, error.description) }
            var expiresAt: Date?
            if let expiry = options.values["--expires-in"] {
                guard let seconds = EnvironmentReader.parseDuration(expiry), seconds > 0, seconds <= 3 * 365 * 86_400
                else {
                    finish(.usage, "--expires-in must be a positive duration of at most 3 years, like 12h or 30d")
                }
                expiresAt = Date().addingTimeInterval(seconds)
            }
            let secret = AdminTokenSecret(random: SecureRandom())
            let token = AdminToken(
                id: secret.id, name: name, scopes: scopes, createdBy: operatorName(), createdAt: Date(),
                expiresAt: expiresAt)
            let (tokens, pool) = await openTokens()
            do {
                try await AuditContext.$current.withValue(context) {
                    try await tokens.create(token, digest: secret.digest)
                }
            } catch { databaseFailure(error) }
            pool.shutdown()
            if options.flags.contains("--json") {
                guard case .object(var object) = json(token) else { fatalError("a token is an object") }
                object["token"] = .string(secret.text)
                print(JSONWriter.string(.object(object)))
            } else {
                let scopeList = scopes.map(\.rawValue).joined(separator: ",")
                print(
                    "made admin token \(token.id) \"\(token.name)\" with scopes \(scopeList)"
                        + (expiresAt.map { ", expiring \(timeText($0))" } ?? ", never expiring"))
                print("it is shown only now; pass it as Authorization: Bearer TOKEN to the admin API:")
                print(secret.text)
            }

        case "list":
            let options = Options(rest, valued: [], flags: ["--json"])
            guard options.positional.isEmpty else {
                finish(.usage, "unexpected argument \(options.positional[0].prefix(40))")
            }
            let (repository, pool) = await openTokens()
            let tokens: [AdminToken]
            do { tokens = try await repository.list() } catch { databaseFailure(error) }
            pool.shutdown()
            if options.flags.contains("--json") {
                print(JSONWriter.string(.array(tokens.map(json))))
            } else {
                let now = Date()
                print(
                    table(
                        ["ID", "NAME", "SCOPES", "STATE", "CREATED", "EXPIRES", "LAST USED", "CREATED BY"],
                        tokens.map { token in
                            [
                                token.id, token.name, token.scopes.map(\.rawValue).joined(separator: ","),
                                state(of: token, at: now),
                                timeText(token.createdAt), timeText(token.expiresAt), timeText(token.lastUsedAt),
                                token.createdBy,
                            ]
                        }))
            }

        case "revoke":
            let options = Options(rest, valued: [], flags: ["--json"])
            guard options.positional.count == 1, let id = options.positional.first else {
                finish(.usage, "token revoke needs one token ID\n\(usage)")
            }
            guard id.utf8.count == 16, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else {
                finish(.usage, "a token ID is 16 lowercase hex digits")
            }
            let (tokens, pool) = await openTokens()
            let revoked: Bool
            do {
                revoked = try await AuditContext.$current.withValue(context) {
                    try await tokens.revoke(id: id, at: Date())
                }
            } catch { databaseFailure(error) }
            pool.shutdown()
            guard revoked else { finish(.notFound, "no active admin token \(id)") }
            print(
                options.flags.contains("--json")
                    ? JSONWriter.string(.object(JSONObject([("revoked", .string(id))]))) : "revoked admin token \(id)")

        default:
            finish(.usage, "unknown command token \(command.prefix(40))\n\(usage)")
        }
    }

    /// Storage on DATABASE_URL, once the database answers and takes writes.
    /// The admin tokens' repository on `DATABASE_URL`, and its pool (shut down when the command is done).
    static func openTokens() async -> (PostgresAdminTokenRepository, PostgresPool) {
        guard let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty else {
            finish(.usage, "DATABASE_URL is not set")
        }
        do {
            try PostgresStorage.checkURL(url)
        } catch { finish(.usage, "DATABASE_URL: \(error.description)") }
        let pool = PostgresPool(
            configuration: PostgresConfiguration(url: url, poolSize: 1, applicationName: "passkey-admin"))
        let storage = PostgresStorage(pool: pool)
        do {
            try await storage.checkConnectivity()
        } catch { finish(.failed, "DATABASE_URL: \(error.description)") }
        return (PostgresAdminTokenRepository(pool: pool), pool)
    }

    static func databaseFailure(_ error: Error) -> Never {
        finish(.failed, "the database refused the change: \(error)")
    }

    /// The CLI's operator as the audit trail names it: `cli:` and the login.
    static func operatorName() -> String {
        let account = getpwuid(getuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } }
        let login = ProcessInfo.processInfo.environment["USER"] ?? account ?? "uid \(getuid())"
        return "cli:"
            + String(
                login.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init).prefix(100))
    }

    static func timeText(_ date: Date?) -> String { date.map { $0.formatted(.iso8601) } ?? "-" }

    static func json(_ token: AdminToken) -> JSONValue {
        .object(
            JSONObject([
                ("id", .string(token.id)), ("name", .string(token.name)),
                ("scopes", .array(token.scopes.map { .string($0.rawValue) })), ("createdBy", .string(token.createdBy)),
                ("createdAt", .string(timeText(token.createdAt))),
                ("expiresAt", token.expiresAt.map { .string(timeText($0)) } ?? .null),
                ("revokedAt", token.revokedAt.map { .string(timeText($0)) } ?? .null),
                ("lastUsedAt", token.lastUsedAt.map { .string(timeText($0)) } ?? .null),
            ]))
    }

    static func state(of token: AdminToken, at now: Date) -> String {
        if token.revokedAt != nil { return "revoked" }
        if let expiresAt = token.expiresAt, expiresAt <= now { return "expired" }
        return "active"
    }
}
