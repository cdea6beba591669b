import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a span stands for, as OTLP numbers it.
public enum SpanKind: Int, Sendable {
    case `internal` = 1
    case server = 2
    case client = 3
}

/// One attribute value of a span.
public enum SpanAttributeValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case bool(Bool)
}

/// Where ended spans go: a bounded queue that an exporter drains (``SpanQueue``), or a test's list.
public protocol SpanRecorder: Sendable {
    /// Takes an ended span; never blocks.
    func record(_ span: Span)
}

/// One timed operation of a trace. Made by ``Tracer/startSpan(_:kind:continuing:)`` or
/// ``ActiveSpan/startChild(_:kind:)``, changed only by the task that made it, and handed to the recorder by
/// ``end()``; after that it is only read. A span of an unsampled trace records nothing, but still carries the
/// trace's context, so logs and the calls it makes name the trace.
public final class Span: @unchecked Sendable {
    // @unchecked: mutated by the one task that owns it until `end()`, read-only afterwards (by the exporter).

    /// The limits that keep one span bounded: attributes per span and bytes per text value.
    public static let maximumAttributes = 32
    public static let maximumValueBytes = 1024

    public let context: TraceContext
    /// The span this one is a child of; 0 for a trace's root.
    public let parentSpanID: UInt64
    public let name: String
    public let kind: SpanKind
    public let startUnixNanoseconds: UInt64
    public private(set) var endUnixNanoseconds: UInt64 = 0
    public private(set) var attributes: [(key: String, value: SpanAttributeValue)] = []
    /// Set when the operation failed, with a short reason.
    public private(set) var errorMessage: String?
    private let recorder: (any SpanRecorder)?

    init(context: TraceContext, parentSpanID: UInt64, name: String, kind: SpanKind, recorder: (any SpanRecorder)?) {
        self.context = context
        self.parentSpanID = parentSpanID
        self.name = name
        self.kind = kind
        self.recorder = context.sampled ? recorder : nil
        self.startUnixNanoseconds = self.recorder == nil ? 0 : unixNanosecondsNow()
    }

    /// True when this span will be exported.
    public var isRecording: Bool { recorder != nil }

    /// Sets an attribute (text cut to ``maximumValueBytes``); beyond ``maximumAttributes`` it is dropped.
    public func set(_ key: String, _ value: SpanAttributeValue) {
        guard recorder != nil, attributes.count < Self.maximumAttributes else { return }
        if case .string(let text) = value, text.utf8.count > Self.maximumValueBytes {
            attributes.append((key, .string(String(decoding: text.utf8.prefix(Self.maximumValueBytes), as: UTF8.self))))
        } else {
            attributes.append((key, value))
        }
    }

    public func set(_ key: String, _ text: String) { set(key, .string(text)) }
    public func set(_ key: String, _ number: Int) { set(key, .int(Int64(number))) }

    /// Marks the operation as failed.
    public func fail(_ message: String) {
        guard recorder != nil else { return }
        errorMessage = String(decoding: message.utf8.prefix(Self.maximumValueBytes), as: UTF8.self)
    }

    /// Ends the span and hands it to the recorder; later calls do nothing.
    public func end() {
        guard let recorder, endUnixNanoseconds == 0 else { return }
        endUnixNanoseconds = max(unixNanosecondsNow(), startUnixNanoseconds)
        recorder.record(self)
    }

    /// This span as the current one of a task.
    public var active: ActiveSpan { ActiveSpan(context: context, recorder: recorder) }
}

/// The span a task runs in (a task-local value): its children are made from it, the log lines written meanwhile
/// name its trace, and the calls made meanwhile pass its context on.
public struct ActiveSpan: Sendable {
    public let context: TraceContext
    let recorder: (any SpanRecorder)?

    @TaskLocal public static var current: ActiveSpan?

    /// A child of the current span, or nil when there is none or its trace is not sampled; the caller ends it.
    public static func startChild(_ name: String, kind: SpanKind) -> Span? {
        current?.child(name, kind: kind)
    }

    /// A child of this span, or nil when its trace is not sampled; the caller ends it.
    public func child(_ name: String, kind: SpanKind) -> Span? {
        guard context.sampled, let recorder else { return nil }
        return Span(
            context: TraceContext(traceID: context.traceID, spanID: SpanIDs.next(), sampled: true),
            parentSpanID: context.spanID, name: name, kind: kind, recorder: recorder)
    }
}

/// Makes the spans of one process: a trace started here, or continued from a caller's `traceparent`.
public struct Tracer: Sendable {
    /// Where ended spans go; nil when nothing exports them (spans still carry IDs for logs and calls).
    public let recorder: (any SpanRecorder)?
    /// The share of new traces that are sampled, 0…1; a continued trace keeps its caller's decision.
    public let sampleRatio: Double

    public init(recorder: (any SpanRecorder)?, sampleRatio: Double) {
        self.recorder = recorder
        self.sampleRatio = min(1, max(0, sampleRatio))
    }

    /// A tracer that exports nothing.
    public static let off = Tracer(recorder: nil, sampleRatio: 0)

    /// Starts a span continuing `parent` (a caller's context), or a new trace when there is none: sampled by
    /// ``sampleRatio`` when something records it.
    ///
    /// With `trustingSampling` false (a caller that is not a trusted proxy), a parent's trace is continued but its
    /// sampling decision is not taken as given: this tracer's own ratio decides, so an untrusted client cannot make
    /// every request of its own traced.
    public func startSpan(
        _ name: String, kind: SpanKind, continuing parent: TraceContext?, trustingSampling: Bool = true
    ) -> Span {
        let context: TraceContext
        if let parent {
            let sampled = trustingSampling ? parent.sampled : sampleDecision()
            context = TraceContext(traceID: parent.traceID, spanID: SpanIDs.next(), sampled: sampled)
        } else {
            context = TraceContext(traceID: SpanIDs.nextTraceID(), spanID: SpanIDs.next(), sampled: sampleDecision())
        }
        return Span(context: context, parentSpanID: parent?.spanID ?? 0, name: name, kind: kind, recorder: recorder)
    }

    /// A new trace's sampling decision: the configured ratio, and never without an exporter.
    private func sampleDecision() -> Bool {
        recorder != nil && (sampleRatio >= 1 || Double.random(in: 0..<1) < sampleRatio)
    }
}

/// Random span and trace IDs, never zero. Every request starts or continues a trace whether or not it is sampled
/// (logs and calls carry the IDs), so they come from a buffer that one read of /dev/urandom fills 512 words at a time:
/// drawing each from the kernel cost the gateway six system calls per sign-in.
enum SpanIDs {
    private static let words = Mutex(RandomWords())

    static func next() -> UInt64 { words.withLock { $0.nextNonZero() } }

    static func nextTraceID() -> TraceID { words.withLock { TraceID(high: $0.next(), low: $0.nextNonZero()) } }
}

/// Random 64-bit words from the kernel, fetched in bulk.
struct RandomWords {
    static let batch = 512
    private var buffer = [UInt64](repeating: 0, count: batch)
    private var used = batch

    mutating func next() -> UInt64 {
        if used == buffer.count { refill() }
        defer { used += 1 }
        return buffer[used]
    }

    mutating func nextNonZero() -> UInt64 {
        while true {
            let value = next()
            if value != 0 { return value }
        }
    }

    private mutating func refill() {
        let wanted = buffer.count * MemoryLayout<UInt64>.size
        var filled = 0
        let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            buffer.withUnsafeMutableBytes { bytes in
                while filled < wanted {
                    let count = read(descriptor, bytes.baseAddress! + filled, wanted - filled)
                    guard count > 0 || (count < 0 && errno == EINTR) else { break }
                    filled += max(count, 0)
                }
            }
            close(descriptor)
        }
        // Without /dev/urandom (a sandbox that hides it), the words come one system call each, as before.
        if filled < wanted {
            var generator = SystemRandomNumberGenerator()
            for index in buffer.indices { buffer[index] = generator.next() }
        }
        used = 0
    }
}

/// The wall clock in nanoseconds since 1970, as spans are timed.
public func unixNanosecondsNow() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// A bounded queue of ended spans between the tasks that end them and the exporter that sends them. A span that
/// finds it full is dropped and counted, so a collector that is slow or down costs memory up to the bound and
/// never delays a request.
public final class SpanQueue: SpanRecorder {
    private let capacity: Int
    private let state: Mutex<(spans: [Span], dropped: UInt64)>

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Mutex(([], 0))
    }

    public func record(_ span: Span) {
        state.withLock { state in
            if state.spans.count < capacity {
                state.spans.append(span)
            } else {
                state.dropped += 1
            }
        }
    }

    /// Takes up to `limit` spans, oldest first.
    public func take(upTo limit: Int) -> [Span] {
        state.withLock { state in
            let count = min(limit, state.spans.count)
            let taken = Array(state.spans.prefix(count))
            state.spans.removeFirst(count)
            return taken
        }
    }

    /// Spans waiting now.
    public var count: Int { state.withLock { $0.spans.count } }

    /// Spans dropped because the queue was full, since the last call; resets the count.
    public func takeDroppedCount() -> UInt64 {
        state.withLock { state in
            defer { state.dropped = 0 }
            return state.dropped
        }
    }
}
