import AccountRecovery
import Configuration
import Crypto
import Foundation
import CurlTransport
import Observability
import PasswordHashing
import PostgresStorage
import ServiceContracts
import ServiceRuntime
import SessionServiceCore
import WebhookDelivery

/// The webhook settings, read once; a bad value stops the start (in `register`) as any configuration error does.
let webhookSettings = Result { try WebhookSettings(environment: ProcessInfo.processInfo.environment) }

await ServiceMain.run(
    name: "session-service", listen: \.sessionServiceListen, callers: SessionService.callers + AdminService.callers,
    sweeping: { context in
        [
            SweptTable(
                PostgresAuthenticationSessionRepository.table, retention: context.configuration.sessionRetention,
                deleteBatch: context.storage.sessions.deleteEnded),
            SweptTable(
                PostgresAccountRecoveryRepository.codesTable, retention: context.configuration.ceremonyRetention,
                deleteBatch: context.storage.recovery.deleteEndedCodes),
            SweptTable(
                PostgresEmailOutboxRepository.table, retention: context.configuration.sessionRetention,
                deleteBatch: context.storage.outbox.deleteEnded),
            SweptTable(
                PostgresAuditEventRepository.table, retention: context.configuration.auditRetention,
                deleteBatch: context.storage.auditEvents.deleteEnded),
            SweptTable(
                PostgresWebhookRepository.deliveriesTable,
                retention: (try? webhookSettings.get())?.retention ?? 7 * 86_400,
                deleteBatch: context.storage.webhooks.deleteDelivered),
        ]
    },
    register: { server, context in
        let configuration = context.configuration
        // Hashing gets the cores; its bounded queue turns a password flood into quick refusals.
        let hashing = PasswordHashingPool(threadCount: max(1, ProcessInfo.processInfo.activeProcessorCount))
        let useCases = SessionUseCases(
            accounts: context.storage.accounts, passwords: context.storage.passwordCredentials,
            sessions: context.storage.sessions, hashing: hashing, random: SecureRandom(),
            sessionLifetime: configuration.sessionLifetime, logger: context.logger, metrics: context.metrics)
        let recovery = RecoveryUseCases(
            recovery: context.storage.recovery, random: SecureRandom(),
            revokesOtherSessions: configuration.recoveryRevokesSessions, logger: context.logger)
        SessionService(useCases: useCases, recovery: recovery).register(on: server, using: context)
        // Webhooks: endpoints registered through the admin API; the worker sends what the audit trail queued.
        let webhooks = try webhookSettings.get()
        let sender = WebhookSender(settings: webhooks.sender, threadCount: webhooks.lanes)
        let admin = AdminUseCases(
            admin: context.storage.admin, recovery: context.storage.recovery, random: SecureRandom(),
            logger: context.logger)
        AdminService(
            useCases: admin,
            webhooks: WebhookAdministration(admin: admin, webhooks: context.storage.webhooks, transport: sender)
        ).register(on: server, using: context)
        let webhookWorker = WebhookWorker(
            webhooks: context.storage.webhooks, transport: sender, retry: webhooks.retry, lanes: webhooks.lanes,
            attemptTimeout: webhooks.sender.timeout, metrics: context.metrics, logger: context.logger)
        context.background { await webhookWorker.run() }
        let gauges = AdoptionGauges(
            counts: context.storage.signInMethodCounts, metrics: context.metrics, logger: context.logger)
        context.background { await gauges.run() }
        let backlog = OutboxBacklogGauges(
            outbox: context.storage.outbox, metrics: context.metrics, logger: context.logger)
        context.background { await backlog.run() }

        let composer = try MailComposer(sender: configuration.smtpFrom, serviceName: configuration.relyingPartyName)
        guard let url = configuration.smtpURL else {
            context.logger.warning("mail.disabled", ["detail": "SMTP_URL is unset: messages wait in the outbox"])
            return
        }
        let transport = SMTPTransport(
            settings: SMTPSettings(
                url: url, username: configuration.smtpUsername, password: configuration.smtpPassword,
                requireStartTLS: configuration.smtpRequireStartTLS, caFile: configuration.smtpCAFile))
        let worker = OutboxWorker(
            outbox: context.storage.outbox, composer: composer,
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
    })
