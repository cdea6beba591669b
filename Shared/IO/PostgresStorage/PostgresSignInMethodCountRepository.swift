import Domain
import Postgres

/// `sign_in_method_totals` and `sign_in_method_changes` (migration 0008): the maintained counts of accounts by the
/// ways they can sign in.
public struct PostgresSignInMethodCountRepository: SignInMethodCountRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public func counts() async throws -> SignInMethodCounts {
        try await translatingErrors {
            try await pool.transaction { connection in
                // One replica folds at a time; the others read totals plus what is appended, the same sums.
                let folding = try connection.execute(
                    "SELECT pg_try_advisory_xact_lock(hashtext('sign_in_method_totals')) AS locked")
                if try folding.first?.decode(Bool.self, "locked") == true {
                    try connection.execute(
                        """
                        WITH folded AS (DELETE FROM sign_in_method_changes RETURNING method, delta),
                             sums AS (SELECT method, sum(delta) AS delta FROM folded GROUP BY method)
                        UPDATE sign_in_method_totals t SET accounts = t.accounts + s.delta
                        FROM sums s WHERE t.method = s.method
                        """)
                }
                let rows = try connection.execute(
                    """
                    SELECT t.method,
                           (t.accounts + coalesce((SELECT sum(c.delta) FROM sign_in_method_changes c
                                                   WHERE c.method = t.method), 0))::bigint AS accounts
                    FROM sign_in_method_totals t
                    """)
                var counts = SignInMethodCounts()
                for row in rows {
                    let accounts = try row.decode(Int.self, "accounts")
                    switch try row.decode(String.self, "method") {
                    case "password_only": counts.passwordOnly = accounts
                    case "both": counts.both = accounts
                    case "passkey_only": counts.passkeyOnly = accounts
                    default: break
                    }
                }
                return counts
            }
        }
    }
}
