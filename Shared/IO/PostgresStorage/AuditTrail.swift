import Domain
import Observability
import Postgres

/// `audit_events` (migration 0011): the stored audit trail. Each repository that changes an account appends its
/// event's row in the statement or transaction that makes the change, so the row commits exactly when the change
/// does. Who asked and from where come from the call being served (`AuditContext.current`: the request ID and
/// client address the gateway sent, and the actor), read when the statement is built.
enum AuditTrail {
    static let table = "audit_events"
    /// The most detail pairs one event carries; the column's own check bounds its size.
    static let detailLimit = 16

    /// `INSERT INTO audit_events … SELECT … FROM source`: one event for each row of `source` (a CTE or table
    /// whose `account_id` column names the account), for a data-modifying CTE of the change's statement.
    /// `rowDetail`, when given, is a `jsonb` expression over the source's columns merged into each row's detail
    /// (for example `jsonb_build_object('session.id', revoked.id::text)`): SQL the program wrote, never input.
    static func rows(
        _ event: AuditEvent, from source: String, detail: KeyValuePairs<String, String> = [:], rowDetail: String? = nil
    ) -> PostgresQuery {
        let context = AuditContext.current
        let (keys, values) = detailArrays(detail)
        return """
            INSERT INTO audit_events (type, account_id, actor, actor_id, request_id, client_address, detail)
            SELECT \(event.rawValue), \(unsafeSQL: source).account_id, \(context.actor.kind), \(context.actor.identifier),
                   \(bounded(context.requestID, 128)), \(bounded(context.clientAddress, 64)),
                   jsonb_object(\(keys)::text[], \(values)::text[]) \(unsafeSQL: rowDetail.map { "|| " + $0 } ?? "")
            FROM \(unsafeSQL: source)
            """
    }

    /// One event for `accountID` (none: an event of no account), as a statement of the change's transaction.
    static func row(_ event: AuditEvent, account accountID: AccountID?, detail: KeyValuePairs<String, String> = [:])
        -> PostgresQuery
    {
        let context = AuditContext.current
        let (keys, values) = detailArrays(detail)
        return """
            INSERT INTO audit_events (type, account_id, actor, actor_id, request_id, client_address, detail)
            VALUES (\(event.rawValue), \(accountID?.rawValue), \(context.actor.kind), \(context.actor.identifier),
                    \(bounded(context.requestID, 128)), \(bounded(context.clientAddress, 64)),
                    jsonb_object(\(keys)::text[], \(values)::text[]))
            """
    }

    private static func detailArrays(_ detail: KeyValuePairs<String, String>) -> (PostgresTextArray, PostgresTextArray)
    {
        let pairs = detail.prefix(detailLimit)
        return (
            PostgresTextArray(pairs.map { bounded($0.key, 64) ?? "" }),
            PostgresTextArray(pairs.map { bounded($0.value, 200) ?? "" })
        )
    }

    /// Text cut to `limit` code points (Postgres's `char_length`), without NUL (which text cannot hold): what the
    /// gateway sent is bounded there already, and a stored event never fails its change over odd input.
    static func bounded(_ text: String?, _ limit: Int) -> String? {
        guard let text else { return nil }
        // Every sign-in passes its request ID and address through here: text within the limit in bytes is within
        // it in code points, and is kept as it is unless it holds a NUL.
        if text.utf8.count <= limit, !text.utf8.contains(0) { return text }
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.value != 0 {
            guard scalars.count < limit else { break }
            scalars.append(scalar)
        }
        return String(scalars)
    }
}
