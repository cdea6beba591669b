import Dispatch
import NetworkIO
import Observability
import Synchronization

/// Where a ``GRPCClient`` gets the addresses of a service's replicas.
public struct GRPCAddressSource: Sendable {
    enum Kind: Sendable {
        case fixed([SocketAddress])
        case lookup(name: String, intervalNanoseconds: UInt64, resolve: @Sendable () throws -> [SocketAddress])
    }

    let kind: Kind

    /// Always these addresses.
    public static func fixed(_ addresses: [SocketAddress]) -> GRPCAddressSource {
        GRPCAddressSource(kind: .fixed(addresses))
    }

    /// The addresses `resolve` returns (it may block: it runs on a thread of its own), asked again every
    /// `interval` and soon after a connection fails. A lookup that throws or finds nothing keeps the last set.
    /// - Parameter name: what is looked up, for the logs.
    public static func lookup(
        _ name: String, every interval: Duration, resolve: @escaping @Sendable () throws -> [SocketAddress]
    ) -> GRPCAddressSource {
        GRPCAddressSource(
            kind: .lookup(name: name, intervalNanoseconds: max(1, interval.wholeNanoseconds), resolve: resolve))
    }
}

/// Runs a source's lookups on a serial queue of its own: one every interval, and one soon after a connection
/// trouble report, at most one per `minimumGapNanoseconds` however many connections report.
final class AddressRefresher: Sendable {
    private struct State {
        var stopped = false
        /// Bumped by every lookup, so that only the latest one's periodic follow-up runs.
        var generation: UInt64 = 0
        var lastLookup: UInt64 = 0
        var soonScheduled = false
        var failing = false
        var deliver: (@Sendable ([SocketAddress]) -> Void)?
    }

    /// Lookups prompted by connection trouble are at least this far apart.
    static let minimumGapNanoseconds: UInt64 = 100_000_000

    private let name: String
    private let intervalNanoseconds: UInt64
    private let resolve: @Sendable () throws -> [SocketAddress]
    private let logger: Logger
    private let queue: DispatchQueue
    private let state = Mutex(State())

    init(
        name: String, intervalNanoseconds: UInt64, resolve: @escaping @Sendable () throws -> [SocketAddress],
        logger: Logger
    ) {
        self.name = name
        self.intervalNanoseconds = intervalNanoseconds
        self.resolve = resolve
        self.logger = logger
        queue = DispatchQueue(label: "grpc-address-lookup")
    }

    /// Starts the periodic lookups, which hand each result to `deliver`.
    func start(deliver: @escaping @Sendable ([SocketAddress]) -> Void) {
        let generation = state.withLock { state -> UInt64 in
            state.deliver = deliver
            state.lastLookup = monotonicNanoseconds()
            return state.generation
        }
        scheduleFollowUp(generation: generation)
    }

    func stop() {
        state.withLock {
            $0.stopped = true
            $0.deliver = nil
        }
    }

    /// One lookup on the calling thread: the addresses, or nil when it failed or found none (logged once per run
    /// of failures).
    func lookUp() -> [SocketAddress]? {
        let result: [SocketAddress]?
        let problem: String?
        do {
            let addresses = try resolve()
            result = addresses.isEmpty ? nil : addresses
            problem = addresses.isEmpty ? "no addresses" : nil
        } catch {
            result = nil
            problem = "\(error)"
        }
        let (wasFailing, stopped) = state.withLock { state -> (Bool, Bool) in
            defer { state.failing = problem != nil }
            return (state.failing, state.stopped)
        }
        if let problem, !wasFailing, !stopped {
            logger.log(.warning, "client.lookup_failed", ("name", name), ("problem", problem))
        } else if problem == nil && wasFailing {
            logger.log(.info, "client.lookup_recovered", ("name", name))
        }
        return result
    }

    /// Asks for a lookup soon: at once when the last one is old enough, else when it is.
    func refreshSoon() {
        let delay = state.withLock { state -> UInt64? in
            guard !state.stopped, !state.soonScheduled else { return nil }
            state.soonScheduled = true
            let next = state.lastLookup &+ Self.minimumGapNanoseconds
            let now = monotonicNanoseconds()
            return next > now ? next - now : 0
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            state.withLock { $0.soonScheduled = false }
            run()
        }
    }

    private func scheduleFollowUp(generation: UInt64) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(intervalNanoseconds))) { [self] in
            let current = state.withLock { !$0.stopped && $0.generation == generation }
            if current { run() }
        }
    }

    /// A lookup on the queue, its result delivered, and the next periodic one scheduled.
    private func run() {
        let ready = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.generation &+= 1
            return true
        }
        guard ready else { return }
        let addresses = lookUp()
        let (generation, deliver) = state.withLock { state in
            state.lastLookup = monotonicNanoseconds()
            return (state.generation, state.stopped ? nil : state.deliver)
        }
        if let addresses, let deliver { deliver(addresses) }
        scheduleFollowUp(generation: generation)
    }
}
