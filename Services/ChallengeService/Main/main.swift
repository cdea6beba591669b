import ChallengeServiceCore
import Crypto
import Foundation
import ServiceRuntime
import PostgresStorage
import Configuration
import ServiceContracts
import Observability

await ServiceMain.run(name: "challenge-service", listen: \.challengeServiceListen) { server, context in
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
        logger: context.logger)
    ChallengeService(
        useCases: useCases, relyingParty: relyingParty,
        timeoutMilliseconds: Int64(context.configuration.challengeLifetime * 1000)
    ).register(on: server, using: context)
    // Every replica sweeps; the deletes are idempotent.
    Task.detached {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(60))
            if let removed = try? await useCases.sweepExpired(), removed > 0 {
                context.logger.info("challenges.swept", ["rows": String(removed)])
            }
        }
    }
}
