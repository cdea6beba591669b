import Configuration
import Foundation
import Observability
import Synchronization
import XCTest

@testable import TraceExport

/// A one-connection-at-a-time HTTP receiver on loopback: answers each request with `status` after `delay`, and
/// keeps the bodies it received.
final class Receiver: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    let bodies = Mutex<[[UInt8]]>([])
    let status: Int
    let delay: useconds_t

    init(status: Int = 200, delay: useconds_t = 0) throws {
        self.status = status
        self.delay = delay
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(listener, 16)
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: bound.sin_port))
        Thread { [self] in serve() }.start()
    }

    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    private func serve() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            // Read the head, then Content-Length bytes.
            var bodyStart: Int?
            var contentLength = 0
            while true {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { break }
                received.append(contentsOf: buffer[0..<count])
                if bodyStart == nil, let range = find(Array("\r\n\r\n".utf8), in: received) {
                    bodyStart = range
                    let head = String(decoding: received[0..<range], as: UTF8.self).lowercased()
                    for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
                        contentLength =
                            Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
                if let start = bodyStart, received.count - start >= contentLength { break }
            }
            if let start = bodyStart {
                bodies.withLock { $0.append(Array(received[start..<(start + contentLength)])) }
            }
            if delay > 0 { usleep(delay) }
            let response = "HTTP/1.1 \(status) X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            _ = response.withCString { write(connection, $0, strlen($0)) }
            Glibc.close(connection)
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where Array(haystack[index..<(index + needle.count)]) == needle
        {
            return index + needle.count
        }
        return nil
    }
}

final class OTLPExporterTests: XCTestCase {
    func configuration(port: Int, extra: [String: String] = [:]) throws -> TracingConfiguration {
        var environment = ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:\(port)", "OTEL_BSP_SCHEDULE_DELAY": "50"]
        environment.merge(extra) { $1 }
        return try TracingConfiguration(EnvironmentReader(environment))
    }

    func makeSpans(_ tracer: Tracer, count: Int) {
        for index in 0..<count {
            let span = tracer.startSpan("span-\(index)", kind: .internal, continuing: nil)
            span.end()
        }
    }

    func waitFor(_ condition: () -> Bool, seconds: Double = 5) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { usleep(10_000) }
    }

    func testBatchesAreSentAsProtobufToTheTracesPath() throws {
        let receiver = try Receiver()
        defer { receiver.close() }
        let metrics = MetricsRegistry()
        let exporter = try XCTUnwrap(
            OTLPExporter(
                configuration: configuration(port: receiver.port), service: "test-service", metrics: metrics,
                logger: .disabled))
        exporter.start()
        defer { exporter.stop() }
        makeSpans(exporter.tracer(sampleRatio: 1), count: 10)
        waitFor { metrics.exposition().contains(#"trace_spans_exported_total{service="test-service"} 10"#) }
        XCTAssertTrue(metrics.exposition().contains(#"trace_spans_exported_total{service="test-service"} 10"#))
        let body = try XCTUnwrap(receiver.bodies.withLock { $0.first })
        // The service name and a span's name are in the protobuf body.
        XCTAssertNotNil(String(decoding: body, as: UTF8.self).range(of: "test-service"))
        XCTAssertNotNil(String(decoding: body, as: UTF8.self).range(of: "span-0"))
    }

    func testARefusingReceiverCostsTheBatchCountedAsExportFailed() throws {
        let receiver = try Receiver(status: 503)
        defer { receiver.close() }
        let metrics = MetricsRegistry()
        let exporter = try XCTUnwrap(
            OTLPExporter(
                configuration: configuration(port: receiver.port), service: "s", metrics: metrics, logger: .disabled))
        exporter.start()
        defer { exporter.stop() }
        makeSpans(exporter.tracer(sampleRatio: 1), count: 5)
        let expected = #"trace_spans_dropped_total{service="s",reason="export_failed"} 5"#
        waitFor { metrics.exposition().contains(expected) }
        XCTAssertTrue(metrics.exposition().contains(expected), metrics.exposition())
        XCTAssertFalse(metrics.exposition().contains("trace_spans_exported_total"))
    }

    func testNobodyListeningFailsQuickly() throws {
        // A port that was just free: the connection is refused.
        let receiver = try Receiver()
        let port = receiver.port
        receiver.close()
        let started = Date()
        let outcome = OTLPHTTPPost.send(
            [1, 2, 3], host: "127.0.0.1", port: port, path: "/v1/traces", timeoutMilliseconds: 2000)
        guard case .failure = outcome else { return XCTFail("a refused connection succeeded") }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
    }

    func testASlowReceiverIsGivenUpAtTheExportTimeout() throws {
        let receiver = try Receiver(delay: 3_000_000)
        defer { receiver.close() }
        let started = Date()
        let outcome = OTLPHTTPPost.send(
            [1, 2, 3], host: "127.0.0.1", port: receiver.port, path: "/v1/traces", timeoutMilliseconds: 300)
        guard case .failure(let failure) = outcome else { return XCTFail("a receiver that never answered succeeded") }
        XCTAssertTrue(failure.description.contains("timeout"), failure.description)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)
    }

    func testAFullQueueDropsSpansInsteadOfBlocking() throws {
        // The receiver answers slowly, so the queue (8 spans) fills while an export is in flight.
        let receiver = try Receiver(delay: 500_000)
        defer { receiver.close() }
        let metrics = MetricsRegistry()
        let exporter = try XCTUnwrap(
            OTLPExporter(
                configuration: configuration(
                    port: receiver.port, extra: ["OTEL_BSP_MAX_QUEUE_SIZE": "8", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "8"]),
                service: "s", metrics: metrics, logger: .disabled))
        exporter.start()
        defer { exporter.stop() }
        let started = Date()
        makeSpans(exporter.tracer(sampleRatio: 1), count: 1000)
        XCTAssertLessThan(Date().timeIntervalSince(started), 0.5, "ending spans waited for the exporter")
        XCTAssertLessThanOrEqual(exporter.queue.count, 8)
        waitFor { metrics.exposition().contains(#"reason="queue_full""#) }
        XCTAssertTrue(metrics.exposition().contains(#"trace_spans_dropped_total{service="s",reason="queue_full"}"#))
    }

    func testUnsampledSpansAreNeverQueued() throws {
        let queue = SpanQueue(capacity: 100)
        let tracer = Tracer(recorder: queue, sampleRatio: 0)
        for _ in 0..<50 { tracer.startSpan("x", kind: .server, continuing: nil).end() }
        XCTAssertEqual(queue.count, 0)
        // A caller's sampled decision is kept even at ratio 0.
        let parent = try XCTUnwrap(
            TraceContext.parse(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
        tracer.startSpan("y", kind: .server, continuing: parent).end()
        XCTAssertEqual(queue.count, 1)
    }
}

final class TracingConfigurationTests: XCTestCase {
    func read(_ environment: [String: String]) throws -> TracingConfiguration {
        try TracingConfiguration(EnvironmentReader(environment))
    }

    func testEndpointForms() throws {
        XCTAssertNil(try read([:]).endpoint)
        XCTAssertEqual(
            try read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"]).endpoint,
            .init(host: "collector", port: 4318, path: "/v1/traces"))
        XCTAssertEqual(
            try read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/otlp/"]).endpoint,
            .init(host: "collector", port: 4318, path: "/otlp/v1/traces"))
        XCTAssertEqual(
            try read(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://[::1]:9/custom"]).endpoint,
            .init(host: "::1", port: 9, path: "/custom"))
        XCTAssertEqual(
            try read(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector"]).endpoint,
            .init(host: "collector", port: 80, path: "/v1/traces"))
    }

    func testRefusals() {
        let bad: [(String, String)] = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://collector:4317"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:pw@collector:4318"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:0"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:99999"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://:4318"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/x?y"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + String(repeating: "a", count: 3000)),
            ("OTEL_TRACES_SAMPLER_ARG", "1.5"),
            ("OTEL_TRACES_SAMPLER_ARG", "-0.1"),
            ("OTEL_TRACES_SAMPLER_ARG", "half"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "0"),
            ("OTEL_BSP_EXPORT_TIMEOUT", "5"),
            ("OTEL_RESOURCE_ATTRIBUTES", "novalue"),
            ("OTEL_RESOURCE_ATTRIBUTES", (0..<33).map { "k\($0)=v" }.joined(separator: ",")),
        ]
        for (variable, value) in bad {
            XCTAssertThrowsError(try read([variable: value]), "\(variable)=\(value)") { error in
                XCTAssertEqual((error as? ConfigurationError)?.variable, variable)
            }
        }
    }

    func testBatchSizeCannotExceedTheQueue() {
        XCTAssertThrowsError(
            try read(["OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "11"]))
    }

    func testResourceAttributes() throws {
        let configuration = try read(["OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod, region=eu-1"])
        XCTAssertEqual(configuration.resourceAttributes.map(\.key), ["deployment.environment", "region"])
        XCTAssertEqual(configuration.resourceAttributes.map(\.value), ["prod", "eu-1"])
    }
}
