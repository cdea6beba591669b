import AccountRecovery
import Configuration
import Crypto
import CurlTransport
import Domain
import Foundation
import Observability
import PasswordHashing
import PostgresStorage
import ServiceContracts
import ServiceRuntime
import SessionIssuance
import SessionServiceCore
import WebhookDelivery

await ServiceMain.run(
    configuration: SessionServiceConfiguration.self,
    callers: SessionService.callers + AdminService.callers
) { server, context, configuration in
    let pool = context.database.pool
    let accounts = PostgresAccountRepository(pool: pool)
    let sessions = PostgresAuthenticationSessionRepository(pool: pool)
    let recoveryRepository = PostgresAccountRecoveryRepository(pool: pool)
    let outbox = PostgresEmailOutboxRepository(pool: pool)
    let webhookRepository = PostgresWebhookRepository(pool: pool)
    // Hashing gets the cores; its bounded queue turns a password flood into quick refusals.
    let hashing = PasswordHashingPool(threadCount: max(1, ProcessInfo.processInfo.activeProcessorCount))
    let tokens = configuration.sessionTokens
    // The key ring (PASSKEY_TOKEN_KEY_ENCRYPTION_KEY_FILE) seals the codes in the outbox and the webhook secrets, and
    // keys the codes' digests: required whatever PASSKEY_SESSION_TOKENS says.
    let keys = try SecretKeyRing.required(by: tokens)
    let issuer = SessionIssuer(
        random: SecureRandom(), lifetime: configuration.sessionLifetime,
        signer: try SigningKeyLoader.signer(
            tokens, secrets: keys, keys: PostgresSigningKeyRepository(pool: pool), context: context),
        idleTimeout: tokens.idleTimeout)
    let failedGuesses = PostgresFailedGuessRepository(pool: pool)
    let commonPasswords = try CommonPasswords.shipped()
    let useCases = SessionUseCases(
        accounts: accounts, passwords: PostgresPasswordCredentialRepository(pool: pool), failedGuesses: failedGuesses,
        sessions: sessions, hashing: hashing, random: SecureRandom(), sessionLifetime: configuration.sessionLifetime,
        logger: context.logger, metrics: context.metrics, issuer: issuer, codeKeys: keys,
        commonPasswords: commonPasswords)
    let security = AccountSecurityUseCases(
        security: PostgresAccountSecurityRepository(pool: pool), failedGuesses: failedGuesses, hashing: hashing,
        commonPasswords: commonPasswords, issuer: issuer, logger: context.logger)
    let refresh = SessionRefreshUseCases(
        repository: PostgresSessionRefreshRepository(pool: pool), issuer: issuer, reuseWindow: tokens.reuseWindow,
        logger: context.logger)
    let recovery = RecoveryUseCases(
        recovery: recoveryRepository, failedGuesses: failedGuesses, random: SecureRandom(), keys: keys,
        revokesOtherSessions: configuration.recoveryRevokesSessions, logger: context.logger)
    SessionService(useCases: useCases, recovery: recovery, refresh: refresh, security: security)
        .register(on: server, interceptors: [ServerInstrumentation(context)])
    // Webhooks: endpoints registered through the admin API; the worker sends what the audit trail queued.
    let webhooks = try WebhookSettings(environment: ProcessInfo.processInfo.environment)
    let sender = WebhookSender(settings: webhooks.sender, threadCount: webhooks.lanes)
    let admin = AdminUseCases(
        admin: PostgresAdminRepository(pool: pool), recovery: recoveryRepository, random: SecureRandom(), keys: keys,
        logger: context.logger, security: PostgresAccountSecurityRepository(pool: pool))
    AdminService(
        useCases: admin,
        webhooks: WebhookAdministration(admin: admin, webhooks: webhookRepository, transport: sender, keys: keys),
        signingKeys: issuer.signer.map { signer in
            SigningKeyAdministration(
                admin: admin, repository: PostgresSigningKeyRepository(pool: pool), ring: signer.ring,
                algorithm: signer.settings.algorithm)
        }
    ).register(on: server, interceptors: [ServerInstrumentation(context)])
    let webhookWorker = WebhookWorker(
        webhooks: webhookRepository, transport: sender, keys: keys, retry: webhooks.retry, lanes: webhooks.lanes,
        attemptTimeout: webhooks.sender.timeout, metrics: context.metrics, logger: context.logger)
    context.background { await webhookWorker.run() }
    let sealing = WebhookSecretSealing(webhooks: webhookRepository, keys: keys, logger: context.logger)
    context.background { await sealing.run() }
    let gauges = AdoptionGauges(
        counts: PostgresSignInMethodCountRepository(pool: pool), metrics: context.metrics, logger: context.logger)
    context.background { await gauges.run() }
    let backlog = OutboxBacklogGauges(outbox: outbox, metrics: context.metrics, logger: context.logger)
    context.background { await backlog.run() }
    // The tables this service owns: every replica deletes their ended rows.
    context.sweep(
        [
            SweptTable(
                PostgresAuthenticationSessionRepository.table, retention: configuration.sessionRetention,
                deleteBatch: sessions.deleteEnded),
            SweptTable(
                PostgresAccountRecoveryRepository.codesTable, retention: configuration.ceremonyRetention,
                deleteBatch: recoveryRepository.deleteEndedCodes),
            SweptTable(
                PostgresEmailOutboxRepository.table, retention: configuration.sessionRetention,
                deleteBatch: outbox.deleteEnded),
            SweptTable(
                PostgresAuditEventRepository.table, retention: configuration.auditRetention,
                deleteBatch: PostgresAuditEventRepository(pool: pool).deleteEnded),
            SweptTable(
                PostgresWebhookRepository.deliveriesTable, retention: webhooks.retention,
                deleteBatch: webhookRepository.deleteDelivered),
        ], settings: configuration.sweep)

    let composer = try MailComposer(sender: configuration.mail.from, serviceName: configuration.relyingPartyName)
    guard let url = configuration.mail.url else {
        context.logger.warning("mail.disabled", ["detail": "SMTP_URL is unset: messages wait in the outbox"])
        return
    }
    let transport = SMTPTransport(
        settings: SMTPSettings(
            url: url, username: configuration.mail.username, password: configuration.mail.password,
            requireStartTLS: configuration.mail.requireStartTLS, caFile: configuration.mail.caFile))
    let worker = OutboxWorker(
        outbox: outbox, composer: composer, keys: keys,
        send: { mail throws(MailSendFailure) in
            do {
                try transport.send(from: mail.sender, to: mail.recipient, data: mail.data)
            } catch let error as SMTPError {
                throw MailSendFailure(isTransient: error.isTransient, description: error.description)
            } catch {
                throw MailSendFailure(isTransient: true, description: String(describing: error))
            }
        },
        metrics: context.metrics, logger: context.logger)
    context.background { await worker.run() }
}
