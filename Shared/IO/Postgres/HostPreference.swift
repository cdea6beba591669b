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
/// A host that stopped answering may still be frozen, and libpq spends its whole `connect_timeout` on such a host
/// before it gives up. So a connection first tries the hosts that are not suspect, alone; the suspect ones are
/// tried in a second attempt, by one connection at a time and at most once per `probeSeconds`. While a frozen
/// primary is replaced, connections fail fast and find the new one as soon as it is promoted.
///
/// Pure bookkeeping over host indexes; the pool feeds it what connections meet.
public final class HostPreference: Sendable {
    /// The URL's hosts and ports, as libpq reads them (one port for all, or one per host).
    public let hosts: [String]
    public let ports: [String]
    let suspectNanoseconds: UInt64
    let probeNanoseconds: UInt64
    private let state = Mutex(State())

    private struct State {
        var preferred: Int?
        var suspectUntil: [Int: UInt64] = [:]
        var probeAllowedAt: UInt64 = 0
    }

    /// nil unless the URL names more than one host.
    public init?(hosts: [String], ports: [String], suspectSeconds: Double = 30, probeSeconds: Double = 2) {
        guard hosts.count > 1, ports.count == hosts.count || ports.count <= 1 else { return nil }
        self.hosts = hosts
        self.ports = ports.count == hosts.count ? ports : Array(repeating: ports.first ?? "", count: hosts.count)
        self.suspectNanoseconds = UInt64(suspectSeconds * 1e9)
        self.probeNanoseconds = UInt64(probeSeconds * 1e9)
    }

    /// The host indexes in the order a new connection should try them.
    public func order(now: UInt64) -> [Int] {
        let (trusted, suspect) = state.withLock { partition($0, now: now) }
        return trusted + suspect
    }

    /// The hosts not suspect (the one that last took writes first, then as listed), and the suspect ones.
    private func partition(_ state: State, now: UInt64) -> (trusted: [Int], suspect: [Int]) {
        let suspect = hosts.indices.filter { (state.suspectUntil[$0] ?? 0) > now }
        var trusted: [Int] = []
        if let preferred = state.preferred, !suspect.contains(preferred) { trusted.append(preferred) }
        trusted += hosts.indices.filter { !trusted.contains($0) && !suspect.contains($0) }
        return (trusted, suspect)
    }

    /// The `host` and `port` lists a new connection tries, one libpq connection attempt each, in turn: the hosts
    /// that are not suspect, then the suspect ones if this connection may probe them now (one list alone when
    /// every host is suspect, or none is). Taking the probe holds it from the other connections for
    /// `probeSeconds`.
    public func connectionAttempts(now: UInt64) -> [(host: String, port: String)] {
        let (trusted, suspect, probe) = state.withLock { state in
            let (trusted, suspect) = partition(state, now: now)
            let probe = !trusted.isEmpty && !suspect.isEmpty && now >= state.probeAllowedAt
            if probe { state.probeAllowedAt = now &+ probeNanoseconds }
            return (trusted, suspect, probe)
        }
        if trusted.isEmpty { return [lists(suspect)] }
        return probe ? [lists(trusted), lists(suspect)] : [lists(trusted)]
    }

    private func lists(_ order: [Int]) -> (host: String, port: String) {
        (order.map { hosts[$0] }.joined(separator: ","), order.map { ports[$0] }.joined(separator: ","))
    }

    /// A writable connection was made to this host.
    public func connected(host: String, port: String) {
        guard let index = index(of: host, port: port) else { return }
        state.withLock { state in
            state.preferred = index
            state.suspectUntil[index] = nil
        }
    }

    /// Whether this host stopped answering within the last `suspectSeconds`: a connection to it that sits idle is
    /// better closed than used (a statement sent there waits for its whole reply timeout).
    public func isSuspect(host: String, port: String, now: UInt64) -> Bool {
        guard let index = index(of: host, port: port) else { return false }
        return state.withLock { ($0.suspectUntil[index] ?? 0) > now }
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
