import ChallengeServiceCore
import Crypto
import Foundation
import PostgresStorage
import ServiceRuntime
import Configuration
import ServiceContracts
import Observability

await ServiceMain.run(
    name: "challenge-service", listen: \.challengeServiceListen, callers: ChallengeService.callers,
    sweeping: { context in
        let storage = context.storage
        let retention = context.configuration.ceremonyRetention
        return [
            SweptTable(
                PostgresRegistrationChallengeRepository.table, retention: retention,
                deleteBatch: storage.registrationChallenges.deleteEnded),
            SweptTable(
                PostgresAuthenticationChallengeRepository.table, retention: retention,
                deleteBatch: storage.authenticationChallenges.deleteEnded),
            SweptTable(
                PostgresAccountRegistrationRepository.table, retention: retention,
                deleteBatch: storage.accountRegistrations.deleteEnded),
        ]
    },
    register: { server, context in
        let storage = context.storage
        let relyingParty = ChallengeUseCases.RelyingParty(
            id: context.configuration.relyingPartyID, name: context.configuration.relyingPartyName)
        let useCases = ChallengeUseCases(
            storage: ChallengeStorage(
                accounts: storage.accounts, emails: storage.accountEmails, passkeys: storage.passkeyCredentials,
                registrationChallenges: storage.registrationChallenges,
                authenticationChallenges: storage.authenticationChallenges,
                accountRegistrations: storage.accountRegistrations),
            relyingParty: relyingParty, challengeLifetime: context.configuration.challengeLifetime,
            accountRegistrationLifetime: context.configuration.accountRegistrationLifetime, random: SecureRandom(),
            logger: context.logger, metrics: context.metrics)
        ChallengeService(
            useCases: useCases, relyingParty: relyingParty,
            timeoutMilliseconds: Int64(context.configuration.challengeLifetime * 1000)
        ).register(on: server, using: context)
    })
