import Configuration
import Foundation
import NetworkIO
import Observability
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Sends a process's ended spans to an OTLP/HTTP receiver (`POST <path>`, `application/x-protobuf`), from a
/// thread of its own: a batch when `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans wait or `OTEL_BSP_SCHEDULE_DELAY` has
/// passed, each export bounded by `OTEL_BSP_EXPORT_TIMEOUT`. A receiver that is slow, refuses or is down costs the
/// batch in hand (dropped and counted, never retried into a growing backlog) and never a request: requests only
/// append to the bounded ``SpanQueue``.
///
/// Counted in `trace_spans_exported_total{service}` and `trace_spans_dropped_total{service, reason}` (`queue_full`
/// or `export_failed`); a failing receiver is logged at most once a minute.
public final class OTLPExporter: Sendable {
    public let queue: SpanQueue
    private let endpoint: TracingConfiguration.Endpoint
    private let batchSize: Int
    private let scheduleDelayNanoseconds: UInt64
    private let timeoutMilliseconds: Int32
    private let resource: [(key: String, value: String)]
    private let service: String
    private let metrics: MetricsRegistry
    private let logger: Logger
    private let stopped = Atomic<Bool>(false)
    private let failureLog = LogThrottle(interval: 60)

    /// An exporter for `configuration`'s endpoint; nil when none is configured.
    public init?(
        configuration: TracingConfiguration, service: String, metrics: MetricsRegistry, logger: Logger
    ) {
        guard let endpoint = configuration.endpoint else { return nil }
        self.endpoint = endpoint
        queue = SpanQueue(capacity: configuration.maximumQueueSize)
        batchSize = configuration.maximumBatchSize
        scheduleDelayNanoseconds = UInt64(configuration.scheduleDelay * 1e9)
        timeoutMilliseconds = Int32(clamping: Int(configuration.exportTimeout * 1000))
        resource =
            [("service.name", service), ("service.namespace", "passkey"), ("telemetry.sdk.language", "swift")]
            + configuration.resourceAttributes
        self.service = service
        self.metrics = metrics
        self.logger = logger
    }

    /// The tracer whose sampled spans this exporter sends.
    public func tracer(sampleRatio: Double) -> Tracer { Tracer(recorder: queue, sampleRatio: sampleRatio) }

    /// Starts the exporting thread.
    public func start() {
        Thread { [self] in run() }.start()
    }

    /// Exports what is queued, then stops the thread; blocks until done or the export timeout has passed.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        exportAll()
    }

    private func run() {
        var lastExport = monotonicNanoseconds()
        while !stopped.load(ordering: .acquiring) {
            let now = monotonicNanoseconds()
            if queue.count >= batchSize || (queue.count > 0 && now &- lastExport >= scheduleDelayNanoseconds) {
                exportBatch()
                lastExport = monotonicNanoseconds()
            } else {
                recordDropped()
                var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                nanosleep(&pause, nil)
            }
        }
    }

    private func exportAll() {
        let deadline = monotonicNanoseconds() &+ UInt64(timeoutMilliseconds) * 1_000_000
        while queue.count > 0 && monotonicNanoseconds() < deadline { exportBatch() }
    }

    private func exportBatch() {
        recordDropped()
        let spans = queue.take(upTo: batchSize)
        guard !spans.isEmpty else { return }
        let body = OTLPTraceEncoding.exportRequest(spans, resource: resource, scope: "passkey-server")
        let outcome = OTLPHTTPPost.send(
            body, host: endpoint.host, port: endpoint.port, path: endpoint.path,
            timeoutMilliseconds: timeoutMilliseconds)
        switch outcome {
        case .success:
            metrics.increment(
                "trace_spans_exported_total", help: "Spans accepted by the OTLP receiver.",
                labels: ["service": service], by: Double(spans.count))
        case .failure(let failure):
            metrics.increment(
                "trace_spans_dropped_total", help: "Spans dropped: the queue was full, or the export failed.",
                labels: ["service": service, "reason": "export_failed"], by: Double(spans.count))
            if let suppressed = failureLog.admit("export", at: Double(monotonicNanoseconds()) / 1e9) {
                logger.warning(
                    "trace.export_failed",
                    [
                        "endpoint": "\(endpoint.host):\(endpoint.port)\(endpoint.path)", "reason": failure.description,
                        "spans": String(spans.count), "suppressed": String(suppressed),
                    ])
            }
        }
    }

    private func recordDropped() {
        let dropped = queue.takeDroppedCount()
        guard dropped > 0 else { return }
        metrics.increment(
            "trace_spans_dropped_total", help: "Spans dropped: the queue was full, or the export failed.",
            labels: ["service": service, "reason": "queue_full"], by: Double(dropped))
    }
}
