import Synchronization

/// The JWKS document the gateway serves, fetched from session-service at most once per `interval` however often
/// it is asked for: a request is answered from the cache, and the one request that finds it stale refreshes it
/// while the others keep reading the previous copy.
final class PublishedKeyCache: Sendable {
    struct State: Sendable {
        var document: [UInt8]?
        var fetchedAt: ContinuousClock.Instant?
        var fetching: Bool = false
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
        let (cached, mustFetch) = state.withLock { state -> ([UInt8]?, Bool) in
            let stale = state.fetchedAt.map { now - $0 >= interval } ?? true
            guard stale, !state.fetching else { return (state.document, false) }
            state.fetching = true
            return (state.document, true)
        }
        guard mustFetch else {
            if let cached { return cached }
            // Another request is fetching the first copy: wait for it briefly.
            for _ in 0..<100 {
                try? await Task.sleep(for: .milliseconds(20))
                if let document = state.withLock({ $0.document }) { return document }
            }
            return nil
        }
        let fetched = try? await fetch()
        return state.withLock { state in
            state.fetching = false
            // A failed fetch is tried again after the interval too, so an unreachable service costs one call per
            // interval, not one per request.
            state.fetchedAt = ContinuousClock.now
            if let fetched { state.document = fetched }
            return state.document
        }
    }
}
