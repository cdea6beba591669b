import Domain
import Foundation
import Observability
import Synchronization

/// `last_used_at` of passkeys whose sign-in changed nothing else, written in batches instead of in the sign-in's
/// commit. A sign-in's session and any use that matters to security (a moved sign count, a changed backup state,
/// a clone warning) commit together; the time of an otherwise unchanged use is display information, so it is
/// collected here and written at most `interval` later (and on shutdown) in one statement per
/// `PostgresPasskeySignInRepository.lastUseBatchLimit` passkeys.
///
/// Bounded: from half of `capacity` pending passkeys on, a flush starts at once; uses past `capacity` are dropped
/// and counted (the next sign-in of the same passkey records it again).
public final class LastUseRecorder: Sendable {
    private let pending = Mutex<[CredentialID: Date]>([:])
    private let repository: any PasskeySignInRepository
    private let batchLimit: Int
    public let capacity: Int
    /// How stale a recorded `last_used_at` may be: the longest time between flushes.
    public let interval: Duration
    private let metrics: MetricsRegistry?
    private let logger: Logger?

    public init(
        repository: any PasskeySignInRepository, interval: Duration = .seconds(5), batchLimit: Int = 1_000,
        capacity: Int = 100_000, metrics: MetricsRegistry? = nil, logger: Logger? = nil
    ) {
        precondition(interval <= .seconds(10), "last_used_at is at most 10 s stale")
        self.repository = repository
        self.interval = interval
        self.batchLimit = batchLimit
        self.capacity = capacity
        self.metrics = metrics
        self.logger = logger
    }

    /// Notes that the passkey signed in at `date`; a later date wins.
    public func note(_ credentialID: CredentialID, at date: Date) {
        let accepted = pending.withLock { pending -> Bool in
            if let known = pending[credentialID] {
                if known < date { pending[credentialID] = date }
                return true
            }
            guard pending.count < capacity else { return false }
            pending[credentialID] = date
            return true
        }
        if !accepted {
            metrics?.increment(
                "passkey_last_use_dropped_total", help: "Passkey uses whose time was not recorded: the queue was full.")
        }
    }

    /// Passkeys waiting to be written.
    public var pendingCount: Int { pending.withLock { $0.count } }

    /// Writes every pending time, a batch per statement. A batch that fails goes back to the queue (where a newer
    /// time of the same passkey wins) and the error is thrown.
    public func flush() async throws {
        while true {
            let batch = pending.withLock { pending -> [CredentialID: Date] in
                var batch: [CredentialID: Date] = [:]
                for (id, date) in pending {
                    guard batch.count < batchLimit else { break }
                    batch[id] = date
                }
                for id in batch.keys { pending.removeValue(forKey: id) }
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                let written = try await repository.recordLastUse(batch)
                metrics?.increment(
                    "passkey_last_use_written_total", help: "Passkey last-use times written in batches.",
                    by: Double(written))
            } catch {
                pending.withLock { pending in
                    for (id, date) in batch where pending[id].map({ $0 < date }) ?? true { pending[id] = date }
                }
                throw error
            }
        }
    }

    /// Flushes every `interval`, or sooner once half the capacity is pending, until the task is cancelled; then
    /// once more, so a replica that drains leaves nothing behind.
    public func run() async {
        var lastFlush = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(100))
            guard ContinuousClock.now - lastFlush >= interval || pendingCount >= capacity / 2
            else { continue }
            lastFlush = ContinuousClock.now
            await flushLogging()
        }
        await flushLogging()
    }

    private func flushLogging() async {
        do {
            try await flush()
        } catch {
            logger?.warning("passkey.last_use_flush_failed", ["detail": String(describing: error)])
        }
    }
}
