import Domain
import Postgres

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
