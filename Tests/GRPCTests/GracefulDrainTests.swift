import Foundation
import GRPC
import GRPCEchoMessages
import NetworkIO
import Synchronization
import TLSChannels
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Rolling restarts as the gateway lives them: one client over a changing set of in-process servers on loopback,
/// a steady stream of unary calls (three in four not idempotent, some from tasks on event loops of their own, as
/// the gateway's request handlers make them), while server after server drains (``GRPCServer/shutdown()``, what
/// SIGTERM does) and a replacement starts. Every call must succeed, and no call that is not idempotent may run
/// twice: a retry is only allowed for a call that provably never ran.
///
/// Each drain is one of: a replica replaced, its address removed from the client's set before the drain starts
/// or only after it ended (a lookup that lags behind); or a replica stopped moments after it started, while the
/// client is still opening its connections to it.
final class GracefulDrainTests: XCTestCase {
    /// `GRPC_DRAIN_TEST_DRAINS` overrides the number of drains (e.g. 10000 for a longer run).
    private static func drains(default value: Int) -> Int {
        ProcessInfo.processInfo.environment["GRPC_DRAIN_TEST_DRAINS"].flatMap(Int.init) ?? value
    }

    func testNoCallFailsAcrossThousandsOfGracefulDrainsUnderLoad() async throws {
        // Before connections waited for the server's SETTINGS and closed with a half-close, about 1 drain in 200
        // failed a call that is not idempotent with "the connection ... was lost".
        let run = DrainRun(drains: Self.drains(default: 2000), slots: 8, callers: 16)
        let report = try await run.run()
        print(report.summary(label: "h2c"))
        XCTAssertGreaterThanOrEqual(report.drains, run.drainTarget)
        XCTAssertEqual(report.failures.count, 0, report.failures.prefix(20).joined(separator: "\n"))
        XCTAssertEqual(report.ranTwice, [], "calls that are not idempotent ran more than once")
        XCTAssertGreaterThan(report.calls, report.drains * 2, "the load did not keep up with the drains")
        XCTAssertLessThan(report.leakedDescriptors, 16, "sockets were left open after every server and client closed")
    }

    func testNoCallFailsAcrossGracefulDrainsOverMutualTLS() async throws {
        let directory = try Certificates.make()
        let serverTLS = try ChannelTLS.serverSecurity(
            certificateChainPath: directory + "/server.pem", privateKeyPath: directory + "/server.key",
            clientCAPath: directory + "/ca.pem")
        let clientTLS = try ChannelTLS.clientSecurity(
            trustedCAPath: directory + "/ca.pem", certificateChainPath: directory + "/client.pem",
            privateKeyPath: directory + "/client.key")
        let run = DrainRun(
            drains: Self.drains(default: 2000) / 5, slots: 4, callers: 8, serverTLS: serverTLS, clientTLS: clientTLS)
        let report = try await run.run()
        print(report.summary(label: "mTLS"))
        XCTAssertGreaterThanOrEqual(report.drains, run.drainTarget)
        XCTAssertEqual(report.failures.count, 0, report.failures.prefix(20).joined(separator: "\n"))
        XCTAssertEqual(report.ranTwice, [], "calls that are not idempotent ran more than once")
        XCTAssertLessThan(report.leakedDescriptors, 16, "sockets were left open after every server and client closed")
    }
}

/// One run: `slots` drainers, each replacing its server again and again, and `callers` tasks calling meanwhile.
private final class DrainRun: Sendable {
    struct Report {
        var drains = 0
        var calls = 0
        var nonIdempotentCalls = 0
        var failures: [String] = []
        var ranTwice: [UInt64] = []
        var seconds = 0.0
        var leakedDescriptors = 0

        func summary(label: String) -> String {
            "graceful drains (\(label)): \(drains) drains, \(calls) calls (\(nonIdempotentCalls) not idempotent), "
                + "\(failures.count) failed, \(ranTwice.count) ran twice, "
                + "\(String(format: "%.1f", seconds)) s, \(leakedDescriptors) sockets left open"
        }
    }

    private static let record = GRPCMethodDescriptor<EchoRequest, EchoResponse>(service: "test.Drain", name: "Record")

    let drainTarget: Int
    let slots: Int
    let callers: Int
    let serverTLS: (@Sendable () throws -> ChannelSecurity)?
    let clientTLS: (@Sendable (SocketAddress) throws -> ChannelSecurity)?

    /// How often the server ran each call.
    private let executions = Mutex<[UInt64: Int]>([:])
    /// Each slot's addresses in the client's set.
    private let slotAddresses = Mutex<[Int: [SocketAddress]]>([:])
    private let client = Mutex<GRPCClient?>(nil)
    private let stopped = Atomic<Bool>(false)
    private let drainsDone = Atomic<Int>(0)
    /// Drainers that have made their drains (their last server serves on until the calls stop).
    private let drainersFinished = Atomic<Int>(0)
    private let drainersExited = Atomic<Int>(0)
    private let nextCallID = Atomic<UInt64>(1)
    private let outcomes = Mutex<(calls: Int, nonIdempotent: Int, failures: [String])>((0, 0, []))

    init(
        drains: Int, slots: Int, callers: Int, serverTLS: (@Sendable () throws -> ChannelSecurity)? = nil,
        clientTLS: (@Sendable (SocketAddress) throws -> ChannelSecurity)? = nil
    ) {
        self.drainTarget = drains
        self.slots = slots
        self.callers = callers
        self.serverTLS = serverTLS
        self.clientTLS = clientTLS
    }

    private func startServer() throws -> (GRPCServer, SocketAddress) {
        var configuration = GRPCServerConfiguration(address: SocketAddress(host: "127.0.0.1", port: 0))
        // Two loops, so two listening sockets share the port (SO_REUSEPORT), as on a real replica.
        configuration.threadCount = 2
        configuration.drainTimeoutNanoseconds = 5_000_000_000
        configuration.tls = serverTLS
        let server = GRPCServer(configuration: configuration)
        server.register(
            GRPCUnaryMethod(Self.record) { [self] request, _ in
                let id = UInt64(request.text) ?? 0
                executions.withLock { $0[id, default: 0] += 1 }
                if request.delayMilliseconds > 0 {
                    try await Task.sleep(nanoseconds: UInt64(request.delayMilliseconds) * 1_000_000)
                }
                var response = EchoResponse()
                response.text = request.text
                return response
            })
        return (server, try server.start())
    }

    /// Sets one slot's addresses and gives the client the union of every slot's.
    private func setAddresses(_ slot: Int, _ addresses: [SocketAddress]) {
        slotAddresses.withLock { table in
            table[slot] = addresses
            let all = table.keys.sorted().flatMap { table[$0] ?? [] }
            client.withLock { $0 }?.update(addresses: all)
        }
    }

    func run() async throws -> Report {
        let descriptorsBefore = Self.openDescriptors()
        var initial: [(GRPCServer, SocketAddress)] = []
        for _ in 0..<slots { initial.append(try startServer()) }
        var configuration = GRPCClientConfiguration()
        // As the gateway's clients (ServiceBackends).
        configuration.initialBackoffNanoseconds = 50_000_000
        configuration.maxBackoffNanoseconds = 1_000_000_000
        configuration.reconnectOnDemandAfterNanoseconds = 10_000_000
        configuration.tls = clientTLS
        let grpcClient = try GRPCClient(addresses: initial.map(\.1), configuration: configuration)
        client.withLock { $0 = grpcClient }
        for (slot, server) in initial.enumerated() { slotAddresses.withLock { $0[slot] = [server.1] } }
        // Loops of the test's own, standing for the gateway's HTTP loops: calls from tasks on them use connections
        // those loops own.
        let callerLoops = try EventLoopGroup(threadCount: 2, name: "drain-callers")
        let started = Date()

        // The drainers block in shutdown(): each runs on a thread of its own.
        for slot in 0..<slots {
            let first = initial[slot]
            Thread { [self] in
                drainRepeatedly(slot: slot, first: first)
                drainersExited.wrappingAdd(1, ordering: .relaxed)
            }.start()
        }

        await withTaskGroup(of: Void.self) { group in
            for caller in 0..<callers {
                if caller % 2 == 0 {
                    group.addTask(executorPreference: callerLoops.loops[caller / 2 % callerLoops.loops.count]) {
                        await self.callUntilStopped(grpcClient)
                    }
                } else {
                    group.addTask { await self.callUntilStopped(grpcClient) }
                }
            }
            // The calls go on until every drainer has finished.
            group.addTask {
                while self.drainersFinished.load(ordering: .relaxed) < self.slots {
                    try? await Task.sleep(nanoseconds: 20_000_000)
                }
                self.stopped.store(true, ordering: .relaxed)
            }
        }

        // The last servers drain once the calls have stopped.
        while drainersExited.load(ordering: .relaxed) < slots { try await Task.sleep(nanoseconds: 10_000_000) }
        grpcClient.close()
        client.withLock { $0 = nil }
        callerLoops.shutdown()
        let seconds = Date().timeIntervalSince(started)
        // Closed sockets are gone at once; give the client's and callers' loops a moment to wind down.
        try await Task.sleep(nanoseconds: 300_000_000)
        var report = Report()
        report.drains = drainsDone.load(ordering: .relaxed)
        report.seconds = seconds
        let outcome = outcomes.withLock { $0 }
        report.calls = outcome.calls
        report.nonIdempotentCalls = outcome.nonIdempotent
        report.failures = outcome.failures
        report.ranTwice = executions.withLock { table in
            table.filter { !Self.isIdempotent($0.key) && $0.value > 1 }.map(\.key).sorted()
        }
        report.leakedDescriptors = Self.openDescriptors() - descriptorsBefore
        return report
    }

    /// One slot: replaces its server until the run has made its drains, then stops the last one.
    private func drainRepeatedly(slot: Int, first: (GRPCServer, SocketAddress)) {
        var current = first
        while drainsDone.load(ordering: .relaxed) < drainTarget {
            guard let next = try? startServer() else { continue }
            switch Int.random(in: 0..<5) {
            case 0:
                // A replica stopped just after it started, while the client is connecting to it.
                setAddresses(slot, [current.1, next.1])
                usleep(UInt32.random(in: 0...3_000))
                let removeFirst = Bool.random()
                if removeFirst { setAddresses(slot, [current.1]) }
                next.0.shutdown()
                if !removeFirst { setAddresses(slot, [current.1]) }
            case 1, 2:
                // Replaced: the address leaves the set as the drain starts.
                setAddresses(slot, [current.1, next.1])
                setAddresses(slot, [next.1])
                current.0.shutdown()
                current = next
            default:
                // Replaced: the address stays in the set until the drain has ended.
                setAddresses(slot, [current.1, next.1])
                current.0.shutdown()
                setAddresses(slot, [next.1])
                current = next
            }
            drainsDone.wrappingAdd(1, ordering: .relaxed)
            usleep(UInt32.random(in: 0...20_000))
        }
        // The last server stays until the calls have stopped.
        drainersFinished.wrappingAdd(1, ordering: .relaxed)
        while !stopped.load(ordering: .relaxed) { usleep(10_000) }
        current.0.shutdown()
    }

    private static func isIdempotent(_ id: UInt64) -> Bool { id % 4 == 0 }

    private func callUntilStopped(_ client: GRPCClient) async {
        while !stopped.load(ordering: .relaxed) {
            let id = nextCallID.wrappingAdd(1, ordering: .relaxed).oldValue
            let idempotent = Self.isIdempotent(id)
            var request = EchoRequest(text: "\(id)")
            // Some calls are still running when their server drains.
            if id % 3 == 0 { request.delayMilliseconds = UInt32(id % 7) }
            let failure: String?
            do {
                let response = try await client.unary(
                    Self.record, request: request, deadline: .seconds(3),
                    idempotent: idempotent)
                failure = response.text == request.text ? nil : "call \(id): the answer was \(response.text)"
            } catch let error as RPCError {
                failure = "call \(id) (idempotent: \(idempotent)): \(error.code) \(error.message)"
            } catch {
                failure = "call \(id): \(error)"
            }
            outcomes.withLock { outcome in
                outcome.calls += 1
                if !idempotent { outcome.nonIdempotent += 1 }
                if let failure { outcome.failures.append(failure) }
            }
        }
    }

    /// The process's open sockets.
    private static func openDescriptors() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + entry)) ?? "")
                .hasPrefix("socket:")
        }.count
    }
}
