import Domain
import JSON
import Observability
import Postgres

/// Security notifications (migration 0019): a message to every verified address of an account whose factors changed,
/// queued in `email_outbox` by the statement or transaction that makes the change, beside its audit row, so that it
/// exists exactly when the change committed. It carries no secret: the template, and in `notice` when the change
/// happened, the client address it came from and the passkey's name when it concerns one. A notification not
/// delivered within a day is given up.
///
/// Made where the call's `AuditContext` is readable (before a transaction's closure, which runs on a database
/// thread), as ``AuditTrail``'s rows are.
struct SecurityNotices {
    /// The client address of the call being served (the gateway's, as `AuditContext.current` has it).
    let clientAddress: String?

    init(context: AuditContext = .current) { clientAddress = AuditTrail.bounded(context.clientAddress, 64) }

    /// `INSERT INTO email_outbox … SELECT`: the notice for each row of `source` (a CTE whose `account_id` column
    /// names the account), as a data-modifying CTE of the change's statement.
    func rows(_ template: MailTemplate, from source: String) -> PostgresQuery {
        """
        INSERT INTO email_outbox (id, recipient, template, notice, expires_at)
        SELECT gen_random_uuid(), e.email, \(template.rawValue), \(fragment: notice(device: "NULL::text")),
               now() + interval '1 day'
        FROM \(unsafeSQL: source) JOIN account_emails e ON e.account_id = \(unsafeSQL: source).account_id
        WHERE e.verified_at IS NOT NULL
        """
    }

    /// The notice to `accountID`'s verified addresses, as a statement of the change's transaction; `device` is the
    /// passkey's name when the change concerns one.
    func rows(_ template: MailTemplate, account accountID: AccountID, device: String? = nil) -> PostgresQuery {
        """
        INSERT INTO email_outbox (id, recipient, template, notice, expires_at)
        SELECT gen_random_uuid(), e.email, \(template.rawValue),
               \(fragment: notice(device: "\(AuditTrail.bounded(device, 128))::text")), now() + interval '1 day'
        FROM account_emails e
        WHERE e.account_id = \(accountID.rawValue) AND e.verified_at IS NOT NULL
        """
    }

    /// The `notice` object: the transaction's time in UTC to the minute, the client address, the device.
    private func notice(device: PostgresQuery) -> PostgresQuery {
        """
        jsonb_build_object('at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'),
                           'address', \(clientAddress)::text,
                           'device', \(fragment: device))
        """
    }

    /// The notice of a stored outbox row (its `notice` column as text), or nil for a message without one.
    static func decode(_ json: String?) -> SecurityNotice? {
        guard let json, let value = try? JSONReader.parse(Array(json.utf8)) else { return nil }
        func text(_ key: String) -> String? { value[key]?.stringValue }
        return SecurityNotice(occurredAt: text("at"), clientAddress: text("address"), device: text("device"))
    }
}
