import Crypto
import Foundation
import ServiceRuntime
import SessionIssuance
import VerificationServiceCore
import WebAuthn
import PasskeyProviders
import PostgresStorage
import Configuration
import PasskeyPolicy
import ServiceContracts

await ServiceMain.run(
    name: "verification-service", listen: \.verificationServiceListen, callers: VerificationService.callers
) { server, context in
    let configuration = context.configuration
    let storage = context.storage
    let policy = try PasskeyPolicy(configuration.passkeyPolicy)
    // The FIDO metadata BLOB, when configured: verified now (a bad one stops the service, naming the variable)
    // and read again every PASSKEY_MDS_RELOAD_INTERVAL.
    let metadata = try configuration.passkeyPolicy.metadataBLOBPath.map { blobPath in
        let source = MetadataSource(
            blobPath: blobPath, rootPath: configuration.passkeyPolicy.metadataRootPath ?? "", logger: context.logger)
        do {
            try source.load()
        } catch let error as MetadataSource.LoadError {
            throw ConfigurationError(variable: error.variable, problem: error.reason)
        }
        return source
    }
    let lastUse = LastUseRecorder(
        repository: storage.passkeySignIns, metrics: context.metrics, logger: context.logger)
    let ceremonies = PasskeyCeremonies(
        challenges: StoredChallengeConsumer(
            registrationChallenges: storage.registrationChallenges,
            authenticationChallenges: storage.authenticationChallenges,
            accountRegistrations: storage.accountRegistrations),
        accounts: storage.accounts, passkeys: storage.passkeyCredentials, signIns: storage.passkeySignIns,
        sessions: SessionIssuer(random: SecureRandom(), lifetime: configuration.sessionLifetime), lastUse: lastUse,
        registrationVerifier: RegistrationVerifier(trust: policy.trust()),
        authenticationVerifier: AuthenticationVerifier(policy: policy.authenticationPolicy),
        relyingPartyID: configuration.relyingPartyID, origins: policy.origins(allowing: configuration.origins),
        options: policy.options,
        recoveryRegistrations: storage.recoveryRegistrations, metadata: metadata, logger: context.logger,
        metrics: context.metrics
    ).naming(with: try PasskeyProviderCatalog.shipped.get())
    VerificationService(ceremonies: ceremonies).register(on: server, using: context)
    // Cancelled once the server has drained, so the last batch is written before the process ends.
    context.background { await lastUse.run() }
    if let metadata {
        let interval = configuration.passkeyPolicy.metadataReloadInterval
        context.background { await metadata.run(interval: interval) }
    }
}
