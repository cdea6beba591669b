import ChallengeServiceCore
import Crypto
import PostgresStorage
import ServiceContracts
import ServiceRuntime

await ServiceMain.run(
    configuration: ChallengeServiceConfiguration.self, callers: ChallengeService.callers
) { server, context, configuration in
    let pool = context.database.pool
    let registrationChallenges = PostgresRegistrationChallengeRepository(pool: pool)
    let authenticationChallenges = PostgresAuthenticationChallengeRepository(pool: pool)
    let accountRegistrations = PostgresAccountRegistrationRepository(pool: pool)
    let relyingParty = ChallengeUseCases.RelyingParty(
        id: configuration.relyingPartyID, name: configuration.relyingPartyName)
    let useCases = ChallengeUseCases(
        storage: ChallengeStorage(
            accounts: PostgresAccountRepository(pool: pool), emails: PostgresAccountEmailRepository(pool: pool),
            passkeys: PostgresPasskeyCredentialRepository(pool: pool),
            registrationChallenges: registrationChallenges, authenticationChallenges: authenticationChallenges,
            accountRegistrations: accountRegistrations),
        relyingParty: relyingParty, challengeLifetime: configuration.challengeLifetime,
        accountRegistrationLifetime: configuration.accountRegistrationLifetime, random: SecureRandom(),
        logger: context.logger, metrics: context.metrics)
    ChallengeService(
        useCases: useCases, relyingParty: relyingParty,
        timeoutMilliseconds: Int64(configuration.challengeLifetime * 1000)
    ).register(on: server, interceptors: [ServerInstrumentation(context)])
    // The ceremony tables are this service's: every replica deletes their ended rows.
    let retention = configuration.ceremonyRetention
    context.sweep(
        [
            SweptTable(
                PostgresRegistrationChallengeRepository.table, retention: retention,
                deleteBatch: registrationChallenges.deleteEnded),
            SweptTable(
                PostgresAuthenticationChallengeRepository.table, retention: retention,
                deleteBatch: authenticationChallenges.deleteEnded),
            SweptTable(
                PostgresAccountRegistrationRepository.table, retention: retention,
                deleteBatch: accountRegistrations.deleteEnded),
        ], settings: configuration.sweep)
}
