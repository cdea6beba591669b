import Domain
import Observability

/// Keeps the `passkey_accounts{sign_in_method}` gauges current: reads the database's maintained counts (a few rows,
/// whatever the number of accounts) every `interval` until cancelled. A failed read keeps the last values and logs.
public struct AdoptionGauges: Sendable {
    /// How often the counts are read.
    public static let interval: Duration = .seconds(15)

    let counts: any SignInMethodCountRepository
    let metrics: MetricsRegistry
    let logger: Logger
    let interval: Duration

    public init(
        counts: any SignInMethodCountRepository, metrics: MetricsRegistry, logger: Logger,
        interval: Duration = Self.interval
    ) {
        self.counts = counts
        self.metrics = metrics
        self.logger = logger
        self.interval = interval
    }

    /// Reads and publishes once.
    public func refresh() async throws {
        let current = try await counts.counts()
        AdoptionMetrics.accounts(
            metrics, [.passwordOnly: current.passwordOnly, .both: current.both, .passkeyOnly: current.passkeyOnly])
    }

    /// Refreshes until cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await refresh()
            } catch {
                logger.warning("adoption_gauges.unavailable", ["error": String(describing: error)])
            }
            try? await Task.sleep(for: interval)
        }
    }
}
