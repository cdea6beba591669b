import Foundation
import GRPC
import GRPCEchoMessages
import NetworkIO
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A rolling restart as a client sees it: the new replica's address was known before it listened, so its connection
/// backs off; then the replica that served every call drains. With on-demand reconnection the next call probes the
/// new replica at once; without it the call fails until the backoff ends.
final class ReconnectOnDemandTests: XCTestCase {
    private var servers: [GRPCServer] = []
    private var clients: [GRPCClient] = []

    override func tearDown() {
        for client in clients { client.close() }
        for server in servers { server.shutdown() }
        clients = []
        servers = []
    }

    private func startServer(port: UInt16 = 0) throws -> (GRPCServer, SocketAddress) {
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: port))
        configuration.threadCount = 1
        configuration.drainTimeoutNanoseconds = 1_000_000_000
        let server = GRPCServer(configuration: configuration)
        EchoService.register(on: server)
        let address = try server.start()
        servers.append(server)
        return (server, address)
    }

    /// A loopback port nothing listens on (yet).
    private func unusedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        XCTAssertTrue(bound)
        return UInt16(bigEndian: address.sin_port)
    }

    /// The old replica serves; the new one's port refuses until it starts; then the old one drains and stops.
    /// Returns the outcome of the first call made after that.
    private func callAfterRollover(reconnectOnDemand: Bool) async throws -> Result<String, RPCError> {
        let (old, oldAddress) = try startServer()
        let newPort = try unusedPort()
        var configuration = GRPCClientConfiguration()
        // A long backoff: the new replica's connection is still backing off when the old replica goes.
        configuration.initialBackoffNanoseconds = 5_000_000_000
        configuration.maxBackoffNanoseconds = 5_000_000_000
        configuration.reconnectOnDemandAfterNanoseconds = reconnectOnDemand ? 10_000_000 : nil
        let client = try GRPCClient(
            addresses: [oldAddress, SocketAddress(host: "127.0.0.1", port: newPort)], configuration: configuration)
        clients.append(client)
        let first = try await client.unary(
            EchoService.get, request: EchoRequest(text: "before"))
        XCTAssertEqual(first.text, "before")
        // The first attempt at the new port has been refused by now.
        try await Task.sleep(nanoseconds: 100_000_000)
        _ = try startServer(port: newPort)
        old.shutdown()
        do {
            let response = try await client.unary(
                EchoService.get, request: EchoRequest(text: "after"),
                deadline: .seconds(2))
            return .success(response.text)
        } catch let error as RPCError {
            return .failure(error)
        }
    }

    func testACallAfterTheOldReplicaDrainedReachesTheNewOneThatWasBackingOff() async throws {
        let outcome = try await callAfterRollover(reconnectOnDemand: true)
        XCTAssertEqual(try outcome.get(), "after")
    }

    func testWithoutOnDemandReconnectionTheSameCallFailsWhileTheNewReplicaBacksOff() async throws {
        let outcome = try await callAfterRollover(reconnectOnDemand: false)
        guard case .failure(let error) = outcome else {
            return XCTFail("expected UNAVAILABLE, got \(outcome)")
        }
        XCTAssertEqual(error.code, .unavailable)
    }
}
