import Foundation
import Postgres

/// Deletes the rows of one table that ended before a cutoff, a bounded batch at a time.
///
/// A row has ended once any of `endColumns` (timestamps such as `expires_at` or `consumed_at`) is before the cutoff.
/// Each column is tried in turn, with its own short statement, until `limit` rows are gone: by primary key, from a
/// `SELECT … LIMIT … FOR UPDATE SKIP LOCKED`, so no statement holds more than `limit` row locks, none waits for a
/// row another transaction holds (a consume in flight, or another replica's sweep), and running it twice, or on
/// every replica at once, deletes each row once.
struct EndedRowDeletion: Sendable {
    let pool: PostgresPool
    /// The table: a constant of its repository, never input.
    let table: String
    /// The columns that mark a row ended, cheapest first (an indexed one before one that needs a scan).
    let endColumns: [String]

    func delete(before cutoff: Date, limit: Int) async throws -> Int {
        var deleted = 0
        for column in endColumns where deleted < limit {
            deleted += try await translatingErrors {
                try await pool.query(
                    """
                    DELETE FROM \(unsafeSQL: table) WHERE id IN (
                        SELECT id FROM \(unsafeSQL: table) WHERE \(unsafeSQL: column) < \(cutoff)
                        LIMIT \(limit - deleted) FOR UPDATE SKIP LOCKED)
                    """
                ).affectedRowCount
            }
        }
        return deleted
    }
}
