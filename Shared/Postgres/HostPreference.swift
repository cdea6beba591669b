import Synchronization

/// Which of a multi-host URL's hosts a new connection tries first.
///
/// libpq tries the hosts in the order given and takes the first that accepts writes. After a failover that order
/// is a hazard: a primary that froze and was replaced comes back believing it still leads, and takes writes until
/// its manager demotes it. A connection that tried the list from the top in that moment would reach it. So the
/// pool keeps its own order: the host that last gave a writable connection first, then the others as listed, and
/// last any host that stopped answering (a statement without a reply, a connection found read-only) within the
/// last `suspectSeconds`. A fresh connection reaches the old primary only if nothing else takes writes.
///
/// Pure bookkeeping over host indexes; the pool feeds it what connections meet.
public final class HostPreference: Sendable {
    /// The URL's hosts and ports, as libpq reads them (one port for all, or one per host).
    public let hosts: [String]
    public let ports: [String]
    let suspectNanoseconds: UInt64
    private let state = Mutex(State())

    private struct State {
        var preferred: Int?
        var suspectUntil: [Int: UInt64] = [:]
    }

    /// nil unless the URL names more than one host.
    public init?(hosts: [String], ports: [String], suspectSeconds: Double = 30) {
        guard hosts.count > 1, ports.count == hosts.count || ports.count <= 1 else { return nil }
        self.hosts = hosts
        self.ports = ports.count == hosts.count ? ports : Array(repeating: ports.first ?? "", count: hosts.count)
        self.suspectNanoseconds = UInt64(suspectSeconds * 1e9)
    }

    /// The host indexes in the order a new connection should try them.
    public func order(now: UInt64) -> [Int] {
        state.withLock { state in
            let suspect = Set(state.suspectUntil.filter { $0.value > now }.keys)
            var order: [Int] = []
            if let preferred = state.preferred, !suspect.contains(preferred) { order.append(preferred) }
            order += hosts.indices.filter { !order.contains($0) && !suspect.contains($0) }
            order += hosts.indices.filter { suspect.contains($0) }
            return order
        }
    }

    /// The `host` and `port` lists for libpq in that order.
    public func connectionHosts(now: UInt64) -> (host: String, port: String) {
        let order = order(now: now)
        return (order.map { hosts[$0] }.joined(separator: ","), order.map { ports[$0] }.joined(separator: ","))
    }

    /// A writable connection was made to this host.
    public func connected(host: String, port: String) {
        guard let index = index(of: host, port: port) else { return }
        state.withLock { state in
            state.preferred = index
            state.suspectUntil[index] = nil
        }
    }

    /// A connection to this host stopped answering or turned read-only.
    public func suspect(host: String, port: String, now: UInt64) {
        guard let index = index(of: host, port: port) else { return }
        state.withLock { state in
            state.suspectUntil[index] = now &+ suspectNanoseconds
            if state.preferred == index { state.preferred = nil }
        }
    }

    private func index(of host: String, port: String) -> Int? {
        hosts.indices.first { hosts[$0] == host && (ports[$0] == port || ports[$0].isEmpty) }
    }
}
