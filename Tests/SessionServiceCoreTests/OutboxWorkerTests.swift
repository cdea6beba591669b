import AccountRecovery
import Crypto
import Domain
import Foundation
import Observability
import Synchronization
import XCTest

@testable import SessionServiceCore

/// What the outbox worker records for each delivery attempt: sent, retried after the backoff, or given up; and the
/// code it opens from the sealed one the message keeps.
final class OutboxWorkerTests: XCTestCase {
    static let keys = SecretKeyRing(keys: [Array(repeating: 1, count: 32)])!

    struct NoOutbox: EmailOutboxRepository {
        func deliverNext(_ deliver: @escaping @Sendable (OutboxMessage) -> DeliveryOutcome) async throws -> Bool {
            false
        }
        func deleteEnded(before cutoff: Date, limit: Int) async throws -> Int { 0 }
        func backlog() async throws -> OutboxBacklog { OutboxBacklog(pending: 3, oldestPendingSeconds: 42) }
    }

    final class Relay: Sendable {
        let sent = Mutex<[ComposedMail]>([])
        let failure = Mutex<MailSendFailure?>(nil)
    }

    func worker(_ relay: Relay, metrics: MetricsRegistry = MetricsRegistry(), keys: SecretKeyRing = keys) throws
        -> OutboxWorker
    {
        OutboxWorker(
            outbox: NoOutbox(), composer: try MailComposer(sender: "no-reply@example.com", serviceName: "Example"),
            keys: keys,
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

    /// A recovery code's message as `OneTimeCodes` makes it: its code sealed under `keys`.
    func message(attempts: Int, keys: SecretKeyRing = keys) throws -> (OutboxMessage, code: String) {
        let target = RecoveryTarget(
            accountID: .random(), emailID: UUID(), address: "ada@example.com", verified: true, displayName: "Ada")
        var message = try OneTimeCodes.delivery(
            for: target, purpose: .recovery, random: SecureRandom(), keys: keys, now: Date()
        ).message
        message.attempts = attempts
        guard case .code(let code) = OneTimeCodes.open(message, keys: keys) else { throw NoCode() }
        return (message, code)
    }

    struct NoCode: Error {}

    func testASentMessageIsDeliveredWithItsCodeOpenedFromTheSealedOne() throws {
        let relay = Relay()
        let metrics = MetricsRegistry()
        let (message, code) = try message(attempts: 0)
        guard case .sealed(_, let box) = message.code else { return XCTFail("sealed") }
        XCTAssertFalse(box.count < 8 + 12 + 16, "nonce, ciphertext and tag")
        XCTAssertEqual(try worker(relay, metrics: metrics).attempt(message), .delivered)
        let mail = try XCTUnwrap(relay.sent.withLock { $0.first })
        XCTAssertEqual(mail.recipient, "ada@example.com")
        XCTAssertTrue(String(decoding: mail.data, as: UTF8.self).contains("    \(code)"))
        XCTAssertTrue(metrics.exposition().contains(#"mail_delivery_attempts_total{outcome="sent"} 1"#))
    }

    func testAMessageQueuedWithItsCodeInClearBeforeSealingIsStillSent() throws {
        let relay = Relay()
        let now = Date()
        let legacy = OutboxMessage(
            id: UUID(), recipient: "ada@example.com", template: .recoveryCode, code: .clear("01234567"),
            expiresAt: now.addingTimeInterval(600), createdAt: now)
        XCTAssertEqual(try worker(relay).attempt(legacy), .delivered)
        XCTAssertTrue(
            String(decoding: try XCTUnwrap(relay.sent.withLock { $0.first }).data, as: UTF8.self)
                .contains("01234567"))
    }

    func testACodeUnderAKeyThisProcessDoesNotHoldWaitsAndOneThatDoesNotOpenIsGivenUp() throws {
        let relay = Relay()
        // Sealed by a replica whose ring has a newer current key this one does not hold yet.
        let newer = SecretKeyRing(keys: [Array(repeating: 2, count: 32), Array(repeating: 1, count: 32)])!
        let (fromNewer, _) = try message(attempts: 0, keys: newer)
        guard case .retry(let delay, let error) = try worker(relay).attempt(fromNewer) else {
            return XCTFail("waits for a replica that holds the key")
        }
        XCTAssertEqual(delay, OutboxWorker.keyNotHeldDelay)
        XCTAssertTrue(error.contains(newer.currentKeyID), error)
        // The old replica's ring, rotated: the previous key still opens what it sealed.
        XCTAssertEqual(try worker(relay, keys: newer).attempt(try message(attempts: 0).0), .delivered)
        // A box moved to another message does not open.
        var (moved, _) = try message(attempts: 0)
        moved.id = UUID()
        XCTAssertEqual(
            try worker(relay).attempt(moved),
            .giveUp(error: "the sealed code does not open: it was changed or belongs to another message"))
        XCTAssertEqual(relay.sent.withLock { $0.count }, 1, "only the message whose code opened was sent")
    }

    func testATransientFailureIsRetriedAfterTheBackoffUntilTheLastAttempt() throws {
        let relay = Relay()
        relay.failure.withLock { $0 = MailSendFailure(isTransient: true, description: "421 busy") }
        let worker = try worker(relay)
        XCTAssertEqual(worker.attempt(try message(attempts: 0).0), .retry(after: 1, error: "421 busy"))
        XCTAssertEqual(worker.attempt(try message(attempts: 3).0), .retry(after: 8, error: "421 busy"))
        XCTAssertEqual(
            worker.attempt(try message(attempts: OutboxRetry.maximumAttempts - 1).0), .giveUp(error: "421 busy"),
            "the last attempt gives up")
    }

    func testAPermanentRefusalIsGivenUpAtOnce() throws {
        let relay = Relay()
        relay.failure.withLock { $0 = MailSendFailure(isTransient: false, description: "550 no such user") }
        XCTAssertEqual(try worker(relay).attempt(try message(attempts: 0).0), .giveUp(error: "550 no such user"))
        XCTAssertEqual(relay.sent.withLock { $0.count }, 0)
    }
}
