import Domain
import Foundation
import Postgres

/// The statements of `failed_guesses` (migration 0017): the one statement of a failed or claimed guess, and the
/// columns the sign-in and recovery lookups read it with.
enum FailedGuessStatements {
    /// The columns a lookup adds when it joins `failed_guesses` as `g` (a `LEFT JOIN`: NULL when none are stored).
    static let columns = "g.level AS guess_level, g.updated_at AS guesses_updated_at"

    /// The join of a lookup, for the account in `accountColumn` and `kind` (a program constant).
    static func join(accountColumn: String, kind: GuessKind) -> String {
        "LEFT JOIN failed_guesses g ON g.account_id = \(accountColumn) AND g.kind = '\(kind.rawValue)'"
    }

    /// The failed guesses a lookup read with ``columns``; nil when the account has none stored.
    static func decode(_ row: PostgresRow) throws -> FailedGuesses? {
        guard let level = try row.decode(Double?.self, "guess_level"),
            let updatedAt = try row.decode(Date?.self, "guesses_updated_at")
        else { return nil }
        return FailedGuesses(level: level, updatedAt: updatedAt)
    }

    /// Adds one guess to the account's level, drained from its stored time to the charge's (never back: a replica
    /// whose clock is behind drains nothing and keeps the later time). With `onlyWithRoom`, nothing is written unless
    /// the level then holds at most the capacity, and a row comes back only when the guess was counted.
    static func charge(_ charge: GuessCharge, onlyWithRoom: Bool) -> PostgresQuery {
        // The stored level less what drained in the seconds from its time to the charge's (EXCLUDED is the row
        // this statement would have inserted: the charge's time).
        let drained: PostgresQuery = """
            greatest(0::float8,
                     g.level - greatest(0::float8, extract(epoch FROM EXCLUDED.updated_at - g.updated_at)::float8)
                               * \(charge.limit.drainPerSecond))
            """
        let room: PostgresQuery =
            onlyWithRoom ? "WHERE \(fragment: drained) + 1 <= \(charge.limit.fullLevel)" : ""
        return """
            INSERT INTO failed_guesses AS g (account_id, kind, level, updated_at)
            VALUES (\(charge.accountID.rawValue), \(charge.kind.rawValue), 1, \(charge.now))
            ON CONFLICT (account_id, kind) DO UPDATE
            SET level = \(fragment: drained) + 1, updated_at = greatest(g.updated_at, EXCLUDED.updated_at)
            \(fragment: room)
            RETURNING g.account_id
            """
    }
}

/// `failed_guesses`, written alone: a failed guess counted, or a place claimed before a guess is checked (session
/// service's password sign-in and recovery). The lookups read it with their own rows (``FailedGuessStatements``).
public struct PostgresFailedGuessRepository: FailedGuessRepository {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// ``FailedGuessStatements/charge(_:onlyWithRoom:)`` without the condition.
    public func countFailedGuess(_ charge: GuessCharge) async throws {
        try await translatingErrors {
            _ = try await pool.query(FailedGuessStatements.charge(charge, onlyWithRoom: false))
        }
    }

    /// ``FailedGuessStatements/charge(_:onlyWithRoom:)`` with the condition: whether the guess was counted.
    public func claimGuess(_ charge: GuessCharge) async throws -> Bool {
        try await translatingErrors {
            !(try await pool.query(FailedGuessStatements.charge(charge, onlyWithRoom: true)).isEmpty)
        }
    }
}
