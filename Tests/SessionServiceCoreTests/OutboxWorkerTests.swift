import AccountRecovery
import Domain
import Foundation
import Observability
@testable import SessionServiceCore
import Synchronization
import XCTest

/// What the outbox worker records for each delivery attempt: sent, retried after the backoff, or given up.
final class OutboxWorkerTests: XCTestCase {
    struct NoOutbox: EmailOutboxRepository {
        func deliverNext(_ deliver: @escaping @Sendable (OutboxMessage) -> DeliveryOutcome) async throws -> Bool { false }
        func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int { 0 }
        func backlog() async throws -> OutboxBacklog { OutboxBacklog(pending: 3, oldestPendingSeconds: 42) }
    }

    final class Relay: Sendable {
        let sent = Mutex<[ComposedMail]>([])
        let failure = Mutex<MailSendFailure?>(nil)
    }

    func worker(_ relay: Relay, metrics: MetricsRegistry = MetricsRegistry()) throws -> OutboxWorker {
        OutboxWorker(
            outbox: NoOutbox(), composer: try MailComposer(sender: "no-reply@example.com", serviceName: "Example"),
            send: { mail throws(MailSendFailure) in
                if let failure = relay.failure.withLock({ $0 }) { throw failure }
                relay.sent.withLock { $0.append(mail) }
            },
            metrics: metrics, logger: Logger(service: "session-service", sink: MemoryLogSink()))
    }

    func testTheBacklogIsPublishedAsGauges() async throws {
        let metrics = MetricsRegistry()
        try await OutboxBacklogGauges(
            outbox: NoOutbox(), metrics: metrics, logger: Logger(service: "session-service", sink: MemoryLogSink())
        ).refresh()
        let text = metrics.exposition()
        XCTAssertTrue(text.contains(#"email_outbox_pending{service="session-service"} 3"#), text)
        XCTAssertTrue(text.contains(#"email_outbox_oldest_pending_seconds{service="session-service"} 42"#), text)
    }

    func message(attempts: Int) -> OutboxMessage {
        let now = Date()
        return OutboxMessage(
            id: UUID(), recipient: "ada@example.com", template: .recoveryCode, code: "01234567",
            expiresAt: now.addingTimeInterval(600), createdAt: now, attempts: attempts)
    }

    func testASentMessageIsDeliveredWithItsCode() throws {
        let relay = Relay()
        let metrics = MetricsRegistry()
        XCTAssertEqual(try worker(relay, metrics: metrics).attempt(message(attempts: 0)), .delivered)
        let mail = try XCTUnwrap(relay.sent.withLock { $0.first })
        XCTAssertEqual(mail.recipient, "ada@example.com")
        XCTAssertTrue(String(decoding: mail.data, as: UTF8.self).contains("01234567"))
        XCTAssertTrue(metrics.exposition().contains(#"mail_delivery_attempts_total{outcome="sent"} 1"#))
    }

    func testATransientFailureIsRetriedAfterTheBackoffUntilTheLastAttempt() throws {
        let relay = Relay()
        relay.failure.withLock { $0 = MailSendFailure(isTransient: true, description: "421 busy") }
        let worker = try worker(relay)
        XCTAssertEqual(worker.attempt(message(attempts: 0)), .retry(after: 1, error: "421 busy"))
        XCTAssertEqual(worker.attempt(message(attempts: 3)), .retry(after: 8, error: "421 busy"))
        XCTAssertEqual(
            worker.attempt(message(attempts: OutboxRetry.maximumAttempts - 1)), .giveUp(error: "421 busy"),
            "the last attempt gives up")
    }

    func testAPermanentRefusalIsGivenUpAtOnce() throws {
        let relay = Relay()
        relay.failure.withLock { $0 = MailSendFailure(isTransient: false, description: "550 no such user") }
        XCTAssertEqual(try worker(relay).attempt(message(attempts: 0)), .giveUp(error: "550 no such user"))
        XCTAssertEqual(relay.sent.withLock { $0.count }, 0)
    }
}
