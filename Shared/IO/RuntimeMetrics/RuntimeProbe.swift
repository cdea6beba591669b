import Foundation
import NetworkIO
import Observability
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Watches the process from a thread of its own and records what it sees in the metrics registry:
/// - `event_loop_lag_seconds{service, loop}`: every 100 ms each running event loop is handed a task, and the time
///   until the loop runs it is observed. A loop busy with one long callback, or starved of CPU, delays every
///   request it serves by as much; this shows it per loop.
/// - once a second, `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_open_fds` and
///   `process_start_time_seconds`, labelled with `service`.
public final class RuntimeProbe: Sendable {
    /// The histogram's buckets: 10 µs to 1 s.
    public static let lagBuckets: [Double] = [
        0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1,
    ]

    private let service: String
    private let metrics: MetricsRegistry
    private let interval: UInt64
    private let stopped = Atomic<Bool>(false)

    /// Creates a probe; nothing runs until ``start()``. `intervalNanoseconds` is the loop probing period.
    public init(service: String, metrics: MetricsRegistry, intervalNanoseconds: UInt64 = 100_000_000) {
        self.service = service
        self.metrics = metrics
        self.interval = intervalNanoseconds
    }

    /// Starts the probing thread.
    public func start() {
        Thread { [self] in run() }.start()
    }

    /// Ends the probing thread after its current pass.
    public func stop() { stopped.store(true, ordering: .releasing) }

    /// Probes every loop once and samples the process; the thread calls this, tests may too.
    public func probeOnce(sampleProcess: Bool) {
        for loop in EventLoop.running { probe(loop) }
        if sampleProcess { sample() }
    }

    private func run() {
        let bootTime = ProcessStatistics.bootTime()
        if let start = ProcessStatistics.current()?.startSecondsAfterBoot, let bootTime {
            metrics.set(
                "process_start_time_seconds", help: "When the process started (seconds since 1970).",
                labels: ["service": service], to: (bootTime + start).rounded())
        }
        var pass = 0
        let passesPerSample = max(1, Int(1_000_000_000 / max(1, interval)))
        while !stopped.load(ordering: .acquiring) {
            probeOnce(sampleProcess: pass % passesPerSample == 0)
            pass += 1
            var pause = timespec(tv_sec: Int(interval / 1_000_000_000), tv_nsec: Int(interval % 1_000_000_000))
            var left = timespec()
            while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
        }
    }

    private func probe(_ loop: EventLoop) {
        let sent = monotonicNanoseconds()
        let name = loop.name
        loop.execute { [metrics, service] in
            let lag = Double(monotonicNanoseconds() &- sent) / 1e9
            metrics.observe(
                "event_loop_lag_seconds", help: "Delay between handing an event loop a task and the loop running it.",
                labels: ["service": service, "loop": name], lag, buckets: RuntimeProbe.lagBuckets)
        }
    }

    private func sample() {
        if let statistics = ProcessStatistics.current() {
            // A counter: set to the kernel's running total, which only grows.
            metrics.setCounter(
                "process_cpu_seconds_total", help: "User and system CPU time spent, in seconds.",
                labels: ["service": service], to: statistics.cpuSeconds)
            metrics.set(
                "process_resident_memory_bytes", help: "Resident memory size in bytes.", labels: ["service": service],
                to: statistics.residentBytes)
        }
        if let descriptors = ProcessStatistics.openDescriptors() {
            metrics.set(
                "process_open_fds", help: "Open file descriptors.", labels: ["service": service],
                to: Double(descriptors))
        }
    }
}
