import Configuration
import Crypto
import Foundation
import GRPC
import GRPCEchoMessages
import NetworkIO
import Observability
import ServiceIdentity
import ServiceTransport
import TLSChannels
import TestCertificates
import XCTest

/// The transport security the gateway and the services build from `GRPC_*`, over real loopback sockets with the
/// certificates `deploy/local/run` makes: a server playing session-service, and clients holding each identity.
final class MutualTLSTransportTests: XCTestCase {
    private var servers: [GRPCServer] = []
    private var clients: [GRPCClient] = []

    override func tearDown() {
        for client in clients { client.close() }
        for server in servers { server.shutdown() }
    }

    private func transport(_ name: String) throws -> GRPCTransportSecurity {
        let certificates = try TestCertificates.shared()
        return try GRPCTransportSecurity(
            transport: GRPCTransportConfiguration.read(EnvironmentReader(certificates.environment(for: name))),
            logger: .disabled)
    }

    /// A server with session-service's identity whose echo method only the gateway may call.
    private func startSessionService(metrics: MetricsRegistry = MetricsRegistry()) throws -> SocketAddress {
        let security = try transport(ServiceIdentity.Name.sessionService)
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: 0))
        configuration.threadCount = 1
        configuration.tls = security.serverTLS
        configuration.authorizer = ServiceCallAuthorizer(
            policy: CallerPolicy(
                trustDomain: security.trustDomain,
                rules: [.init([EchoService.getPath], callers: [ServiceIdentity.Name.gateway])]),
            service: "session-service", logger: .disabled, metrics: metrics)
        let server = GRPCServer(configuration: configuration)
        EchoService.register(on: server)
        let address = try server.start()
        servers.append(server)
        return address
    }

    private func client(_ identity: String, expecting service: String, _ address: SocketAddress) throws -> GRPCClient {
        var configuration = GRPCClientConfiguration()
        configuration.tls = try transport(identity).clientTLS(to: service)
        let client = try GRPCClient(addresses: [address], configuration: configuration)
        clients.append(client)
        return client
    }

    private func echo(_ client: GRPCClient) async throws -> String {
        try await client.unary(
            EchoService.get, request: EchoRequest(text: "hello"),
            deadline: .seconds(3)
        ).text
    }

    func testTheGatewayReachesTheServiceItExpects() async throws {
        let address = try startSessionService()
        let gateway = try client(ServiceIdentity.Name.gateway, expecting: ServiceIdentity.Name.sessionService, address)
        let first = try await echo(gateway)
        XCTAssertEqual(first, "hello")
    }

    /// A server with a valid certificate from the right CA, but another service's identity (a wrong address, a
    /// wrong DNS answer): the client refuses the connection before anything is sent, so the call never runs.
    func testAClientRefusesAServerWithAnotherIdentity() async throws {
        let metrics = MetricsRegistry()
        let address = try startSessionService(metrics: metrics)
        let confused = try client(
            ServiceIdentity.Name.gateway, expecting: ServiceIdentity.Name.challengeService, address)
        do {
            _ = try await echo(confused)
            XCTFail("a session-service certificate was taken for challenge-service")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable, "\(error)")
        }
        XCTAssertFalse(metrics.exposition().contains("grpc_server_refused_calls_total"), "no call reached the server")
    }

    func testTheServerRefusesAnIdentityThePolicyDoesNotName() async throws {
        let metrics = MetricsRegistry()
        let address = try startSessionService(metrics: metrics)
        let other = try client(
            ServiceIdentity.Name.verificationService, expecting: ServiceIdentity.Name.sessionService, address)
        do {
            _ = try await echo(other)
            XCTFail("verification-service may not call the method")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .permissionDenied)
            XCTAssertTrue(error.message.contains("spiffe://passkey.internal/verification-service"), error.message)
        }
        XCTAssertTrue(
            metrics.exposition().contains(
                #"grpc_server_refused_calls_total{service="session-service",method="/echo.v1.Echo/Get",code="PERMISSION_DENIED",reason="not_allowed"} 1"#
            ),
            metrics.exposition())
    }

    func testPlaintextNeedsToBeAskedFor() throws {
        XCTAssertThrowsError(
            try GRPCTransportSecurity(
                transport: GRPCTransportConfiguration.read(EnvironmentReader([:])), logger: .disabled)
        ) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "GRPC_TLS_CERTIFICATE")
        }
        let plaintext = try GRPCTransportSecurity(
            transport: GRPCTransportConfiguration.read(EnvironmentReader(["GRPC_PLAINTEXT": "true"])), logger: .disabled
        )
        XCTAssertNil(plaintext.serverTLS)
        XCTAssertNil(plaintext.clientTLS(to: ServiceIdentity.Name.sessionService))
        XCTAssertThrowsError(try GRPCTransportConfiguration.read(EnvironmentReader(["GRPC_PLAINTEXT": "yes"]))) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "GRPC_PLAINTEXT")
        }
        XCTAssertThrowsError(try GRPCTransportConfiguration.read(EnvironmentReader(["GRPC_TLS_KEY": "/k.pem"]))) {
            XCTAssertEqual(($0 as? ConfigurationError)?.variable, "GRPC_TLS_CERTIFICATE")
        }
    }

    /// New contents are put in force on reload; a half-written change (a key without its certificate) is refused
    /// and the last good pair stays.
    func testReloadingPicksUpChangesAndKeepsTheLastGoodPair() throws {
        let certificates = try TestCertificates.shared()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reload-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for name in ["ca.pem", "gateway.pem", "gateway.key", "session-service.pem", "session-service.key"] {
            try FileManager.default.copyItem(
                atPath: "\(certificates.directory)/\(name)", toPath: "\(directory)/\(name)")
        }
        let credentials = try ReloadingTLSCredentials(
            files: MutualTLSFiles(
                certificateChainPath: "\(directory)/gateway.pem", privateKeyPath: "\(directory)/gateway.key",
                trustedCAPath: "\(directory)/ca.pem"))
        let first = credentials.serialNumber
        guard case .unchanged = credentials.reloadIfChanged() else { return XCTFail("nothing changed yet") }
        try replace("\(directory)/gateway.key", with: "\(directory)/session-service.key")
        guard case .failed(let error) = credentials.reloadIfChanged() else { return XCTFail("a mismatched key loaded") }
        XCTAssertEqual(error.file, .privateKey)
        XCTAssertEqual(credentials.serialNumber, first)
        try replace("\(directory)/gateway.pem", with: "\(directory)/session-service.pem")
        guard case .reloaded(let serial) = credentials.reloadIfChanged() else {
            return XCTFail("the pair did not load")
        }
        XCTAssertNotEqual(serial, first)
        XCTAssertEqual(credentials.serialNumber, serial)
        try FileManager.default.removeItem(atPath: "\(directory)/ca.pem")
        guard case .failed(let missing) = credentials.reloadIfChanged() else { return XCTFail("a missing CA loaded") }
        XCTAssertEqual(missing.file, .trustedCertificates)
        XCTAssertEqual(credentials.serialNumber, serial)
    }

    private func replace(_ path: String, with source: String) throws {
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.copyItem(atPath: source, toPath: path)
    }
}
