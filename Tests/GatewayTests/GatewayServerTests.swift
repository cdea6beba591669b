import Configuration
import Foundation
import GRPC
import GRPCHealth
import GatewayCore
import Glibc
import HTTPServer
import JSON
import NetworkIO
import Observability
import XCTest

/// The gateway on a real port, in-process, with no service running behind it.
final class GatewayServerTests: XCTestCase {
    var gateway: Gateway!
    var port: UInt16 = 0

    override func setUp() async throws {
        try await super.setUp()
        let configuration = try Self.configuration()
        gateway = try Gateway(
            configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
            listenAddress: SocketAddress(host: "127.0.0.1", port: 0),
            serverSettings: { server in
                server.threadCount = 2
                server.idleTimeout = .seconds(2)
                server.requestTimeout = .milliseconds(700)
                server.drainTimeout = .seconds(2)
            })
        port = try gateway.start().port
    }

    /// The gateway's configuration in these tests: its services are plaintext doubles on a port nothing answers.
    static func configuration(_ extra: [String: String] = [:]) throws -> GatewayConfiguration {
        let servicePort = unusedPort()
        return try GatewayConfiguration(
            environment: [
                "GRPC_PLAINTEXT": "true",
                "CHALLENGE_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
                "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
                "SESSION_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
            ].merging(extra) { _, new in new })
    }

    override func tearDown() async throws {
        gateway.shutdown()
        gateway = nil
        try await super.tearDown()
    }

    func request(_ method: String, _ path: String, body: String? = nil, headers: [String] = []) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for header in headers { text += header + "\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + (body ?? "")
    }

    func testKeepAliveAndPipelinedResponsesInOrder() throws {
        let connection = try RawHTTPConnection(port: port)
        connection.send(request("GET", "/healthz"))
        XCTAssertEqual(connection.readResponse()?.status, 200)
        connection.send(request("GET", "/.well-known/webauthn"))
        let second = connection.readResponse()
        XCTAssertEqual(second?.status, 200)
        XCTAssertEqual(second?.json, ["origins": ["http://localhost:8080"]])
        // Three pipelined requests in one write; the second needs a backend and is slower than the third.
        connection.send(
            request("GET", "/v1/nowhere")
                + request(
                    "POST", "/v1/passkeys/authentications", body: "{}", headers: ["Content-Type: application/json"])
                + request("GET", "/healthz"))
        XCTAssertEqual(connection.readResponse()?.status, 404)
        XCTAssertEqual(connection.readResponse()?.status, 503)
        XCTAssertEqual(connection.readResponse()?.status, 200)
        connection.send(request("HEAD", "/healthz"))
        let head = connection.readResponse(headRequest: true)
        XCTAssertEqual(head?.status, 200)
        XCTAssertEqual(head?.body, [])
        connection.send(request("GET", "/healthz", headers: ["Connection: close"]))
        let last = connection.readResponse()
        XCTAssertEqual(last?.headers["connection"], "close")
        XCTAssertTrue(connection.readsEndOfStream())
    }

    func testBodyOverTheLimitIs413() throws {
        let connection = try RawHTTPConnection(port: port)
        let body = String(repeating: "a", count: 65 * 1024)
        connection.send(
            request("POST", "/v1/sessions/password", body: body, headers: ["Content-Type: application/json"]))
        let response = connection.readResponse()
        XCTAssertEqual(response?.status, 413)
        XCTAssertEqual(response?.headers["content-type"], "application/problem+json")
        XCTAssertEqual(response?.json?["code"], "payload_too_large")
        XCTAssertTrue(connection.readsEndOfStream())
        XCTAssertTrue(
            gateway.application.metrics.exposition().contains(
                #"gateway_http_requests_total{route="unreadable",status="413"} 1"#))

        let chunked = try RawHTTPConnection(port: port)
        let chunk = String(repeating: "b", count: 40 * 1024)
        chunked.send(
            "POST /v1/sessions/password HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n" + String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n"
                + String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n0\r\n\r\n")
        XCTAssertEqual(chunked.readResponse()?.status, 413)
    }

    func testExpectContinue() throws {
        let connection = try RawHTTPConnection(port: port)
        connection.send(
            "POST /v1/passkeys/authentications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(connection.readResponse()?.status, 100)
        connection.send("{}")
        XCTAssertEqual(connection.readResponse()?.status, 503)

        let tooLarge = try RawHTTPConnection(port: port)
        tooLarge.send(
            "POST /v1/accounts/password HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: 70000\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(tooLarge.readResponse()?.status, 413)
    }

    func testErrorResponsesAreProblemJSON() throws {
        let connection = try RawHTTPConnection(port: port)
        let cases: [(String, Int, String)] = [
            (
                request("POST", "/v1/sessions/password", body: "email=a", headers: ["Content-Type: text/plain"]), 415,
                "unsupported_media_type"
            ),
            (request("GET", "/v1/unknown"), 404, "not_found"),
            (request("PUT", "/v1/session"), 405, "method_not_allowed"),
            (
                request(
                    "POST", "/v1/sessions/password", body: "{\"email\":", headers: ["Content-Type: application/json"]),
                400, "invalid_request"
            ),
            (
                request(
                    "POST", "/v1/sessions/password", body: "{\"email\":\"a@b.c\"}",
                    headers: ["Content-Type: application/json"]), 400, "invalid_request"
            ),
            (request("GET", "/v1/session"), 401, "unauthenticated"),
            (request("GET", "/v1/passkeys", headers: ["Authorization: Basic abc"]), 401, "unauthenticated"),
        ]
        for (text, status, code) in cases {
            connection.send(text)
            let response = connection.readResponse()
            XCTAssertEqual(response?.status, status, text)
            XCTAssertEqual(response?.headers["content-type"], "application/problem+json", text)
            XCTAssertEqual(response?.json?["code"]?.stringValue, code, text)
            XCTAssertEqual(response?.json?["status"], .integer(status), text)
        }
    }

    func testUnreachableServicesGive503Quickly() throws {
        let connection = try RawHTTPConnection(port: port)
        for (text, label) in [
            (
                request(
                    "POST", "/v1/sessions/password", body: #"{"email":"a@b.c","password":"x"}"#,
                    headers: ["Content-Type: application/json"]), "password"
            ),
            (request("GET", "/v1/session", headers: ["Authorization: Bearer abc"]), "bearer"),
            (
                request(
                    "POST", "/v1/passkeys/account-registrations", body: "{}",
                    headers: ["Content-Type: application/json"]), "start"
            ),
        ] {
            for _ in 0..<3 {
                let started = Date()
                connection.send(text)
                let response = connection.readResponse()
                let elapsed = Date().timeIntervalSince(started)
                XCTAssertEqual(response?.status, 503, label)
                XCTAssertEqual(response?.headers["content-type"], "application/problem+json")
                XCTAssertEqual(response?.json?["code"], "unavailable")
                XCTAssertLessThan(elapsed, 1.0, label)
            }
        }
    }

    func testOperationalEndpoints() throws {
        let connection = try RawHTTPConnection(port: port)
        connection.send(request("GET", "/healthz"))
        XCTAssertEqual(connection.readResponse()?.status, 200)
        let started = Date()
        connection.send(request("GET", "/readyz"))
        let ready = connection.readResponse()
        XCTAssertEqual(ready?.status, 503)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)
        connection.send(request("GET", "/openapi.json"))
        let document = connection.readResponse()
        XCTAssertEqual(document?.status, 200)
        XCTAssertEqual(document?.json?["openapi"], "3.1.0")
        connection.send(request("GET", "/metrics"))
        let metrics = connection.readResponse().map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        XCTAssertTrue(metrics.contains(#"gateway_http_requests_total{route="GET /readyz",status="503"} 1"#), metrics)
    }

    func testHugeHeadIs431AndMalformedRequestsAre400() throws {
        let connection = try RawHTTPConnection(port: port)
        connection.send(request("GET", "/healthz", headers: ["X-Big: " + String(repeating: "x", count: 20_000)]))
        let response = connection.readResponse()
        XCTAssertEqual(response?.status, 431)
        XCTAssertEqual(response?.headers["content-type"], "application/problem+json")
        XCTAssertTrue(connection.readsEndOfStream())

        let smuggling = try RawHTTPConnection(port: port)
        smuggling.send(
            "POST /v1/accounts/password HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
        XCTAssertEqual(smuggling.readResponse()?.status, 400)
    }

    func testSlowAndIdleConnectionsAreClosed() throws {
        let slow = try RawHTTPConnection(port: port)
        slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        let timedOut = slow.readResponse()
        XCTAssertEqual(timedOut?.status, 408)
        XCTAssertTrue(slow.readsEndOfStream())

        let idle = try RawHTTPConnection(port: port)
        idle.send(request("GET", "/healthz"))
        XCTAssertEqual(idle.readResponse()?.status, 200)
        let started = Date()
        XCTAssertTrue(idle.readsEndOfStream())
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 1.5)
    }

    func testHTTP2WithPriorKnowledge() throws {
        guard let curl = programPath("curl") else { throw XCTSkip("curl is not installed") }
        let base = "http://127.0.0.1:\(port)"
        // One curl per URL: curl 7.88 fails to reuse a prior-knowledge connection for a second URL.
        for (method, path, expected) in [
            ("GET", "/healthz", "2 200"), ("GET", "/v1/nowhere", "2 404"), ("GET", "/v1/session", "2 401"),
            ("GET", "/readyz", "2 503"), ("GET", "/openapi.json", "2 200"), ("PUT", "/v1/session", "2 405"),
        ] {
            let (status, output, _) = try runProgram(
                curl,
                [
                    "-s", "--http2-prior-knowledge", "-X", method, "-o", "/dev/null", "-w",
                    "%{http_version} %{http_code}", base + path,
                ])
            XCTAssertEqual(status, 0, path)
            XCTAssertEqual(output, expected, path)
        }
        let (_, problem, _) = try runProgram(
            curl,
            [
                "-s", "--http2-prior-knowledge", "-X", "POST", "-H", "content-type: text/plain", "-d", "x",
                "\(base)/v1/sessions/password",
            ])
        XCTAssertEqual(try JSONReader.parse(Array(problem.utf8))["code"], "unsupported_media_type")

        let bodyFile = NSTemporaryDirectory() + "gateway-big-\(port).json"
        try Data(repeating: 0x61, count: 65 * 1024).write(to: URL(fileURLWithPath: bodyFile))
        defer { try? FileManager.default.removeItem(atPath: bodyFile) }
        let (_, tooLarge, _) = try runProgram(
            curl,
            [
                "-s", "--http2-prior-knowledge", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                "content-type: application/json", "--data-binary", "@\(bodyFile)", "\(base)/v1/sessions/password",
            ])
        XCTAssertEqual(tooLarge, "413")

        let (_, unavailable, _) = try runProgram(
            curl,
            [
                "-s", "--http2-prior-knowledge", "-H", "content-type: application/json", "-d",
                #"{"email":"a@b.c","password":"x"}"#, "\(base)/v1/sessions/password",
            ])
        XCTAssertEqual(try JSONReader.parse(Array(unavailable.utf8))["code"], "unavailable")
    }

    func testConcurrentStreamsOnOneHTTP2Connection() throws {
        guard let nghttp = programPath("nghttp") else { throw XCTSkip("nghttp is not installed") }
        let base = "http://127.0.0.1:\(port)"
        let (status, output, _) = try runProgram(
            nghttp,
            ["-nv", base + "/healthz", base + "/v1/nowhere", base + "/v1/session", base + "/.well-known/webauthn"])
        XCTAssertEqual(status, 0)
        let statuses = output.split(separator: "\n").filter { $0.contains(":status:") }.compactMap {
            $0.split(separator: " ").last
        }
        XCTAssertEqual(statuses.sorted(), ["200", "200", "401", "404"])

        let bodyFile = NSTemporaryDirectory() + "gateway-nghttp-\(port).json"
        defer { try? FileManager.default.removeItem(atPath: bodyFile) }
        for (size, contentType, expected) in [
            (65 * 1024, "application/json", "413"), (10, "text/plain", "415"), (2, "application/json", "400"),
        ] {
            try Data(repeating: 0x7B, count: size).write(to: URL(fileURLWithPath: bodyFile))
            let (_, posted, _) = try runProgram(
                nghttp, ["-nv", "-d", bodyFile, "-H", "content-type: \(contentType)", base + "/v1/sessions/password"])
            let status = posted.split(separator: "\n").first { $0.contains(":status:") }?.split(separator: " ").last
            XCTAssertEqual(status.map(String.init), expected, "\(size) bytes of \(contentType)")
        }
    }

    func testDrainClosesIdleConnections() throws {
        let connection = try RawHTTPConnection(port: port)
        connection.send(request("GET", "/healthz"))
        XCTAssertEqual(connection.readResponse()?.status, 200)
        gateway.shutdown()
        XCTAssertTrue(connection.readsEndOfStream())
        XCTAssertThrowsError(try RawHTTPConnection(port: port))
    }
}

/// TLS with ALPN: h2 and http/1.1 on one port.
final class GatewayTLSTests: XCTestCase {
    func testTLSNegotiatesHTTP2AndHTTP1() throws {
        guard let openssl = programPath("openssl"), let curl = programPath("curl") else {
            throw XCTSkip("openssl or curl is not installed")
        }
        let directory = NSTemporaryDirectory() + "gateway-tls-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (made, _, _) = try runProgram(
            openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                "\(directory)/key.pem", "-out", "\(directory)/cert.pem", "-days", "1", "-subj", "/CN=localhost",
            ])
        XCTAssertEqual(made, 0)
        let unused = unusedPort()
        let configuration = try GatewayConfiguration(environment: [
            // The test's services are plaintext doubles.
            "GRPC_PLAINTEXT": "true",
            "GATEWAY_TLS_CERTIFICATE": "\(directory)/cert.pem", "GATEWAY_TLS_KEY": "\(directory)/key.pem",
            "CHALLENGE_SERVICE_ADDRESSES": "127.0.0.1:\(unused)",
            "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:\(unused)",
            "SESSION_SERVICE_ADDRESSES": "127.0.0.1:\(unused)",
        ])
        let gateway = try Gateway(
            configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
            listenAddress: SocketAddress(host: "127.0.0.1", port: 0))
        let port = try gateway.start().port
        defer { gateway.shutdown() }
        let url = "https://127.0.0.1:\(port)/healthz"
        let (_, http2, _) = try runProgram(
            curl, ["-sk", "--http2", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", url])
        XCTAssertEqual(http2, "2 200")
        let (_, http1, _) = try runProgram(
            curl, ["-sk", "--http1.1", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", url])
        XCTAssertEqual(http1, "1.1 200")
    }

    func testUnloadableCertificateNamesTheVariable() throws {
        let configuration = try GatewayConfiguration(environment: [
            // The test's services are plaintext doubles.
            "GRPC_PLAINTEXT": "true",
            "GATEWAY_TLS_CERTIFICATE": "/nonexistent/cert.pem", "GATEWAY_TLS_KEY": "/nonexistent/key.pem",
        ])
        XCTAssertThrowsError(
            try Gateway(
                configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
                listenAddress: SocketAddress(host: "127.0.0.1", port: 0))
        ) { error in
            XCTAssertEqual((error as? ConfigurationError)?.variable, "GATEWAY_TLS_CERTIFICATE")
        }
    }
}

/// A service that comes back is used again without restarting the gateway.
final class GatewayRecoveryTests: XCTestCase {
    func testReadinessFollowsAServiceThatGoesAndComesBack() async throws {
        let servicePort = unusedPort()
        let configuration = try GatewayConfiguration(environment: [
            // The test's services are plaintext doubles.
            "GRPC_PLAINTEXT": "true",
            "CHALLENGE_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
            "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
            "SESSION_SERVICE_ADDRESSES": "127.0.0.1:\(servicePort)",
        ])
        let gateway = try Gateway(
            configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
            listenAddress: SocketAddress(host: "127.0.0.1", port: 0))
        let port = try gateway.start().port
        defer { gateway.shutdown() }
        func readiness() throws -> Int? {
            let connection = try RawHTTPConnection(port: port)
            connection.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
            return connection.readResponse()?.status
        }
        // Down for a while, so that the clients back off as far as they go.
        for _ in 0..<4 {
            XCTAssertEqual(try readiness(), 503)
            try await Task.sleep(for: .milliseconds(400))
        }
        let server = GRPCServer(
            configuration: GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: servicePort)))
        HealthService().register(on: server)
        try server.start()
        let started = Date()
        var status = try readiness()
        XCTAssertEqual(status, 200, "the first call after the service is back must reach it")
        while status != 200 && Date().timeIntervalSince(started) < 5 {
            try await Task.sleep(for: .milliseconds(100))
            status = try readiness()
        }
        XCTAssertEqual(status, 200)
        XCTAssertLessThan(Date().timeIntervalSince(started), 2.0, "a recovered service must be used again quickly")
        server.shutdown()
        let stopped = Date()
        status = try readiness()
        while status != 503 && Date().timeIntervalSince(stopped) < 5 {
            try await Task.sleep(for: .milliseconds(100))
            status = try readiness()
        }
        XCTAssertEqual(status, 503)
    }
}

/// The built `gateway` executable.
final class GatewayExecutableTests: XCTestCase {
    var executable: String {
        let directory = ProcessInfo.processInfo.environment["PASSKEY_BIN_DIR"] ?? packageRoot + "/.build/debug"
        return directory + "/gateway"
    }

    func testBadConfigurationExitsNamingTheVariable() throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw XCTSkip("\(executable) is not built")
        }
        for (variable, value) in [
            ("PASSKEY_RP_ID", "not a host"), ("GATEWAY_LISTEN", "nowhere"), ("SESSION_SERVICE_ADDRESSES", "x:y"),
            ("PASSKEY_RATE_LIMIT_PASSKEY_PER_ADDRESS", "lots"),
        ] {
            let (status, _, errors) = try runProgram(executable, [], environment: [variable: value])
            XCTAssertNotEqual(status, 0, variable)
            XCTAssertTrue(errors.contains(variable), "\(variable): \(errors)")
        }
    }

    /// Async, so the process is spawned from a task-pool thread, which blocks signals: the child inherits that mask.
    func testServesAndDrainsOnSIGTERM() async throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw XCTSkip("\(executable) is not built")
        }
        let port = unusedPort()
        let unused = unusedPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.environment = [
            "GATEWAY_LISTEN": "127.0.0.1:\(port)", "CHALLENGE_SERVICE_ADDRESSES": "127.0.0.1:\(unused)",
            "VERIFICATION_SERVICE_ADDRESSES": "127.0.0.1:\(unused)", "SESSION_SERVICE_ADDRESSES": "127.0.0.1:\(unused)",
            "GRPC_PLAINTEXT": "true",
        ]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        var connection: RawHTTPConnection?
        let deadline = Date().addingTimeInterval(10)
        while connection == nil && Date() < deadline {
            connection = try? RawHTTPConnection(port: port)
            if connection == nil { usleep(50_000) }
        }
        let open = try XCTUnwrap(connection, "the gateway did not start listening")
        open.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(open.readResponse()?.status, 200)
        open.send("POST /v1/passkeys/authentications HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(open.readResponse()?.status, 503)
        kill(process.processIdentifier, SIGTERM)
        let stopBy = Date().addingTimeInterval(15)
        while process.isRunning && Date() < stopBy { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return XCTFail("the gateway did not stop on SIGTERM")
        }
        XCTAssertEqual(process.terminationStatus, 0)
        let log = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(log.contains("event=gateway.started"))
        XCTAssertTrue(log.contains("event=gateway.stopped"))
    }
}

/// `GATEWAY_METRICS_LISTEN`: the metrics on a listener of their own, and not on the public one.
final class GatewayMetricsListenerTests: XCTestCase {
    func testTheMetricsMoveToTheirOwnListenerAndThePublicOneSaysNothing() throws {
        let metricsPort = unusedPort()
        let configuration = try GatewayServerTests.configuration(["GATEWAY_METRICS_LISTEN": "127.0.0.1:\(metricsPort)"])
        let gateway = try Gateway(
            configuration: configuration, logger: Logger(service: "gateway", minimumLevel: .error),
            listenAddress: SocketAddress(host: "127.0.0.1", port: 0))
        let port = try gateway.start().port
        defer { gateway.shutdown() }
        func get(_ path: String, on port: UInt16) throws -> (status: Int?, body: String) {
            let connection = try RawHTTPConnection(port: port)
            connection.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let response = connection.readResponse()
            return (response?.status, response.map { String(decoding: $0.body, as: UTF8.self) } ?? "")
        }
        XCTAssertEqual(try get("/healthz", on: port).status, 200)
        XCTAssertEqual(try get("/metrics", on: port).status, 404, "the public listener does not serve the metrics")
        let metrics = try get("/metrics", on: metricsPort)
        XCTAssertEqual(metrics.status, 200)
        XCTAssertTrue(metrics.body.contains(#"gateway_http_requests_total{route="GET /healthz",status="200"} 1"#))
        XCTAssertTrue(metrics.body.contains("passkey_build_info"))
        XCTAssertEqual(try get("/v1/session", on: metricsPort).status, 404, "nothing of the API there")
        XCTAssertThrowsError(try GatewayConfiguration(environment: ["GATEWAY_METRICS_LISTEN": "nowhere:port"]))
    }
}
