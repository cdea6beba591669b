import AdminAccess
import CurlTransport
import Foundation
import JSON

/// The admin API as the command line calls it: the address from `PASSKEY_ADMIN_URL` and the token from
/// `PASSKEY_ADMIN_TOKEN`, which is sent only in the `Authorization` header and never printed.
struct AdminAPI {
    let address: AdminAPIAddress
    let token: String

    /// The API the environment names; a variable unset or malformed ends the process with status 2.
    static func fromEnvironment() -> AdminAPI {
        let environment = ProcessInfo.processInfo.environment
        let url = environment["PASSKEY_ADMIN_URL"] ?? AdminAPIAddress.defaultURL
        let address: AdminAPIAddress
        do {
            address = try AdminAPIAddress(url: url.isEmpty ? AdminAPIAddress.defaultURL : url)
        } catch { finish(.usage, "PASSKEY_ADMIN_URL \(error.reason)") }
        guard let token = environment["PASSKEY_ADMIN_TOKEN"], !token.isEmpty else {
            finish(
                .usage,
                "PASSKEY_ADMIN_TOKEN is not set: the admin API takes an admin token (passkey-admin token create)")
        }
        guard AdminTokenSecret(presented: token) != nil else {
            finish(
                .usage, "PASSKEY_ADMIN_TOKEN is not an admin token (pkadm_, 16 hex digits, _, 43 base64url characters)")
        }
        return AdminAPI(address: address, token: token)
    }

    /// The answer to `method path?query` when it is a success; any other answer, or none, ends the process with its
    /// exit status and one line on stderr.
    func call(_ method: String, _ path: String, query: [(String, String)] = [], body: [UInt8] = []) -> HTTPResponse {
        let target =
            query.isEmpty
            ? path : path + "?" + query.map { "\(Self.escaped($0.0))=\(Self.escaped($0.1))" }.joined(separator: "&")
        let response: HTTPResponse
        do {
            response = try AdminHTTPClient.send(method: method, target: target, bearer: token, body: body, to: address)
        } catch { finish(.failed, "the admin API at \(address.authority) (PASSKEY_ADMIN_URL): \(error.description)") }
        guard (200..<300).contains(response.status) else { Self.refuse(response) }
        return response
    }

    /// The answer's JSON document; a success that is not JSON is a failure.
    func document(_ response: HTTPResponse) -> JSONValue {
        do { return try JSONReader.parse(response.body) } catch {
            finish(.failed, "the admin API's answer (\(response.status)) is not JSON")
        }
    }

    /// Ends the process for an answer that is not a success: one line with the status, the problem's code and its
    /// detail, and the exit status for that kind of refusal.
    static func refuse(_ response: HTTPResponse) -> Never {
        let problem = try? JSONReader.parse(response.body)
        let code = problem?["code"]?.stringValue.map { " " + Printable.clip($0, 64) } ?? ""
        let detail =
            (problem?["detail"]?.stringValue ?? problem?["title"]?.stringValue).map { ": " + Printable.clip($0, 300) }
            ?? ""
        let status: Exit
        var hint = ""
        switch response.status {
        case 400: status = .usage
        case 401:
            status = .refused
            hint = " (PASSKEY_ADMIN_TOKEN is unknown, revoked or expired)"
        case 403:
            status = .refused
            hint = " (the token in PASSKEY_ADMIN_TOKEN lacks the scope)"
        case 404: status = .notFound
        case 409, 412, 422: status = .conflict
        case 429:
            status = .failed
            hint = response.headers["retry-after"].map { " (retry after \(Printable.clip($0, 12)) s)" } ?? ""
        default: status = .failed
        }
        finish(status, "the admin API answered \(response.status)\(code)\(detail)\(hint)")
    }

    /// `text` percent-encoded for a path segment or a query: every byte but the unreserved ones.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        for byte in text.utf8 {
            if (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            {
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                escaped += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return escaped
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

/// The commands over the admin API: `accounts find`, `account show|disable|enable|erase`, `sessions revoke`,
/// `passkey remove` and `audit events`. Every argument is checked before the environment is read and before any
/// request is made.
enum AdminAPICommands {
    static let words: Set<String> = [
        "accounts", "account", "sessions", "passkey", "audit", "webhooks", "webhook", "keys",
    ]

    static func run(_ arguments: [String]) {
        guard arguments.count >= 2 else { finish(.usage, usage) }
        let command = "\(arguments[0]) \(arguments[1])"
        let rest = arguments.dropFirst(2)
        switch command {
        case "accounts find": findAccounts(rest)
        case "accounts list": listAccounts(rest)
        case "account show": showAccount(rest)
        case "account disable", "account enable": setDisabled(rest, disabled: arguments[1] == "disable")
        case "account erase": eraseAccount(rest)
        case "account reset-password": resetPassword(rest)
        case "account send-recovery", "account send-verification":
            sendEmail(rest, purpose: arguments[1] == "send-recovery" ? "recovery" : "verification")
        case "sessions revoke": revokeSessions(rest)
        case "passkey remove": removePasskey(rest)
        case "audit events": auditEvents(rest)
        case "webhooks list": listWebhooks(rest)
        case "webhook create": createWebhook(rest)
        case "webhook show": showWebhook(rest)
        case "webhook delete", "webhook enable": changeWebhook(rest, verb: arguments[1])
        case "keys list", "keys rotate": signingKeys(rest, verb: arguments[1])
        case "keys retire": retireSigningKey(rest)
        default: finish(.usage, "unknown command \(Printable.clip(command, 60))\n\(usage)")
        }
    }

    static func emit(_ api: AdminAPI, _ response: HTTPResponse, json: Bool, table: (JSONValue) -> String) {
        let document = api.document(response)
        print(json ? String(decoding: response.body, as: UTF8.self) : table(document))
    }

    static func findAccounts(_ arguments: ArraySlice<String>) {
        let options = Options(
            arguments, valued: ["--email", "--account-id", "--credential-id", "--external-id"], flags: ["--json"])
        _ = options.positional(0...0, "accounts find takes no arguments")
        var query: [(String, String)] = []
        if let email = options.values["--email"] { query.append(("email", ArgumentCheck.email(email))) }
        if let account = options.values["--account-id"] {
            query.append(("accountID", ArgumentCheck.uuid(account, "--account-id")))
        }
        if let credential = options.values["--credential-id"] {
            query.append(("credentialID", ArgumentCheck.credentialID(credential)))
        }
        if let external = options.values["--external-id"] {
            guard (1...256).contains(external.count) else { finish(.usage, "--external-id is 1 to 256 characters") }
            query.append(("externalID", external))
        }
        guard query.count == 1 else {
            finish(
                .usage,
                "accounts find needs exactly one of --email, --account-id, --credential-id and --external-id\n\(usage)")
        }
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("GET", "/admin/v1/accounts", query: query), json: options.json, table: AdminTables.accounts)
    }

    /// Every account, oldest first, a page at a time; the next page's `--after` is printed last when the page is full.
    static func listAccounts(_ arguments: ArraySlice<String>) {
        let options = Options(
            arguments,
            valued: [
                "--has-password", "--has-passkey", "--disabled", "--created-since", "--created-until", "--after",
                "--limit",
            ],
            flags: ["--json"])
        _ = options.positional(0...0, "accounts list takes no arguments")
        var query: [(String, String)] = []
        for (option, name) in [
            ("--has-password", "hasPassword"), ("--has-passkey", "hasPasskey"), ("--disabled", "disabled"),
        ] {
            guard let value = options.values[option] else { continue }
            guard value == "true" || value == "false" else { finish(.usage, "\(option) is true or false") }
            query.append((name, value))
        }
        let since = options.values["--created-since"].map { ArgumentCheck.time($0, "--created-since") }
        let until = options.values["--created-until"].map { ArgumentCheck.time($0, "--created-until") }
        if let since, let until, since >= until {
            finish(.usage, "--created-since must be earlier than --created-until")
        }
        if let since { query.append(("createdSince", String(since))) }
        if let until { query.append(("createdUntil", String(until))) }
        if let after = options.values["--after"] {
            guard (1...60).contains(after.utf8.count), after.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                finish(.usage, "--after is the cursor a previous page printed")
            }
            query.append(("after", after))
        }
        if let limit = options.values["--limit"] {
            query.append(("limit", String(ArgumentCheck.integer(limit, in: 1...200, "--limit"))))
        }
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("GET", "/admin/v1/accounts", query: query), json: options.json) { document in
            AdminTables.accounts(document)
                + (document["nextAfter"]?.stringValue.map { "\nmore: --after \($0)" } ?? "")
        }
    }

    static func showAccount(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let account = ArgumentCheck.uuid(options.positional(1...1, "account show needs one account ID")[0], "ACCOUNT")
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("GET", "/admin/v1/accounts/\(account)"), json: options.json, table: AdminTables.detail)
    }

    static func setDisabled(_ arguments: ArraySlice<String>, disabled: Bool) {
        let verb = disabled ? "disable" : "enable"
        let options = Options(arguments, valued: [], flags: ["--json"])
        let account = ArgumentCheck.uuid(
            options.positional(1...1, "account \(verb) needs one account ID")[0], "ACCOUNT")
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("POST", "/admin/v1/accounts/\(account)/\(verb)"), json: options.json) { document in
            guard document["changed"]?.boolValue == true else {
                return "account \(account) was already \(verb)d"
            }
            let revoked = AdminTables.cell(document["sessionsRevoked"])
            return disabled
                ? "disabled account \(account); revoked \(revoked) live session(s)" : "enabled account \(account)"
        }
    }

    /// A forced password reset: the password voided, every session ended, a recovery code sent.
    static func resetPassword(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let account = ArgumentCheck.uuid(
            options.positional(1...1, "account reset-password needs one account ID")[0], "ACCOUNT")
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("POST", "/admin/v1/accounts/\(account)/password-reset"), json: options.json) { document in
            let voided = document["passwordVoided"]?.boolValue == true ? "voided its password" : "it had no password"
            return "reset account \(account): \(voided); revoked \(AdminTables.cell(document["sessionsRevoked"])) "
                + "live session(s); recovery code sent to \(AdminTables.cell(document["sentTo"]))"
        }
    }

    /// A recovery or verification code for the account, to `--email` or its first address that qualifies.
    static func sendEmail(_ arguments: ArraySlice<String>, purpose: String) {
        let options = Options(arguments, valued: ["--email"], flags: ["--json"])
        let account = ArgumentCheck.uuid(
            options.positional(1...1, "account send-\(purpose) needs one account ID")[0], "ACCOUNT")
        let query = options.values["--email"].map { [("email", ArgumentCheck.email($0))] } ?? []
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("POST", "/admin/v1/accounts/\(account)/\(purpose)-email", query: query), json: options.json)
        {
            "sent a \(purpose) code to \(AdminTables.cell($0["sentTo"]))"
        }
    }

    static func eraseAccount(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json", "--yes"])
        let account = ArgumentCheck.uuid(options.positional(1...1, "account erase needs one account ID")[0], "ACCOUNT")
        guard options.flags.contains("--yes") else {
            finish(.usage, "account erase deletes every row of the account and cannot be undone: add --yes to go ahead")
        }
        let api = AdminAPI.fromEnvironment()
        _ = api.call("DELETE", "/admin/v1/accounts/\(account)")
        print(
            options.json
                ? JSONWriter.string(.object(JSONObject([("erased", .string(account))]))) : "erased account \(account)")
    }

    static func revokeSessions(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let positional = options.positional(1...2, "sessions revoke needs an account ID and optionally a session ID")
        let account = ArgumentCheck.uuid(positional[0], "ACCOUNT")
        let session = positional.count == 2 ? ArgumentCheck.uuid(positional[1], "SESSION") : nil
        let api = AdminAPI.fromEnvironment()
        let path = "/admin/v1/accounts/\(account)/sessions" + (session.map { "/\($0)" } ?? "")
        emit(api, api.call("DELETE", path), json: options.json) { document in
            let revoked = AdminTables.cell(document["revoked"])
            return session.map { "revoked session \($0) of account \(account)" }
                ?? "revoked \(revoked) live session(s) of account \(account)"
        }
    }

    static func removePasskey(_ arguments: ArraySlice<String>) {
        let options = Options(
            arguments, valued: [], flags: ["--json", "--override-last-sign-in-method", "--no-recovery-email"])
        let positional = options.positional(2...2, "passkey remove needs an account ID and a credential ID")
        let account = ArgumentCheck.uuid(positional[0], "ACCOUNT")
        let credential = ArgumentCheck.credentialID(positional[1])
        let override = options.flags.contains("--override-last-sign-in-method")
        var query = override ? [("override", "lastSignInMethod")] : []
        if options.flags.contains("--no-recovery-email") { query.append(("recoveryEmail", "false")) }
        let api = AdminAPI.fromEnvironment()
        _ = api.call("DELETE", "/admin/v1/accounts/\(account)/passkeys/\(credential)", query: query)
        if options.json {
            print(
                JSONWriter.string(
                    .object(
                        JSONObject([
                            ("removed", .string(credential)), ("accountID", .string(account)),
                            ("override", .boolean(override)),
                        ]))))
        } else {
            print("removed passkey \(credential) from account \(account)" + (override ? " (last sign-in method)" : ""))
        }
    }

    static func auditEvents(_ arguments: ArraySlice<String>) {
        let options = Options(
            arguments, valued: ["--account", "--since", "--until", "--before", "--limit"], repeatable: ["--type"],
            flags: ["--json"])
        _ = options.positional(0...0, "audit events takes no arguments")
        var query: [(String, String)] = []
        if let account = options.values["--account"] {
            query.append(("accountID", ArgumentCheck.uuid(account, "--account")))
        }
        let types = (options.repeated["--type"] ?? []).flatMap {
            $0.split(separator: ",", omittingEmptySubsequences: false)
        }
        guard types.count <= 32 else { finish(.usage, "--type: at most 32 event types") }
        for type in types { query.append(("type", ArgumentCheck.eventType(String(type)))) }
        let since = options.values["--since"].map { ArgumentCheck.time($0, "--since") }
        let until = options.values["--until"].map { ArgumentCheck.time($0, "--until") }
        if let since, let until, since >= until { finish(.usage, "--since must be earlier than --until") }
        if let since { query.append(("since", String(since))) }
        if let until { query.append(("until", String(until))) }
        if let before = options.values["--before"] {
            query.append(("before", String(ArgumentCheck.integer(before, in: 1...Int64.max, "--before"))))
        }
        if let limit = options.values["--limit"] {
            query.append(("limit", String(ArgumentCheck.integer(limit, in: 1...500, "--limit"))))
        }
        let api = AdminAPI.fromEnvironment()
        emit(
            api, api.call("GET", "/admin/v1/audit-events", query: query), json: options.json, table: AdminTables.events)
    }

    static func listWebhooks(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        _ = options.positional(0...0, "webhooks list takes no arguments")
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("GET", "/admin/v1/webhooks"), json: options.json, table: AdminTables.webhooks)
    }

    /// Registers an endpoint; the secret is printed once, alone on the last line (or in the JSON).
    static func createWebhook(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: ["--url", "--description"], repeatable: ["--type"], flags: ["--json"])
        _ = options.positional(0...0, "webhook create takes no arguments")
        guard let url = options.values["--url"], !url.isEmpty, url.utf8.count <= 2048 else {
            finish(.usage, "webhook create needs --url of 1 to 2048 bytes\n\(usage)")
        }
        let types = (options.repeated["--type"] ?? []).flatMap { $0.split(separator: ",").map(String.init) }
        guard (1...64).contains(types.count) else {
            finish(.usage, "webhook create needs 1 to 64 --type values (or *)")
        }
        for type in types where type != "*" { _ = ArgumentCheck.eventType(type) }
        let description = options.values["--description"] ?? ""
        guard description.count <= 256 else { finish(.usage, "--description: at most 256 characters") }
        let body = JSONWriter.string(
            .object(
                JSONObject([
                    ("url", .string(url)), ("eventTypes", .array(types.map { .string($0) })),
                    ("description", .string(description)),
                ])))
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("POST", "/admin/v1/webhooks", body: Array(body.utf8)), json: options.json) { document in
            AdminTables.webhooks(.object(["webhooks": .array([document])]))
                + "\nthe signing secret, shown once:\n\(AdminTables.cell(document["secret"]))"
        }
    }

    static func showWebhook(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let id = ArgumentCheck.uuid(options.positional(1...1, "webhook show needs one webhook ID")[0], "WEBHOOK")
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("GET", "/admin/v1/webhooks/\(id)"), json: options.json) { document in
            AdminTables.webhooks(.object(["webhooks": .array([document])]))
                + (document["disabledReason"]?.stringValue.map { "\ndisabled: \(Printable.text($0))" } ?? "")
        }
    }

    static func changeWebhook(_ arguments: ArraySlice<String>, verb: String) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let id = ArgumentCheck.uuid(options.positional(1...1, "webhook \(verb) needs one webhook ID")[0], "WEBHOOK")
        let api = AdminAPI.fromEnvironment()
        if verb == "delete" {
            _ = api.call("DELETE", "/admin/v1/webhooks/\(id)")
            print(
                options.json
                    ? JSONWriter.string(.object(JSONObject([("deleted", .string(id))]))) : "deleted webhook \(id)")
        } else {
            emit(api, api.call("POST", "/admin/v1/webhooks/\(id)/enable"), json: options.json) { document in
                document["changed"]?.boolValue == true ? "enabled webhook \(id)" : "webhook \(id) was already enabled"
            }
        }
    }

    /// `keys list` and `keys rotate`: the access-token signing keys, and a new one rotated in.
    static func signingKeys(_ arguments: ArraySlice<String>, verb: String) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        _ = options.positional(0...0, "keys \(verb) takes no arguments")
        let api = AdminAPI.fromEnvironment()
        if verb == "list" {
            emit(api, api.call("GET", "/admin/v1/signing-keys"), json: options.json, table: AdminTables.signingKeys)
        } else {
            emit(api, api.call("POST", "/admin/v1/signing-keys"), json: options.json) { document in
                AdminTables.signingKeys(.object(["keys": .array([document])]))
            }
        }
    }

    /// `keys retire KEY`: the key stops signing and stays published until its last token has expired.
    static func retireSigningKey(_ arguments: ArraySlice<String>) {
        let options = Options(arguments, valued: [], flags: ["--json"])
        let id = options.positional(1...1, "keys retire needs one key ID")[0]
        guard (1...128).contains(id.utf8.count),
            id.unicodeScalars.allSatisfy({
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_".unicodeScalars.contains($0))
            })
        else { finish(.usage, "KEY must be a key ID as keys list prints it") }
        let api = AdminAPI.fromEnvironment()
        emit(api, api.call("POST", "/admin/v1/signing-keys/\(id)/retire"), json: options.json) { document in
            AdminTables.signingKeys(.object(["keys": .array([document])]))
        }
    }
}
