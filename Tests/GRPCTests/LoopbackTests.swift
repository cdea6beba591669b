import Foundation
import GRPC
import GRPCEchoMessages
import GRPCHealth
import NetworkIO
import TLSChannels
import XCTest

/// Our client against our server over real loopback sockets.
final class LoopbackTests: XCTestCase {
    private var servers: [GRPCServer] = []
    private var clients: [GRPCClient] = []

    override func tearDown() {
        for client in clients { client.close() }
        for server in servers { server.shutdown() }
        clients = []
        servers = []
    }

    func startServerForExtension() throws -> (GRPCServer, HealthService, SocketAddress) { try startServer() }

    private func startServer(
        drainNanoseconds: UInt64 = 2_000_000_000, tls: (@Sendable () throws -> ChannelSecurity)? = nil
    ) throws -> (GRPCServer, HealthService, SocketAddress) {
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: 0))
        configuration.threadCount = 1
        configuration.drainTimeoutNanoseconds = drainNanoseconds
        configuration.tls = tls
        let server = GRPCServer(configuration: configuration)
        let health = HealthService()
        health.register(on: server)
        EchoService.register(on: server)
        let address = try server.start()
        servers.append(server)
        return (server, health, address)
    }

    private func makeClient(
        _ addresses: [SocketAddress], tls: (@Sendable (SocketAddress) throws -> ChannelSecurity)? = nil
    ) throws -> GRPCClient {
        var configuration = GRPCClientConfiguration()
        configuration.tls = tls
        let client = try GRPCClient(addresses: addresses, configuration: configuration)
        clients.append(client)
        return client
    }

    func testUnaryWithMetadata() async throws {
        let (_, _, address) = try startServer()
        let client = try makeClient([address])
        var metadata = Metadata()
        metadata.add("x-echo", "hello")
        metadata.add("x-echo-bin", bytes: [0, 255, 10])
        var request = EchoRequest(text: "ping")
        request.payload = Array(repeating: 42, count: 100_000)
        let response = try await client.unary(
            EchoService.get, request: request, metadata: metadata)
        XCTAssertEqual(response.text, "ping")
        XCTAssertEqual(response.payload.count, 100_000)
        XCTAssertEqual(response.echoedMetadata, "hello")
        XCTAssertEqual(response.echoedBinaryMetadata, [0, 255, 10])
    }

    func testErrorStatusAndMessage() async throws {
        let (_, _, address) = try startServer()
        let client = try makeClient([address])
        var request = EchoRequest()
        request.statusCode = Int32(GRPCStatusCode.permissionDenied.rawValue)
        request.statusMessage = "not yours: 日本 100%"
        do {
            _ = try await client.unary(EchoService.get, request: request)
            XCTFail("expected an error")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .permissionDenied)
            XCTAssertEqual(error.message, "not yours: 日本 100%")
        }
    }

    func testUnknownMethodIsUnimplemented() async throws {
        let (_, _, address) = try startServer()
        let client = try makeClient([address])
        do {
            _ = try await client.unary(
                GRPCMethodDescriptor<EchoRequest, EchoResponse>(service: "echo.v1.Echo", name: "Nope"),
                request: EchoRequest())
            XCTFail("expected an error")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unimplemented)
        }
    }

    func testDeadlineExceeded() async throws {
        let (_, _, address) = try startServer()
        let client = try makeClient([address])
        var request = EchoRequest()
        request.delayMilliseconds = 2000
        let start = monotonicNanoseconds()
        do {
            _ = try await client.unary(
                EchoService.get, request: request,
                deadline: .milliseconds(200))
            XCTFail("expected an error")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .deadlineExceeded)
        }
        XCTAssertLessThan(monotonicNanoseconds() - start, 1_500_000_000)
    }

    func testManyConcurrentCallsOnOneConnection() async throws {
        let (server, _, address) = try startServer()
        let client = try makeClient([address])
        try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<1000 {
                group.addTask {
                    try await client.unary(
                        EchoService.get, request: EchoRequest(text: "\(index)")
                    ).text
                }
            }
            var count = 0
            for try await _ in group { count += 1 }
            XCTAssertEqual(count, 1000)
        }
        XCTAssertEqual(server.connectionCount, 1)
    }

    func testRetriesOnAnotherAddressWhenConnectionRefused() async throws {
        let (_, _, address) = try startServer()
        // Port 1 on loopback refuses connections: the call never reached a server, so it moves on.
        let client = try makeClient([SocketAddress(host: "127.0.0.1", port: 1), address])
        for index in 0..<6 {
            let response = try await client.unary(
                EchoService.get, request: EchoRequest(text: "r\(index)"))
            XCTAssertEqual(response.text, "r\(index)")
        }
    }

    func testAllAddressesDownIsUnavailable() async throws {
        let client = try makeClient([SocketAddress(host: "127.0.0.1", port: 1)])
        do {
            _ = try await client.unary(
                EchoService.get, request: EchoRequest())
            XCTFail("expected an error")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
    }

    func testHealthFollowsReadiness() async throws {
        let (_, health, address) = try startServer()
        let client = try makeClient([address])
        func check(_ service: String = "") async throws -> ServingStatus {
            try await client.unary(
                HealthService.check, request: HealthCheckRequest(service: service)
            ).status
        }
        let serving = try await check()
        XCTAssertEqual(serving, .serving)
        health.setDependency("postgres", available: false)
        let down = try await check()
        XCTAssertEqual(down, .notServing)
        // Liveness is not readiness: a replica whose database is down is alive and must not be restarted.
        let alive = try await check(HealthService.livenessService)
        XCTAssertEqual(alive, .serving)
        health.setDependency("postgres", available: true)
        let back = try await check()
        XCTAssertEqual(back, .serving)
        do {
            _ = try await check("no.such.Service")
            XCTFail("expected NOT_FOUND")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .notFound)
        }
    }

    func testShutdownDrainsCallsInFlight() async throws {
        let (server, _, address) = try startServer()
        let client = try makeClient([address])
        var request = EchoRequest(text: "slow")
        request.delayMilliseconds = 500
        let slowRequest = request
        let call = Task {
            try await client.unary(EchoService.get, request: slowRequest)
        }
        try await Task.sleep(nanoseconds: 150_000_000)
        let drained = expectation(description: "drained")
        Thread.detachNewThread {
            server.shutdown()
            drained.fulfill()
        }
        let response = try await call.value
        XCTAssertEqual(response.text, "slow")
        await fulfillment(of: [drained], timeout: 5)
        servers.removeAll()
    }

    func testMutualTLS() async throws {
        let directory = try Certificates.make()
        let serverTLS = try ChannelTLS.serverSecurity(
            certificateChainPath: directory + "/server.pem", privateKeyPath: directory + "/server.key",
            clientCAPath: directory + "/ca.pem")
        let (_, _, address) = try startServer(tls: serverTLS)
        let clientTLS = try ChannelTLS.clientSecurity(
            trustedCAPath: directory + "/ca.pem", certificateChainPath: directory + "/client.pem",
            privateKeyPath: directory + "/client.key")
        let client = try makeClient([address], tls: clientTLS)
        let response = try await client.unary(
            EchoService.get, request: EchoRequest(text: "secure"))
        XCTAssertEqual(response.text, "secure")

        // Without a client certificate the server refuses the handshake.
        let anonymous = try makeClient(
            [address], tls: try ChannelTLS.clientSecurity(trustedCAPath: directory + "/ca.pem"))
        do {
            _ = try await anonymous.unary(
                EchoService.get, request: EchoRequest())
            XCTFail("expected a failure without a client certificate")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }

        // A client that does not trust the server's CA refuses it.
        let untrusting = try makeClient(
            [address],
            tls: try ChannelTLS.clientSecurity(
                trustedCAPath: directory + "/other-ca.pem", certificateChainPath: directory + "/client.pem",
                privateKeyPath: directory + "/client.key"))
        do {
            _ = try await untrusting.unary(
                EchoService.get, request: EchoRequest())
            XCTFail("expected a failure with an untrusted server")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
    }
}

/// Test certificates made with the `openssl` command in a temporary directory.
enum Certificates {
    static func make() throws -> String {
        let directory = NSTemporaryDirectory() + "grpc-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory)'
            for ca in ca other-ca; do
              openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $ca.key -out $ca.pem \
                -days 2 -subj /CN=$ca
            done
            for name in server client; do
              openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $name.key -out $name.csr \
                -subj /CN=$name
              printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > $name.ext
              openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $name.pem -days 2 \
                -extfile $name.ext
            done
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return directory
    }
}

extension LoopbackTests {
    func testTaskCancellationCancelsTheCall() async throws {
        let (_, _, address) = try startServerForExtension()
        let client = try GRPCClient(addresses: [address])
        defer { client.close() }
        var request = EchoRequest()
        request.delayMilliseconds = 3000
        let slowRequest = request
        let call = Task {
            try await client.unary(EchoService.get, request: slowRequest)
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        let start = monotonicNanoseconds()
        call.cancel()
        do {
            _ = try await call.value
            XCTFail("expected cancellation")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertLessThan(monotonicNanoseconds() - start, 1_000_000_000)
    }
}
