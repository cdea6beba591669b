import Domain
import Postgres

/// Maps database failures to domain errors, in one place (with ``PostgresStorage/domainError(forUnmapped:)``, what
/// is left of them at the RPC boundary).
///
/// Unique violations become the conflict they mean; a database that cannot be reached becomes `.unavailable`.
/// Anything else is rethrown unchanged: the service logs it with its SQLSTATE and answers `.unavailable`.
@discardableResult
func translatingErrors<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
        return try await body()
    } catch let error as PostgresError {
        throw domainError(for: error)
    }
}

func domainError(for error: PostgresError) -> any Error {
    if error.isUniqueViolation {
        switch error.constraint {
        case "account_emails_normalized_email_key":
            return DomainError(.emailTaken, "that email address already belongs to an account")
        case "passkey_credentials_credential_id_key":
            return DomainError(.credentialAlreadyRegistered, "that passkey is already registered")
        default:
            return error
        }
    }
    if error.isConnectionFailure || error.code == .poolClosed {
        return DomainError(.unavailable, "the database cannot be reached")
    }
    return error
}

extension PostgresStorage {
    /// What a database failure no repository turned into a domain error (a statement the server refused, a lost
    /// connection, a column that would not decode) means to the caller once it reaches the RPC boundary: the
    /// database cannot serve the request now, `.unavailable`, to be tried again. Nil when `error` is not a database
    /// failure.
    public static func domainError(forUnmapped error: any Error) -> DomainError? {
        guard error is PostgresError else { return nil }
        return DomainError(.unavailable, "The database cannot serve this request.")
    }
}
