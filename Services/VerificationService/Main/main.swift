import Configuration
import Crypto
import PasskeyPolicy
import PasskeyProviders
import PostgresStorage
import ServiceContracts
import ServiceRuntime
import SessionIssuance
import VerificationServiceCore
import WebAuthn

await ServiceMain.run(
    configuration: VerificationServiceConfiguration.self, callers: VerificationService.callers
) { server, context, configuration in
    // Origins no device would accept stop the service before it listens, naming the values that rule them out.
    try configuration.checkOrigins()
    let pool = context.database.pool
    // The WebAuthn policy, checked against what this build verifies (PASSKEY_ALGORITHMS): a bad one is a bad
    // configuration value.
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
    // The key ring (PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE): it seals the signing keys and keys the codes' digests.
    let secrets = try SecretKeyRing.required(by: configuration.sessionTokens)
    let signIns = PostgresPasskeySignInRepository(pool: pool)
    let lastUse = LastUseRecorder(repository: signIns, metrics: context.metrics, logger: context.logger)
    let ceremonies = PasskeyCeremonies(
        challenges: StoredChallengeConsumer(
            registrationChallenges: PostgresRegistrationChallengeRepository(pool: pool),
            authenticationChallenges: PostgresAuthenticationChallengeRepository(pool: pool),
            accountRegistrations: PostgresAccountRegistrationRepository(pool: pool)),
        accounts: PostgresAccountRepository(pool: pool), passkeys: PostgresPasskeyCredentialRepository(pool: pool),
        signIns: signIns,
        sessions: SessionIssuer(
            random: SecureRandom(), lifetime: configuration.sessionLifetime,
            signer: try SigningKeyLoader.signer(
                configuration.sessionTokens, secrets: secrets, keys: PostgresSigningKeyRepository(pool: pool),
                context: context),
            idleTimeout: configuration.sessionTokens.idleTimeout),
        lastUse: lastUse,
        registrationVerifier: RegistrationVerifier(trust: policy.trust()),
        authenticationVerifier: AuthenticationVerifier(
            policy: policy.authenticationPolicy(backupEligibilityChange: configuration.backupEligibilityChange)),
        relyingPartyID: configuration.relyingPartyID, origins: policy.origins(allowing: configuration.allowedOrigins),
        options: policy.options,
        recoveryRegistrations: PostgresRecoveryRegistrationRepository(pool: pool), metadata: metadata,
        codeKeys: secrets,
        logger: context.logger, metrics: context.metrics
    ).naming(with: try PasskeyProviderCatalog.shipped.get())
    VerificationService(ceremonies: ceremonies).register(on: server, interceptors: [ServerInstrumentation(context)])
    // Cancelled once the server has drained, so the last batch is written before the process ends.
    context.background { await lastUse.run() }
    if let metadata {
        let interval = configuration.passkeyPolicy.metadataReloadInterval
        context.background { await metadata.run(interval: interval) }
    }
}
