import Observability
import Protobuf
import Synchronization
import XCTest

final class TraceContextTests: XCTestCase {
    func testReadsAndWritesTraceparent() throws {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try XCTUnwrap(TraceContext.parse(traceparent: text))
        XCTAssertEqual(context.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(context.spanID, 0x00f0_67aa_0ba9_02b7)
        XCTAssertTrue(context.sampled)
        XCTAssertEqual(context.traceparent, text)
        let unsampled = try XCTUnwrap(
            TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
        XCTAssertFalse(unsampled.sampled)
        // A later version is read by its first fields.
        XCTAssertNotNil(TraceContext.parse(traceparent: text.replacingOccurrences(of: "00-", with: "01-") + "-extra"))
    }

    func testRefusesMalformedValues() {
        let bad = [
            "", "00", "garbage",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 has exactly four fields
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace ID
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero span ID
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // version ff
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  // misplaced dash
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
        ]
        for value in bad { XCTAssertNil(TraceContext.parse(traceparent: value), value) }
    }
}

final class ListRecorder: SpanRecorder {
    let spans = Mutex<[Span]>([])
    func record(_ span: Span) { spans.withLock { $0.append(span) } }
}

final class SpanTests: XCTestCase {
    func testChildrenOfTheActiveSpanFormOneTree() async throws {
        let recorder = ListRecorder()
        let tracer = Tracer(recorder: recorder, sampleRatio: 1)
        let root = tracer.startSpan("POST /x", kind: .server, continuing: nil)
        await ActiveSpan.$current.withValue(root.active) {
            let child = ActiveSpan.startChild("SELECT", kind: .client)
            child?.set("db.system", "postgresql")
            child?.fail("no")
            child?.end()
        }
        root.end()
        root.end()  // a second end does nothing
        let spans = recorder.spans.withLock { $0 }
        XCTAssertEqual(spans.map(\.name), ["SELECT", "POST /x"])
        XCTAssertEqual(spans[0].context.traceID, spans[1].context.traceID)
        XCTAssertEqual(spans[0].parentSpanID, spans[1].context.spanID)
        XCTAssertEqual(spans[1].parentSpanID, 0)
        XCTAssertEqual(spans[0].errorMessage, "no")
        XCTAssertGreaterThanOrEqual(spans[1].endUnixNanoseconds, spans[1].startUnixNanoseconds)
        XCTAssertNil(ActiveSpan.startChild("outside", kind: .client))
    }

    func testAContinuedTraceKeepsTheCallersIDAndParent() throws {
        let recorder = ListRecorder()
        let parent = try XCTUnwrap(
            TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let span = Tracer(recorder: recorder, sampleRatio: 0).startSpan("rpc", kind: .server, continuing: parent)
        XCTAssertEqual(span.context.traceID, parent.traceID)
        XCTAssertEqual(span.parentSpanID, parent.spanID)
        XCTAssertNotEqual(span.context.spanID, parent.spanID)
        XCTAssertTrue(span.isRecording)
    }

    func testAnUnsampledSpanRecordsNothingButCarriesItsTrace() async {
        let recorder = ListRecorder()
        let span = Tracer(recorder: recorder, sampleRatio: 0).startSpan("x", kind: .server, continuing: nil)
        XCTAssertFalse(span.isRecording)
        await ActiveSpan.$current.withValue(span.active) {
            XCTAssertNil(ActiveSpan.startChild("child", kind: .client))
            XCTAssertEqual(ActiveSpan.current?.context.traceID, span.context.traceID)
        }
        span.end()
        XCTAssertTrue(recorder.spans.withLock { $0.isEmpty })
    }

    func testAttributesAreBounded() {
        let recorder = ListRecorder()
        let span = Tracer(recorder: recorder, sampleRatio: 1).startSpan("x", kind: .server, continuing: nil)
        for index in 0..<100 { span.set("k\(index)", index) }
        span.set("long", String(repeating: "é", count: 5000))
        XCTAssertEqual(span.attributes.count, Span.maximumAttributes)
        let long = Tracer(recorder: recorder, sampleRatio: 1).startSpan("y", kind: .server, continuing: nil)
        long.set("long", String(repeating: "a", count: 5000))
        guard case .string(let text) = long.attributes[0].value else { return XCTFail() }
        XCTAssertEqual(text.utf8.count, Span.maximumValueBytes)
    }

    func testLogLinesNameTheActiveTrace() async {
        let sink = MemoryLogSink()
        let logger = Logger(service: "s", sink: sink)
        let span = Tracer.off.startSpan("x", kind: .server, continuing: nil)
        logger.info("outside")
        await ActiveSpan.$current.withValue(span.active) { logger.info("inside") }
        XCTAssertFalse(sink.lines[0].contains("trace.id="))
        XCTAssertTrue(sink.lines[1].contains("trace.id=\(span.context.traceID.hex) event=inside"), sink.lines[1])
    }
}

final class OTLPTraceEncodingTests: XCTestCase {
    func testEncodesTheSpanFieldsOTLPDefines() throws {
        let recorder = ListRecorder()
        let parent = try XCTUnwrap(
            TraceContext.parse(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        let span = Tracer(recorder: recorder, sampleRatio: 1).startSpan("rpc", kind: .server, continuing: parent)
        span.set("flag", .bool(false))
        span.set("zero", .int(0))
        span.fail("broken")
        span.end()
        let bytes = OTLPTraceEncoding.exportRequest([span], resource: [("service.name", "svc")], scope: "scope")
        // ExportTraceServiceRequest.resource_spans(1) → ResourceSpans.scope_spans(2) → ScopeSpans.spans(2).
        let resourceSpans = try fields(bytes)[1]!.first!
        let scopeSpans = try fields(resourceSpans)[2]!.first!
        let encoded = try fields(try fields(scopeSpans)[2]!.first!)
        XCTAssertEqual(encoded[1]?.first, parent.traceID.bytes)
        XCTAssertEqual(encoded[4]?.first, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
        XCTAssertEqual(encoded[5]?.first.map { String(decoding: $0, as: UTF8.self) }, "rpc")
        // Two attributes, each a KeyValue whose value is written although false or zero.
        XCTAssertEqual(encoded[9]?.count, 2)
        for attribute in encoded[9]! { XCTAssertNotNil(try fields(attribute)[2]?.first) }
        // Status: message and STATUS_CODE_ERROR.
        let status = try fields(try XCTUnwrap(encoded[15]?.first))
        XCTAssertEqual(status[2]?.first.map { String(decoding: $0, as: UTF8.self) }, "broken")
    }

    /// The length-delimited fields of a message by number (other wire types skipped).
    func fields(_ bytes: [UInt8]) throws -> [UInt32: [[UInt8]]] {
        var result: [UInt32: [[UInt8]]] = [:]
        try bytes.withUnsafeBytes { buffer in
            var reader = ProtobufReader(buffer)
            while let (number, wireType) = try reader.readTag() {
                if wireType == .lengthDelimited {
                    result[number, default: []].append(try reader.readBytes())
                } else {
                    try reader.skipField(wireType: wireType, number: number)
                }
            }
        }
        return result
    }
}

final class SpanIDTests: XCTestCase {
    func testSpanAndTraceIDsAreNonZeroAndDistinctAcrossManyBufferRefills() {
        let tracer = Tracer(recorder: nil, sampleRatio: 0)
        var spanIDs = Set<UInt64>()
        var traceIDs = Set<String>()
        for _ in 0..<5_000 {
            let root = tracer.startSpan("request", kind: .server, continuing: nil)
            let continued = tracer.startSpan("call", kind: .server, continuing: root.context)
            XCTAssertNotEqual(root.context.spanID, 0)
            XCTAssertNotEqual(continued.context.spanID, 0)
            XCTAssertEqual(continued.context.traceID, root.context.traceID)
            spanIDs.insert(root.context.spanID)
            spanIDs.insert(continued.context.spanID)
            traceIDs.insert(root.context.traceID.hex)
        }
        XCTAssertEqual(spanIDs.count, 10_000, "a span ID was drawn twice")
        XCTAssertEqual(traceIDs.count, 5_000, "a trace ID was drawn twice")
    }
}
