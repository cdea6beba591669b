import Synchronization

/// The JWKS document the gateway serves, fetched from session-service at most once per `interval` however often
/// it is asked for: a request is answered from the cache, and the one request that finds it stale refreshes it
/// while the others keep reading the previous copy.
final class PublishedKeyCache: Sendable {
    struct State: Sendable {
        var document: [UInt8]?
        var fetchedAt: ContinuousClock.Instant?
        /// The fetch under way, which requests without a document wait for.
        var fetching: Task<[UInt8]?, Never>?
    }

    let interval: Duration
    let fetch: @Sendable () async throws -> [UInt8]
    private let state = Mutex(State())

    init(interval: Duration = .seconds(2), fetch: @escaping @Sendable () async throws -> [UInt8]) {
        self.interval = interval
        self.fetch = fetch
    }

    /// The current document; nil while none was ever fetched and the fetch fails.
    func document() async -> [UInt8]? {
        let now = ContinuousClock.now
        let (cached, fetching, started) = state.withLock { state -> ([UInt8]?, Task<[UInt8]?, Never>?, Bool) in
            let stale = state.fetchedAt.map { now - $0 >= interval } ?? true
            guard stale, state.fetching == nil else { return (state.document, state.fetching, false) }
            state.fetching = Task { await self.refresh() }
            return (state.document, state.fetching, true)
        }
        // The request that found the copy stale waits for the new one; the others read the copy they found, or,
        // before the first copy, wait for the same fetch.
        if !started, let cached { return cached }
        return await fetching?.value
    }

    private func refresh() async -> [UInt8]? {
        let fetched = try? await fetch()
        return state.withLock { state in
            state.fetching = nil
            // A failed fetch is tried again after the interval too, so an unreachable service costs one call per
            // interval, not one per request.
            state.fetchedAt = ContinuousClock.now
            if let fetched { state.document = fetched }
            return state.document
        }
    }
}
