import Domain
import Postgres

/// Maps database failures to domain errors, in one place.
///
/// Unique violations become the conflict they mean; a database that cannot be reached becomes `.unavailable`.
/// Anything else is rethrown unchanged for the service to log and report as an internal failure.
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
