import Crypto
import Foundation
import PasswordHashing
import PostgresStorage
import ServiceRuntime
import SessionServiceCore
import PostgresStorage
import Configuration
import ServiceContracts

await ServiceMain.run(
    name: "session-service", listen: \.sessionServiceListen, callers: SessionService.callers,
    sweeping: { context in
        [
            SweptTable(
                PostgresAuthenticationSessionRepository.table, retention: context.configuration.sessionRetention,
                deleteBatch: context.storage.sessions.deleteEnded)
        ]
    },
    register: { server, context in
        // Hashing gets the cores; its bounded queue turns a password flood into quick refusals.
        let hashing = PasswordHashingPool(threadCount: max(1, ProcessInfo.processInfo.activeProcessorCount))
        let useCases = SessionUseCases(
            accounts: context.storage.accounts, passwords: context.storage.passwordCredentials,
            sessions: context.storage.sessions, hashing: hashing, random: SecureRandom(),
            sessionLifetime: context.configuration.sessionLifetime, logger: context.logger)
        SessionService(useCases: useCases).register(on: server, using: context)
    })
