import Foundation
import JSON

/// Rows as a table with a header, columns padded to their widest cell; every cell made printable.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows.map { $0.map(Printable.text) }
    let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
        row.enumerated().map { index, cell in
            index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}

/// The admin API's documents as the tables and lines `passkey-admin` prints without `--json`.
enum AdminTables {
    /// A member as text: a string as it is, a number without a fraction, a boolean as yes/no, null or absent as `-`.
    static func cell(_ value: JSONValue?) -> String {
        switch value {
        case .string(let text)?: text.isEmpty ? "-" : text
        case .number(let number)?:
            number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .boolean(let flag)?: flag ? "yes" : "no"
        case .array(let items)?: items.isEmpty ? "-" : items.map { cell($0) }.joined(separator: ",")
        case .object(let object)?:
            object.count == 0 ? "-" : object.map { "\($0.key)=\(cell($0.value))" }.joined(separator: " ")
        case .null?, nil: "-"
        }
    }

    /// `GET /admin/v1/accounts`: one row per account.
    static func accounts(_ document: JSONValue) -> String {
        let accounts = document["accounts"]?.arrayValue ?? []
        if accounts.isEmpty { return "no account found" }
        return table(
            ["ACCOUNT ID", "DISPLAY NAME", "CREATED", "PASSWORD", "PASSKEYS", "STATE", "EMAILS"],
            accounts.map {
                [
                    cell($0["accountID"]), cell($0["displayName"]), cell($0["createdAt"]), cell($0["hasPassword"]),
                    cell($0["passkeyCount"]), $0["disabledAt"]?.stringValue == nil ? "enabled" : "disabled",
                    cell($0["emails"]),
                ]
            })
    }

    /// `GET /admin/v1/accounts/{accountID}`: the account's fields, then its emails, passkeys and sessions.
    static func detail(_ document: JSONValue) -> String {
        var sections: [String] = [
            table(
                ["ACCOUNT ID", "DISPLAY NAME", "CREATED", "DISABLED", "SIGN-IN METHODS", "RECOVERY CODES LEFT"],
                [
                    [
                        cell(document["accountID"]), cell(document["displayName"]), cell(document["createdAt"]),
                        cell(document["disabledAt"]), cell(document["signInMethods"]),
                        cell(document["recoveryCodesRemaining"]),
                    ]
                ])
        ]
        let emails = document["emails"]?.arrayValue ?? []
        sections.append(
            emails.isEmpty
                ? "emails: none"
                : table(["EMAIL", "VERIFIED"], emails.map { [cell($0["address"]), cell($0["verified"])] }))
        let passkeys = document["passkeys"]?.arrayValue ?? []
        sections.append(
            passkeys.isEmpty
                ? "passkeys: none"
                : table(
                    ["CREDENTIAL ID", "NAME", "PROVIDER", "CREATED", "LAST USED", "BACKED UP", "CLONE WARNING"],
                    passkeys.map { passkey in
                        [
                            cell(passkey["credentialID"]), cell(passkey["name"]), cell(passkey["providerName"]),
                            cell(passkey["createdAt"]), cell(passkey["lastUsedAt"]),
                            passkey["backupEligible"]?.boolValue == true ? cell(passkey["backedUp"]) : "not eligible",
                            cell(passkey["cloneWarning"]),
                        ]
                    }))
        let sessions = document["sessions"]?.arrayValue ?? []
        sections.append(
            sessions.isEmpty
                ? "sessions: none live"
                : table(
                    ["SESSION ID", "METHOD", "CREATED", "EXPIRES"],
                    sessions.map {
                        [cell($0["sessionID"]), cell($0["method"]), cell($0["createdAt"]), cell($0["expiresAt"])]
                    }
                ))
        return sections.joined(separator: "\n\n")
    }

    /// `GET /admin/v1/audit-events`: one row per event, then the next page's `--before` when there is one.
    static func events(_ document: JSONValue) -> String {
        let events = document["events"]?.arrayValue ?? []
        var text =
            events.isEmpty
            ? "no audit events"
            : table(
                ["ID", "OCCURRED", "TYPE", "ACCOUNT ID", "ACTOR", "ACTOR ID", "CLIENT", "DETAIL"],
                events.map { event in
                    [
                        cell(event["id"]), cell(event["occurredAt"]), cell(event["type"]), cell(event["accountID"]),
                        cell(event["actor"]), cell(event["actorID"]), cell(event["clientAddress"]),
                        cell(event["detail"]),
                    ]
                })
        if let next = document["nextBefore"], !next.isNull { text += "\nmore: --before \(cell(next))" }
        return text
    }

    /// `GET /admin/v1/webhooks`: one row per endpoint.
    static func webhooks(_ document: JSONValue) -> String {
        let hooks = document["webhooks"]?.arrayValue ?? []
        if hooks.isEmpty { return "no webhook endpoint" }
        return table(
            ["WEBHOOK ID", "STATE", "PENDING", "EVENT TYPES", "URL"],
            hooks.map { hook in
                let state =
                    hook["disabledAt"]?.stringValue != nil
                    ? "disabled" : hook["failingSince"]?.stringValue != nil ? "failing" : "enabled"
                return [
                    cell(hook["webhookID"]), state, cell(hook["pendingDeliveries"]), cell(hook["eventTypes"]),
                    cell(hook["url"]),
                ]
            })
    }

    /// `GET /admin/v1/signing-keys`: one row per key.
    static func signingKeys(_ document: JSONValue) -> String {
        let keys = document["keys"]?.arrayValue ?? []
        if keys.isEmpty { return "no signing key" }
        return table(
            ["KEY ID", "ALGORITHM", "STATE", "CREATED", "ACTIVATES", "RETIRED"],
            keys.map { key in
                [
                    cell(key["keyID"]), cell(key["algorithm"]), cell(key["state"]), cell(key["createdAt"]),
                    cell(key["activatesAt"]), cell(key["retiredAt"]),
                ]
            })
    }
}
