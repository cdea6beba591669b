import Postgres
import PostgresStorage

/// Every repository of the schema on one pool, for the repositories' tests; a service builds only the ones it uses.
struct Repositories {
    let pool: PostgresPool
    let accounts: PostgresAccountRepository
    let accountEmails: PostgresAccountEmailRepository
    let passwordCredentials: PostgresPasswordCredentialRepository
    let failedGuesses: PostgresFailedGuessRepository
    let passkeyCredentials: PostgresPasskeyCredentialRepository
    let sessions: PostgresAuthenticationSessionRepository
    let passkeySignIns: PostgresPasskeySignInRepository
    let registrationChallenges: PostgresRegistrationChallengeRepository
    let authenticationChallenges: PostgresAuthenticationChallengeRepository
    let accountRegistrations: PostgresAccountRegistrationRepository
    let recovery: PostgresAccountRecoveryRepository
    let outbox: PostgresEmailOutboxRepository
    let signInMethodCounts: PostgresSignInMethodCountRepository
    let auditEvents: PostgresAuditEventRepository

    init(pool: PostgresPool) {
        self.pool = pool
        accounts = PostgresAccountRepository(pool: pool)
        accountEmails = PostgresAccountEmailRepository(pool: pool)
        passwordCredentials = PostgresPasswordCredentialRepository(pool: pool)
        failedGuesses = PostgresFailedGuessRepository(pool: pool)
        passkeyCredentials = PostgresPasskeyCredentialRepository(pool: pool)
        sessions = PostgresAuthenticationSessionRepository(pool: pool)
        passkeySignIns = PostgresPasskeySignInRepository(pool: pool)
        registrationChallenges = PostgresRegistrationChallengeRepository(pool: pool)
        authenticationChallenges = PostgresAuthenticationChallengeRepository(pool: pool)
        accountRegistrations = PostgresAccountRegistrationRepository(pool: pool)
        recovery = PostgresAccountRecoveryRepository(pool: pool)
        outbox = PostgresEmailOutboxRepository(pool: pool)
        signInMethodCounts = PostgresSignInMethodCountRepository(pool: pool)
        auditEvents = PostgresAuditEventRepository(pool: pool)
    }

    /// Applies the schema's migrations.
    func migrate() async throws { _ = try await PostgresStorage(pool: pool).migrate() }
}
