import AccessTokens
import Foundation
import Synchronization

/// Verifies the passkey server's access tokens locally, in an app's own backend: the JWT profile of RFC 9068
/// (`typ: at+jwt`), signed with a key of the issuer's JWKS.
///
/// One verifier serves the whole process. It fetches the key set when first needed and caches it by its
/// `Cache-Control: max-age` (kept between 30 s and a day; 5 minutes without one), fetches again for a `kid` it does
/// not know but at most once per 30 s, lets concurrent verifications share one fetch, and keeps using the keys in
/// hand while a fetch fails. Each key is parsed into OpenSSL once; a verification with a cached key does no I/O.
///
/// A token verifies when its `alg` is allowed, its `typ` is `at+jwt`, the key named by its `kid` signed it, its
/// `iss` is the issuer, its `aud` holds the audience, and `exp`, `nbf` and `iat` fit the current time within the
/// leeway. A session revoked on the server still has tokens that verify here until they expire (10 minutes by
/// default); ask the server (`GET /v1/session`) where that matters.
public final class PasskeySessionVerifier: Sendable {
    /// What the verifier checks against, and where it gets keys and time.
    public struct Configuration: Sendable {
        /// The one accepted `iss`, exactly as the server's `/.well-known/openid-configuration` names it.
        public var issuer: String
        /// The audience that must be among the token's `aud` (the server's `PASSKEY_TOKEN_AUDIENCE`, which defaults
        /// to the issuer).
        public var audience: String
        /// The issuer's JWKS (`<issuer>/.well-known/jwks.json`).
        public var keySetURL: URL
        /// The accepted `alg` values; nothing else is ever accepted (no `none`, no symmetric algorithm).
        public var algorithms: Set<JWSAlgorithm>
        /// How far the clocks of the issuer and this process may disagree, for `exp`, `nbf` and `iat`.
        public var leeway: Duration
        /// Fetches the key set.
        public var fetcher: any KeySetFetcher
        /// The wall clock for token times and the monotonic clock for the cache.
        public var clock: any SessionVerifierClock

        /// A configuration; by default ES256 only, 30 seconds of leeway, `URLSession` and the system's clocks.
        public init(
            issuer: String, audience: String, keySetURL: URL, algorithms: Set<JWSAlgorithm> = [.es256],
            leeway: Duration = .seconds(30), fetcher: any KeySetFetcher = URLSessionKeySetFetcher(),
            clock: any SessionVerifierClock = SystemSessionVerifierClock()
        ) {
            self.issuer = issuer
            self.audience = audience
            self.keySetURL = keySetURL
            self.algorithms = algorithms
            self.leeway = leeway
            self.fetcher = fetcher
            self.clock = clock
        }
    }

    /// The configuration the verifier was made with.
    public let configuration: Configuration
    private let leewaySeconds: Int64
    private let cache = Mutex(KeySetCache<Task<KeySetLoadFailure?, Never>>())

    /// A verifier; it fetches nothing until the first verification or ``loadKeys()``.
    public init(configuration: Configuration) {
        self.configuration = configuration
        leewaySeconds = max(0, configuration.leeway.components.seconds)
    }

    /// The session `token` belongs to, when it is one of the issuer's access tokens and valid now; the token is the
    /// bearer credential alone, without `Bearer `.
    public func verify(_ token: String) async throws(SessionVerifierError) -> VerifiedSession {
        let parsed = try Self.parse(token, allowing: configuration.algorithms)
        let key = try await key(for: parsed)
        guard key.verify(signature: parsed.signature, signingInput: parsed.signingInput) else {
            throw SessionVerifierError(.signatureInvalid, "The signature does not verify.")
        }
        let now = Int64(configuration.clock.now.timeIntervalSince1970.rounded(.down))
        let expected = AccessTokenFormat.Expectations(
            issuer: configuration.issuer, audience: configuration.audience, now: now, leeway: leewaySeconds)
        do throws(AccessTokenError) {
            try AccessTokenFormat.check(parsed.claims, expecting: expected)
        } catch {
            throw SessionVerifierError(error)
        }
        return VerifiedSession(claims: parsed.claims, audience: configuration.audience)
    }

    /// Fetches the key set unless a fresh one is cached (or joins the fetch that is running): at start-up, to find
    /// a wrong key set URL before the first request does. Throws ``SessionVerifierError/Code/keySetUnavailable``
    /// when that fetch fails.
    public func loadKeys() async throws(SessionVerifierError) {
        let now = configuration.clock.instant
        guard let fetch = cache.withLock({ $0.refresh(at: now, start: startFetch) }) else { return }
        if let failure = await fetch.value { throw SessionVerifierError(.keySetUnavailable, failure.reason) }
    }

    /// The token split and decoded; a refresh token or an opaque bearer token (no dots, which base64url never
    /// has) is named as such rather than called malformed.
    private static func parse(_ token: String, allowing algorithms: Set<JWSAlgorithm>) throws(SessionVerifierError)
        -> ParsedAccessToken
    {
        if token.utf8.count <= AccessTokenFormat.maximumTokenLength, !token.utf8.contains(UInt8(ascii: ".")) {
            throw SessionVerifierError(
                .notAnAccessToken,
                token.hasPrefix("prt_")
                    ? "This is a refresh token; send the access token."
                    : "This is not a JWT: an opaque session token is checked with GET /v1/session.")
        }
        do throws(AccessTokenError) {
            return try AccessTokenFormat.parse(token, allowing: algorithms)
        } catch {
            throw SessionVerifierError(error)
        }
    }

    /// The key that must have signed `token`: from the cache, or after the one fetch a lookup may wait for.
    private func key(for token: ParsedAccessToken) async throws(SessionVerifierError) -> VerificationKey {
        var mayFetch = true
        while true {
            let now = configuration.clock.instant
            let lookup = cache.withLock {
                $0.lookup(keyID: token.keyID, at: now, mayFetch: mayFetch, start: startFetch)
            }
            switch lookup {
            case .found(let key):
                guard key.jwk.algorithm == token.algorithm else {
                    throw SessionVerifierError(.unknownKey, "The token's kid names a key of another algorithm.")
                }
                return key
            case .wait(let fetch):
                _ = await fetch.value
                mayFetch = false
            case .notFound(let reason):
                throw SessionVerifierError(.unknownKey, reason)
            case .unavailable(let reason):
                throw SessionVerifierError(.keySetUnavailable, reason)
            }
        }
    }

    /// Starts fetching the key set; the task records how the fetch ended in the cache and returns why it failed.
    /// Called with the cache's lock held, so it only creates the task.
    private func startFetch() -> Task<KeySetLoadFailure?, Never> {
        Task { await self.fetchKeySet() }
    }

    private func fetchKeySet() async -> KeySetLoadFailure? {
        let previous = cache.withLock { $0.keys }
        let outcome: Result<LoadedKeySet, KeySetLoadFailure>
        do {
            let response = try await configuration.fetcher.get(configuration.keySetURL)
            outcome = Result { () throws(KeySetLoadFailure) in try LoadedKeySet(response, reusing: previous) }
        } catch {
            outcome = .failure(KeySetLoadFailure(reason: "GET \(configuration.keySetURL.absoluteString): \(error)"))
        }
        let now = configuration.clock.instant
        cache.withLock { $0.finish(outcome, at: now) }
        if case .failure(let failure) = outcome { return failure }
        return nil
    }
}
