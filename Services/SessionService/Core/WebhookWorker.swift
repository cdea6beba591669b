import Crypto
import Encoding
import Foundation
import Observability
import Webhooks

/// Delivers the webhook outbox. Each of `lanes` loops leases one endpoint with its oldest waiting deliveries and
/// sends them in order; the first failure ends the batch and backs the endpoint off, so a slow or failing endpoint
/// holds one lane at a time and never delays another's deliveries. A delivery is marked delivered only after a 2xx;
/// one that was in flight when a worker died is sent again once its lease lapses (at least once: receivers drop
/// repeats by `webhook-id`).
public struct WebhookWorker: Sendable {
    /// The most deliveries one lease carries.
    public static let batchSize = 32

    let webhooks: any WebhookRepository
    let transport: any WebhookTransport
    /// Opens the endpoints' secrets to sign with.
    let keys: SecretKeyRing
    let retry: WebhookRetry
    let lanes: Int
    /// How long a lease lasts without progress: longer than one attempt may take.
    let lease: TimeInterval
    let pollInterval: Duration
    let metrics: MetricsRegistry
    let logger: Logger

    public init(
        webhooks: any WebhookRepository, transport: any WebhookTransport, keys: SecretKeyRing, retry: WebhookRetry,
        lanes: Int, attemptTimeout: TimeInterval, pollInterval: Duration = .milliseconds(250), metrics: MetricsRegistry,
        logger: Logger
    ) {
        self.webhooks = webhooks
        self.transport = transport
        self.keys = keys
        self.retry = retry
        self.lanes = max(1, lanes)
        lease = attemptTimeout + 5
        self.pollInterval = pollInterval
        self.metrics = metrics
        self.logger = logger
    }

    /// Delivers until cancelled.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<lanes { group.addTask { await self.lane() } }
        }
    }

    func lane() async {
        while !Task.isCancelled {
            do {
                if let batch = try await webhooks.lease(endpoints: 1, batch: Self.batchSize, lease: lease).first {
                    try await deliver(batch)
                    continue
                }
            } catch {
                logger.warning("webhooks.unavailable", ["error": String(describing: error)])
            }
            try? await Task.sleep(for: pollInterval)
        }
    }

    /// Sends the batch's deliveries in order until one fails; records each outcome.
    func deliver(_ batch: WebhookBatch) async throws {
        guard let first = batch.deliveries.first else { return }
        guard let secret = batch.secret.open(for: batch.endpointID, with: keys) else {
            // Not the receiver's fault: no attempt and no failure. The lease lapses by itself, and a replica that
            // holds the key (or this one, restarted with it) delivers then.
            count("secret_unreadable")
            logger.secretUnreadable(endpointID: batch.endpointID, stored: batch.secret)
            return
        }
        let destination: WebhookDestination
        switch await transport.destination(for: batch.url) {
        case .success(let checked): destination = checked
        case .failure(let refusal):
            try await fail(first, of: batch, error: refusal.description)
            return
        }
        for delivery in batch.deliveries {
            guard !Task.isCancelled else { break }
            let started = ContinuousClock.now
            let outcome = await transport.send(delivery, secret: secret, to: destination, at: Date())
            metrics.observe(
                "webhook_attempt_duration_seconds", help: "Webhook delivery attempts' time, until the response.",
                (ContinuousClock.now - started).seconds)
            switch outcome {
            case .success(let status) where (200..<300).contains(status):
                try await webhooks.recordDelivered(delivery, lease: batch.lease, extendingBy: lease)
                count("delivered")
                logger.debug(
                    "webhook.delivered",
                    [
                        "webhook.id": batch.endpointID.lowercaseText, "delivery.id": delivery.messageID,
                        "status": String(status),
                    ])
            case .success(let status):
                try await fail(delivery, of: batch, error: "HTTP \(status)")
                return
            case .failure(let error):
                try await fail(delivery, of: batch, error: error.description)
                return
            }
        }
        try await webhooks.release(endpoint: batch.endpointID, lease: batch.lease)
    }

    private func fail(_ delivery: WebhookDelivery, of batch: WebhookBatch, error: String) async throws {
        let failures = batch.failures + 1
        let delay = retry.delay(afterFailures: failures)
        let disabled = try await webhooks.recordFailure(
            delivery, lease: batch.lease, error: error, retryAfter: delay, disableAfter: retry.disableAfter)
        count("failed")
        if disabled {
            logger.audit(
                .webhookDisabled, ["webhook.id": batch.endpointID.lowercaseText, "error": String(error.prefix(200))])
        } else {
            logger.warning(
                "webhook.deferred",
                [
                    "webhook.id": batch.endpointID.lowercaseText, "delivery.id": delivery.messageID,
                    "failures": String(failures), "retry.seconds": String(delay), "error": String(error.prefix(200)),
                ])
        }
    }

    private func count(_ outcome: String) {
        metrics.increment(
            "webhook_attempts_total", help: "Webhook delivery attempts by outcome.", labels: ["outcome": outcome])
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
