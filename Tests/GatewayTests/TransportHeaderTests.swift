import Configuration
import GatewayCore
import HTTPMessages
import Observability
import Synchronization
import XCTest

/// What the gateway says about the transport: HSTS when it terminates TLS itself, and a client's sampling decision
/// taken as given only from a trusted proxy.
final class TransportHeaderTests: XCTestCase {
    final class Recorded: SpanRecorder {
        let spans = Mutex<[String]>([])
        func record(_ span: Span) { spans.withLock { $0.append(span.name) } }
        var count: Int { spans.withLock { $0.count } }
    }

    func application(_ environment: [String: String], tracer: Tracer = .off) throws -> GatewayApplication {
        GatewayApplication(
            configuration: try GatewayConfiguration(environment: environment), backends: FakeBackends(),
            logger: Logger(service: "gateway", sink: MemoryLogSink()), metrics: MetricsRegistry(), tracer: tracer)
    }

    func request(from peer: String, traceparent: String? = nil) -> HTTPRequest {
        var headers = HTTPHeaders([("host", "localhost")])
        if let traceparent { headers.add("traceparent", traceparent) }
        return HTTPRequest(method: "GET", path: "/healthz", headers: headers, body: [], remoteAddress: peer)
    }

    func testHSTSOnlyWhenTheGatewayTerminatesTLS() async throws {
        let tls = try application([
            "GATEWAY_TLS_CERTIFICATE": "/etc/tls/cert.pem", "GATEWAY_TLS_KEY": "/etc/tls/key.pem",
        ])
        let secured = await tls.respond(to: request(from: "192.0.2.1"))
        XCTAssertEqual(secured.headers["strict-transport-security"], "max-age=31536000")
        let notFound = await tls.respond(
            to: HTTPRequest(
                method: "GET", path: "/nowhere", headers: HTTPHeaders([("host", "localhost")]), body: [],
                remoteAddress: "192.0.2.1"))
        XCTAssertEqual(notFound.headers["strict-transport-security"], "max-age=31536000", "on every answer")
        let plain = await try application([:]).respond(to: request(from: "192.0.2.1"))
        XCTAssertNil(plain.headers["strict-transport-security"], "behind a proxy, the proxy sets it")
    }

    func testAClientsSampledTraceIsContinuedButSampledOnlyWhenAProxyIsTrusted() async throws {
        let recorder = Recorded()
        let app = try application(
            ["PASSKEY_TRUSTED_PROXIES": "10.0.0.0/8"], tracer: Tracer(recorder: recorder, sampleRatio: 0))
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        let sampled = "00-\(traceID)-00f067aa0ba902b7-01"
        // An untrusted client's "sampled" is not obeyed at ratio 0, but its trace ID is kept for correlation.
        for _ in 0..<20 {
            let response = await app.respond(to: request(from: "192.0.2.7", traceparent: sampled))
            XCTAssertTrue(response.headers["traceresponse"]?.contains(traceID) ?? false)
            XCTAssertTrue(response.headers["traceresponse"]?.hasSuffix("-00") ?? false)
        }
        XCTAssertEqual(recorder.count, 0)
        // A trusted proxy's decision is taken as given.
        let proxied = await app.respond(to: request(from: "10.1.2.3", traceparent: sampled))
        XCTAssertTrue(proxied.headers["traceresponse"]?.hasSuffix("-01") ?? false)
        XCTAssertEqual(recorder.count, 1)
    }
}
