import Foundation

/// What `passkey-admin` prints for a usage error and for `help`.
let usage = """
    usage: passkey-admin token create --name NAME --scopes SCOPES [--expires-in DURATION] [--json]
           passkey-admin token list [--json]
           passkey-admin token revoke ID [--json]
           passkey-admin accounts find (--email ADDRESS | --account-id ACCOUNT | --credential-id CREDENTIAL |
                                        --external-id ID) [--json]
           passkey-admin accounts list [--has-password true|false] [--has-passkey true|false] [--disabled true|false]
                                       [--created-since TIME] [--created-until TIME] [--after CURSOR] [--limit 1-200]
                                       [--json]
           passkey-admin account show ACCOUNT [--json]
           passkey-admin account disable ACCOUNT [--json]
           passkey-admin account enable ACCOUNT [--json]
           passkey-admin account reset-password ACCOUNT [--json]
           passkey-admin account erase ACCOUNT --yes [--json]
           passkey-admin account send-recovery|send-verification ACCOUNT [--email ADDRESS] [--json]
           passkey-admin sessions revoke ACCOUNT [SESSION] [--json]
           passkey-admin passkey remove ACCOUNT CREDENTIAL [--override-last-sign-in-method [--no-recovery-email]]
                                        [--json]
           passkey-admin audit events [--account ACCOUNT] [--type TYPE]... [--since TIME] [--until TIME]
                                      [--before ID] [--limit 1-500] [--json]
           passkey-admin webhooks list [--json]
           passkey-admin webhook create --url URL --type TYPE... [--description TEXT] [--json]
           passkey-admin webhook show|delete|enable WEBHOOK [--json]
           passkey-admin keys list|rotate [--json]
           passkey-admin keys retire KEY [--json]
           passkey-admin doctor https://RP-ID[:PORT] [--env-file FILE] [--ca-file PEM] [--address IP]
                                [--timeout 1-60] [--json]
           passkey-admin --version

    The token commands use DATABASE_URL; a new token is printed once, alone on the last line. SCOPES is a
    comma-separated list of read, write and erase; DURATION is like 90s, 12h or 30d.
    The other commands call the admin API at PASSKEY_ADMIN_URL (default http://127.0.0.1:8081) with the admin
    token in PASSKEY_ADMIN_TOKEN. ACCOUNT, SESSION and WEBHOOK are UUIDs, CREDENTIAL a credential ID in base64url. TIME is
    an RFC 3339 time (2025-01-31T12:00:00Z), a date (2025-01-31, midnight UTC), a time before now (90m, 24h, 7d)
    or Unix milliseconds. A webhook's TYPE is an audit event type or *; its signing secret is printed once. KEY is
    an access-token signing key's ID (its kid): keys rotate publishes a new key that signs after the publish delay,
    keys retire stops one signing once another does.
    Output is a table, or with --json the API's JSON.
    doctor checks a deployment from the outside as devices see it: the TLS certificate, apple-app-site-association,
    assetlinks.json, /.well-known/webauthn and /.well-known/passkey-endpoints at the relying party ID's host, against
    the deployment's KEY=VALUE file (--env-file: PASSKEY_RP_ID, PASSKEY_ORIGINS, PASSKEY_RELATED_ORIGINS,
    PASSKEY_APPLE_APP_IDS, PASSKEY_ANDROID_APPS, PASSKEY_ENROLL_PAGE, PASSKEY_MANAGE_PAGE). --ca-file trusts a private
    CA; --address connects there instead of resolving the host; --timeout bounds each fetch in seconds (10), as
    128 KB bounds its body; no redirect is followed. One line per finding with its fix; exit 0 when
    nothing failed (warnings allowed), 1 when a check failed, 2 usage.

    Exit statuses: 0 done; 1 failed (the database or the admin API unreachable, a 5xx, too many calls);
    2 usage (an unknown command or option, a value out of bounds, a variable unset or malformed, or a call the API
    found malformed); 3 not found; 4 refused by the admin API (401: no valid token; 403: the token lacks the
    scope); 5 a rule refused the change (409, for example the account's last sign-in method).
    """

/// `passkey-admin`'s exit statuses (docs/admin.md).
enum Exit: Int32 {
    case done = 0
    case failed = 1
    case usage = 2
    case notFound = 3
    case refused = 4
    case conflict = 5
}

/// Ends the process with `status`, after one line on stderr when there is a message.
func finish(_ status: Exit, _ message: String? = nil) -> Never {
    if let message { FileHandle.standardError.write(Data("passkey-admin: \(message)\n".utf8)) }
    exit(status.rawValue)
}
