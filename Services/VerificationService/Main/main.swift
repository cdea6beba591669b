import Crypto
import Foundation
import ServiceRuntime
import SessionIssuance
import VerificationServiceCore
import WebAuthn
import PostgresStorage
import Configuration
import ServiceContracts

await ServiceMain.run(
    name: "verification-service", listen: \.verificationServiceListen, callers: VerificationService.callers
) { server, context in
    let configuration = context.configuration
    let storage = context.storage
    let lastUse = LastUseRecorder(
        repository: storage.passkeySignIns, metrics: context.metrics, logger: context.logger)
    let ceremonies = PasskeyCeremonies(
        challenges: StoredChallengeConsumer(
            registrationChallenges: storage.registrationChallenges,
            authenticationChallenges: storage.authenticationChallenges,
            accountRegistrations: storage.accountRegistrations),
        accounts: storage.accounts, passkeys: storage.passkeyCredentials, signIns: storage.passkeySignIns,
        sessions: SessionIssuer(random: SecureRandom(), lifetime: configuration.sessionLifetime), lastUse: lastUse,
        relyingPartyID: configuration.relyingPartyID, origins: OriginPolicy(allowedOrigins: configuration.origins),
        recoveryRegistrations: storage.recoveryRegistrations, logger: context.logger, metrics: context.metrics)
    VerificationService(ceremonies: ceremonies).register(on: server, using: context)
    // Cancelled once the server has drained, so the last batch is written before the process ends.
    context.background { await lastUse.run() }
}
