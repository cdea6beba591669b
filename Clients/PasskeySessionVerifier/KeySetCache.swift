import AccessTokens
import Foundation

/// The bounds the key set's cache keeps.
enum KeySetPolicy {
    /// The least time between the starts of two fetches, whatever prompts them.
    static let minimumRefetchInterval: Duration = .seconds(30)
    /// How long a set stays fresh without a `Cache-Control: max-age`.
    static let defaultLifetime: Duration = .seconds(300)
    /// The bounds put on a `max-age`: a few seconds would make every interval a fetch, and a month would keep a
    /// retired key for a month.
    static let lifetimeBounds: ClosedRange<Duration> = .seconds(30) ... .seconds(86_400)
    /// The most keys kept from one key set; the rest are ignored.
    static let maximumKeyCount = 64
}

/// The cached key set as a state machine: which keys are known and until when, whether a fetch is running, and
/// when the last one started. It decides; ``PasskeySessionVerifier`` performs the fetches it asks for and reports
/// how they ended. `Fetch` is the handle of a running fetch that callers wait on.
///
/// - A fresh set answers every lookup of a known `kid`.
/// - An unknown `kid`, or a set past its lifetime, starts a fetch, but at most one per
///   ``KeySetPolicy/minimumRefetchInterval`` (counted from the start of the last one): a stream of tokens with
///   made-up `kid`s costs the issuer one request per interval, and a failing key set URL one attempt per interval.
/// - While a fetch runs, every lookup that needs it waits for that one fetch.
/// - A failed fetch changes no key: the set in hand stays in use, stale or not, until a fetch succeeds.
struct KeySetCache<Fetch> {
    /// What a lookup found.
    enum Lookup {
        /// The key to verify with.
        case found(VerificationKey)
        /// A fetch is running (perhaps just started by this lookup); look again when it ends.
        case wait(Fetch)
        /// The set in hand has no such key, and no fetch may start now.
        case notFound(String)
        /// No set was ever loaded, and no fetch may start now.
        case unavailable(String)
    }

    /// The keys by `kid`.
    private(set) var keys: [String: VerificationKey] = [:]
    private var loaded = false
    private var freshUntil: ContinuousClock.Instant?
    private var lastStart: ContinuousClock.Instant?
    private var running: Fetch?
    private var lastFailure: String?

    /// The key named `keyID` at `now`. `start` begins a fetch and is called only when one is due; pass
    /// `mayFetch: false` when looking again after waiting, so that a lookup waits at most once.
    mutating func lookup(
        keyID: String, at now: ContinuousClock.Instant, mayFetch: Bool, start: () -> Fetch
    ) -> Lookup {
        if let freshUntil, now < freshUntil, let key = keys[keyID] { return .found(key) }
        if mayFetch, let fetch = running ?? begin(at: now, start: start) { return .wait(fetch) }
        if let key = keys[keyID] { return .found(key) }
        let failure = lastFailure.map { " The last fetch of the key set failed: \($0)" } ?? ""
        return loaded
            ? .notFound("No key of the key set has the token's kid.\(failure)")
            : .unavailable("No key set has been loaded yet.\(failure)")
    }

    /// The running fetch, or a new one when the set is not fresh; nil when the set is fresh and none runs.
    /// Unlike a lookup, this does not wait for the refetch interval: it is for a deliberate load.
    mutating func refresh(at now: ContinuousClock.Instant, start: () -> Fetch) -> Fetch? {
        if let running { return running }
        if let freshUntil, now < freshUntil { return nil }
        return begin(at: now, start: start, ignoringInterval: true)
    }

    /// Records the end of the running fetch: its keys and their lifetime, or why it failed.
    mutating func finish(_ outcome: Result<LoadedKeySet, KeySetLoadFailure>, at now: ContinuousClock.Instant) {
        running = nil
        switch outcome {
        case .success(let set):
            keys = set.keys
            loaded = true
            freshUntil = now + set.lifetime
            lastFailure = nil
        case .failure(let failure):
            lastFailure = failure.reason
        }
    }

    private mutating func begin(
        at now: ContinuousClock.Instant, start: () -> Fetch, ignoringInterval: Bool = false
    ) -> Fetch? {
        if !ignoringInterval, let lastStart, now - lastStart < KeySetPolicy.minimumRefetchInterval { return nil }
        let fetch = start()
        running = fetch
        lastStart = now
        return fetch
    }
}

/// The keys of a key set as fetched, and how long they stay fresh.
struct LoadedKeySet: Sendable {
    /// The keys by `kid`.
    var keys: [String: VerificationKey]
    /// How long they stay fresh.
    var lifetime: Duration

    /// The keys of `response`: a 200 answer whose body is a JWKS. Keys whose JWK is unchanged from `previous` are
    /// taken over as they are; a JWK OpenSSL refuses, or a second one with the same `kid`, is skipped.
    init(_ response: KeySetResponse, reusing previous: [String: VerificationKey]) throws(KeySetLoadFailure) {
        guard response.status == 200 else {
            throw KeySetLoadFailure(reason: "The key set URL answered \(response.status).")
        }
        let maximumKeyCount = KeySetPolicy.maximumKeyCount
        guard let jwks = JSONWebKey.keys(inKeySet: response.body, limit: maximumKeyCount) else {
            throw KeySetLoadFailure(reason: "The key set URL did not answer a JWKS.")
        }
        var keys: [String: VerificationKey] = [:]
        for jwk in jwks where keys[jwk.keyID] == nil {
            if let kept = previous[jwk.keyID], kept.jwk == jwk {
                keys[jwk.keyID] = kept
            } else if let key = VerificationKey(jwk) {
                keys[jwk.keyID] = key
            }
        }
        self.keys = keys
        lifetime = Self.lifetime(cacheControl: response.headers["cache-control"], age: response.headers["age"])
    }

    /// How long an answer stays fresh by its `Cache-Control` (`max-age` less `Age`; `no-store` and `no-cache` as
    /// the shortest lifetime), within ``KeySetPolicy/lifetimeBounds``; the default lifetime without a `max-age`.
    static func lifetime(cacheControl: String?, age: String?) -> Duration {
        let bounds = KeySetPolicy.lifetimeBounds
        var maximumAge: Int64?
        for directive in (cacheControl ?? "").split(separator: ",") {
            let directive = directive.trimmingCharacters(in: .whitespaces).lowercased()
            if directive == "no-store" || directive == "no-cache" { return bounds.lowerBound }
            if directive.hasPrefix("max-age=") {
                let value = directive.dropFirst("max-age=".count)
                // Digits only (no sign); a value too large for Int64 is as good as a very long time.
                guard !value.isEmpty, value.allSatisfy({ $0.isASCII && $0.isNumber }) else { continue }
                maximumAge = Int64(value) ?? .max
            }
        }
        guard let maximumAge else { return KeySetPolicy.defaultLifetime }
        let ageSeconds = age.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.map { max(0, $0) } ?? 0
        let remaining = maximumAge - min(ageSeconds, maximumAge)
        let seconds = min(remaining, bounds.upperBound.components.seconds)
        return min(max(.seconds(seconds), bounds.lowerBound), bounds.upperBound)
    }
}

/// Why a fetched key set was not taken.
struct KeySetLoadFailure: Error, Sendable {
    /// What went wrong, for the error a verification reports.
    let reason: String
}
