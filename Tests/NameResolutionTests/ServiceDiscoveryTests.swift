import Configuration
import Foundation
import GRPC
import GRPCEchoMessages
import NameResolution
import NetworkIO
import XCTest

/// Replica discovery against a real DNS server (dnsmasq) that the test controls: a client of a name follows the
/// name's addresses as they change, drains the ones that go without failing their calls, and looks the name up
/// again at once when a connection fails.
final class ServiceDiscoveryTests: XCTestCase {
    private var dns: Dnsmasq!
    private var servers: [String: GRPCServer] = [:]
    private var clients: [GRPCClient] = []
    private var port: UInt16 = 0

    override func setUp() async throws {
        dns = try Dnsmasq(records: [:])
    }

    override func tearDown() async throws {
        for client in clients { client.close() }
        for server in servers.values { server.shutdown() }
        dns.stop()
    }

    /// An echo server on `host` (a loopback address) at the port every replica shares, with a method that says
    /// which replica answered.
    private func startReplica(_ host: String) throws {
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: host, port: port))
        configuration.threadCount = 1
        configuration.drainTimeoutNanoseconds = 3_000_000_000
        let server = GRPCServer(configuration: configuration)
        EchoService.register(on: server)
        server.register(
            GRPCUnaryMethod(Self.who) { request, _ in
                if request.delayMilliseconds > 0 {
                    try await Task.sleep(nanoseconds: UInt64(request.delayMilliseconds) * 1_000_000)
                }
                var response = EchoResponse()
                response.text = host
                return response
            })
        let bound = try server.start()
        port = bound.port
        servers[host] = server
    }

    private static let who = GRPCMethodDescriptor<EchoRequest, EchoResponse>(service: "test.Who", name: "Answer")

    private func makeClient(interval: Duration) throws -> GRPCClient {
        let target = try XCTUnwrap(ServiceTarget(parsing: "dns://127.0.0.1:\(dns.port)/echo.test:\(port)"))
        var configuration = GRPCClientConfiguration()
        configuration.initialBackoffNanoseconds = 20_000_000
        configuration.maxBackoffNanoseconds = 200_000_000
        let client = try GRPCClient(
            source: ServiceDiscovery.addressSource(for: [target], interval: interval), configuration: configuration)
        clients.append(client)
        return client
    }

    private func who(_ client: GRPCClient, delay: UInt32 = 0) async throws -> String {
        try await Self.ask(client, delay: delay)
    }

    private static func ask(_ client: GRPCClient, delay: UInt32) async throws -> String {
        var request = EchoRequest()
        request.delayMilliseconds = delay
        return try await client.unary(Self.who, request: request).text
    }

    /// Which replicas answer `count` calls.
    private func answering(_ client: GRPCClient, calls count: Int = 30) async throws -> Set<String> {
        var seen: Set<String> = []
        for _ in 0..<count { seen.insert(try await who(client)) }
        return seen
    }

    func testTheDNSClientReadsEveryAddressAndAnEmptyAnswer() throws {
        try dns.set(["echo.test": ["127.0.0.2", "127.0.0.3", "::1"]])
        let client = DNSClient(server: SocketAddress(host: "127.0.0.1", port: dns.port))
        // dnsmasq rotates the order of a name's records; IPv4 comes before IPv6 whatever the order.
        let addresses = try client.addresses(of: "echo.test")
        XCTAssertEqual(Set(addresses.prefix(2)), ["127.0.0.2", "127.0.0.3"])
        XCTAssertEqual(addresses.last, "::1")
        XCTAssertEqual(Set(try client.addresses(of: "ECHO.test.")), ["127.0.0.2", "127.0.0.3", "::1"])
        XCTAssertEqual(try client.addresses(of: "missing.test"), [])
        var silent = DNSClient(server: SocketAddress(host: "127.0.0.1", port: 9))
        silent.timeoutMilliseconds = 100
        silent.attempts = 1
        XCTAssertThrowsError(try silent.addresses(of: "echo.test")) {
            XCTAssertEqual(($0 as? DNSError)?.code, .timedOut)
        }
    }

    func testNewReplicasTakeTrafficAndRemovedOnesFinishTheirCalls() async throws {
        try startReplica("127.0.0.2")
        try startReplica("127.0.0.3")
        try startReplica("127.0.0.4")
        try dns.set(["echo.test": ["127.0.0.2", "127.0.0.3"]])
        let client = try makeClient(interval: .milliseconds(100))
        let initial = try await answering(client)
        XCTAssertEqual(initial, ["127.0.0.2", "127.0.0.3"])

        // A replica is added: it is called within the lookup interval plus a connection.
        try dns.set(["echo.test": ["127.0.0.2", "127.0.0.3", "127.0.0.4"]])
        let added = Date()
        var seenNew = false
        while !seenNew && Date().timeIntervalSince(added) < 2 {
            seenNew = try await answering(client, calls: 5).contains("127.0.0.4")
        }
        XCTAssertTrue(seenNew, "the new replica took no call within 2 s")
        XCTAssertLessThan(Date().timeIntervalSince(added), 1.0)

        // Slow calls are in flight on every replica when .2 leaves the set: they all finish with their answers.
        let slow = (0..<6).map { _ in Task { try await Self.ask(client, delay: 800) } }
        try await Task.sleep(nanoseconds: 200_000_000)
        try dns.set(["echo.test": ["127.0.0.3", "127.0.0.4"]])
        try await Task.sleep(nanoseconds: 300_000_000)
        var slowAnswers: Set<String> = []
        for call in slow { slowAnswers.insert(try await call.value) }
        XCTAssertTrue(slowAnswers.contains("127.0.0.2"), "no slow call was on the removed replica: \(slowAnswers)")
        let remaining = try await answering(client)
        XCTAssertEqual(remaining, ["127.0.0.3", "127.0.0.4"])
        XCTAssertEqual(Set(client.addresses.map(\.host)), ["127.0.0.3", "127.0.0.4"])
    }

    func testAFailedConnectionPromptsALookupAtOnce() async throws {
        try startReplica("127.0.0.2")
        try startReplica("127.0.0.3")
        try dns.set(["echo.test": ["127.0.0.2"]])
        // Periodic lookups are a minute apart: only the failure can make the client find the new address.
        let client = try makeClient(interval: .seconds(60))
        let answer1 = try await who(client)
        XCTAssertEqual(answer1, "127.0.0.2")
        try dns.set(["echo.test": ["127.0.0.3"]])
        servers.removeValue(forKey: "127.0.0.2")?.shutdown()
        let stopped = Date()
        var answer: String?
        while answer == nil && Date().timeIntervalSince(stopped) < 3 {
            answer = try? await who(client)
            if answer == nil { try await Task.sleep(nanoseconds: 20_000_000) }
        }
        XCTAssertEqual(answer, "127.0.0.3")
        XCTAssertLessThan(Date().timeIntervalSince(stopped), 1.0)
    }

    func testNoCallFailsWhileTheOnlyKnownReplicaDrainsAndItsSuccessorIsFound() async throws {
        try startReplica("127.0.0.2")
        try startReplica("127.0.0.3")
        try dns.set(["echo.test": ["127.0.0.2"]])
        // Periodic lookups are a minute apart: the successor is found through the lookup the drain prompts, and the
        // calls made meanwhile wait for it instead of failing.
        let client = try makeClient(interval: .seconds(60))
        let before = try await who(client)
        XCTAssertEqual(before, "127.0.0.2")
        servers.removeValue(forKey: "127.0.0.2")?.shutdown()
        // The call starts while the name still names only the replica that is gone; the name moves just after.
        let call = Task.detached { [client] in try await ServiceDiscoveryTests.ask(client, delay: 0) }
        try dns.set(["echo.test": ["127.0.0.3"]])
        let during = try await call.value
        XCTAssertEqual(during, "127.0.0.3")
        for _ in 0..<20 {
            let answer = try await who(client)
            XCTAssertEqual(answer, "127.0.0.3")
        }
    }

    func testAFailedOrEmptyLookupKeepsTheLastReplicas() async throws {
        try startReplica("127.0.0.2")
        try dns.set(["echo.test": ["127.0.0.2"]])
        let client = try makeClient(interval: .milliseconds(50))
        let answer2 = try await who(client)
        XCTAssertEqual(answer2, "127.0.0.2")
        try dns.set([:])
        try await Task.sleep(nanoseconds: 300_000_000)
        let answer3 = try await who(client)
        XCTAssertEqual(answer3, "127.0.0.2")
        dns.stop()
        try await Task.sleep(nanoseconds: 300_000_000)
        let answer4 = try await who(client)
        XCTAssertEqual(answer4, "127.0.0.2")
        XCTAssertEqual(client.addresses, [SocketAddress(host: "127.0.0.2", port: port)])
    }

    func testANameWithNoAddressYetFailsCallsUntilItHasOne() async throws {
        try startReplica("127.0.0.2")
        let client = try makeClient(interval: .milliseconds(50))
        do {
            _ = try await who(client)
            XCTFail("a call with no known address succeeded")
        } catch let error as RPCError {
            XCTAssertEqual(error.code, .unavailable)
        }
        try dns.set(["echo.test": ["127.0.0.2"]])
        try await Task.sleep(nanoseconds: 300_000_000)
        let answer5 = try await who(client)
        XCTAssertEqual(answer5, "127.0.0.2")
    }

    func testNumericTargetsAreFixedAndNamesGoThroughTheSystemResolver() throws {
        let fixed = ServiceDiscovery.addressSource(
            for: [ServiceTarget(parsing: "127.0.0.1:5000")!, ServiceTarget(parsing: "[::1]:5001")!],
            interval: .seconds(1))
        let client = try GRPCClient(source: fixed)
        clients.append(client)
        XCTAssertEqual(
            client.addresses, [SocketAddress(host: "127.0.0.1", port: 5000), SocketAddress(host: "::1", port: 5001)])
        // localhost comes from /etc/hosts, which only the system resolver reads.
        let local = try ServiceDiscovery.addresses(of: ServiceTarget(parsing: "localhost:5002")!)
        XCTAssertTrue(local.contains(SocketAddress(host: "127.0.0.1", port: 5002)), "\(local)")
        XCTAssertEqual(try ServiceDiscovery.addresses(of: ServiceTarget(parsing: "no-such-host.invalid:5003")!), [])
    }
}
