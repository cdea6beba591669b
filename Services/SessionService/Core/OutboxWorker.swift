import AccountRecovery
import Crypto
import Domain
import Encoding
import Foundation
import Observability

/// Why the relay did not take a message, and whether trying again may help.
public struct MailSendFailure: Error, Sendable {
    public let isTransient: Bool
    public let description: String

    public init(isTransient: Bool, description: String) {
        self.isTransient = isTransient
        self.description = description
    }
}

/// Delivers the outbox: one due message at a time, each in a transaction that holds its row while the relay is
/// talked to and records the outcome (sent, retry later with backoff, or given up). Requests only ever write to the
/// outbox, so a relay that is down fails no request; its messages wait and go out when it is back.
public struct OutboxWorker: Sendable {
    /// How long a message whose code is sealed under a key this process does not hold waits for a replica that
    /// holds it (or for this one's restart with it).
    static let keyNotHeldDelay: TimeInterval = 30

    let outbox: any EmailOutboxRepository
    let composer: MailComposer
    /// Opens the codes the messages carry.
    let keys: SecretKeyRing
    /// Hands one message to the relay; returns once the relay accepted it. Blocking (libcurl).
    let send: @Sendable (ComposedMail) throws(MailSendFailure) -> Void
    let pollInterval: Duration
    let metrics: MetricsRegistry
    let logger: Logger

    public init(
        outbox: any EmailOutboxRepository, composer: MailComposer, keys: SecretKeyRing,
        send: @escaping @Sendable (ComposedMail) throws(MailSendFailure) -> Void,
        pollInterval: Duration = .milliseconds(500), metrics: MetricsRegistry, logger: Logger
    ) {
        self.outbox = outbox
        self.composer = composer
        self.keys = keys
        self.send = send
        self.pollInterval = pollInterval
        self.metrics = metrics
        self.logger = logger
    }

    /// Delivers until cancelled: every due message, then a pause, again.
    public func run() async {
        while !Task.isCancelled {
            do {
                while !Task.isCancelled, try await outbox.deliverNext({ self.attempt($0) }) {}
            } catch {
                logger.warning("outbox.unavailable", ["error": String(describing: error)])
            }
            try? await Task.sleep(for: pollInterval)
        }
    }

    /// One delivery attempt and what to record for it. The message's code is opened here, just before it is sent,
    /// and exists in clear nowhere else.
    func attempt(_ message: OutboxMessage) -> DeliveryOutcome {
        func sending(code: String?) -> DeliveryOutcome {
            Self.outcome(
                of: message,
                sending: { () throws(MailSendFailure) in
                    try send(composer.compose(message, code: code, now: Date()))
                })
        }
        let outcome: DeliveryOutcome
        switch OneTimeCodes.open(message, keys: keys) {
        case .keyNotHeld(let keyID):
            // Not the relay's fault, and another replica may hold the key: try later, until the code expires.
            outcome = .retry(
                after: Self.keyNotHeldDelay,
                error: "the code is sealed under key \(keyID), which this process's key ring does not hold")
        case .unreadable:
            outcome = .giveUp(error: "the sealed code does not open: it was changed or belongs to another message")
        case .none:
            outcome = sending(code: nil)
        case .code(let code):
            outcome = sending(code: code)
        }
        let label: String
        switch outcome {
        case .delivered:
            label = "sent"
            logger.info(
                "mail.sent",
                [
                    "outbox.id": message.id.lowercaseText, "template": message.template.rawValue,
                    "attempt": String(message.attempts + 1),
                ])
        case .retry(let delay, let error):
            label = "retry"
            logger.warning(
                "mail.deferred",
                [
                    "outbox.id": message.id.lowercaseText, "attempt": String(message.attempts + 1),
                    "retry.seconds": String(Int(delay)), "error": error,
                ])
        case .giveUp(let error):
            label = "given_up"
            logger.error(
                "mail.given_up",
                ["outbox.id": message.id.lowercaseText, "attempt": String(message.attempts + 1), "error": error])
        }
        metrics.increment(
            "mail_delivery_attempts_total", help: "Outbox delivery attempts by outcome.", labels: ["outcome": label])
        return outcome
    }

    /// The outcome of one attempt that ran `sending`: a refusal for good, or the last allowed attempt, gives up;
    /// any other failure is retried after `OutboxRetry`'s backoff.
    static func outcome(of message: OutboxMessage, sending: () throws(MailSendFailure) -> Void) -> DeliveryOutcome {
        do {
            try sending()
            return .delivered
        } catch {
            let attempt = message.attempts + 1
            guard error.isTransient, attempt < OutboxRetry.maximumAttempts else {
                return .giveUp(error: error.description)
            }
            return .retry(after: OutboxRetry.delay(afterAttempt: attempt), error: error.description)
        }
    }
}
