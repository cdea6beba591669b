import Domain
import Observability

/// Publishes what waits in the email outbox, every few seconds, on every replica (each reads the same table):
/// `email_outbox_pending{service}` and `email_outbox_oldest_pending_seconds{service}`. A relay that is down, or a
/// worker that stopped, shows as both growing; the alert rules watch them.
public struct OutboxBacklogGauges: Sendable {
    /// How often the backlog is read.
    public static let interval: Duration = .seconds(5)

    let outbox: any EmailOutboxRepository
    let metrics: MetricsRegistry
    let logger: Logger
    let interval: Duration

    public init(
        outbox: any EmailOutboxRepository, metrics: MetricsRegistry, logger: Logger, interval: Duration = Self.interval
    ) {
        self.outbox = outbox
        self.metrics = metrics
        self.logger = logger
        self.interval = interval
    }

    /// Reads and publishes once.
    public func refresh() async throws {
        let backlog = try await outbox.backlog()
        metrics.set(
            "email_outbox_pending", help: "Outbox messages neither sent nor given up.",
            labels: ["service": "session-service"], to: Double(backlog.pending))
        metrics.set(
            "email_outbox_oldest_pending_seconds", help: "How long the oldest unsent outbox message has waited.",
            labels: ["service": "session-service"], to: backlog.oldestPendingSeconds)
    }

    /// Refreshes until cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await refresh()
            } catch {
                logger.warning("outbox_gauges.unavailable", ["error": String(describing: error)])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
