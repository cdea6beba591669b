import AccessTokenSigning
import AccessTokens
import Foundation
import JSON
import PasskeySessionVerifier
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A key set URL in memory: serves the keys it is given with the headers it is given, fails on demand, can take
/// its time, and counts requests.
final class ScriptedKeySetFetcher: KeySetFetcher {
    struct Script: Sendable {
        var keys: [JSONWebKey]
        var headers: [String: String] = [:]
        var status = 200
        /// A body to serve instead of the keys.
        var body: [UInt8]?
        var failing = false
        var delay: Duration = .zero
    }

    private let state: Mutex<(script: Script, requests: Int)>

    init(keys: [JSONWebKey], headers: [String: String] = [:]) {
        state = Mutex((Script(keys: keys, headers: headers), 0))
    }

    /// How many GETs arrived.
    var requests: Int { state.withLock { $0.requests } }

    /// Changes what later requests get.
    func update(_ change: (inout Script) -> Void) {
        state.withLock { change(&$0.script) }
    }

    func get(_ url: URL) async throws -> KeySetResponse {
        let script = state.withLock { state -> Script in
            state.requests += 1
            return state.script
        }
        if script.delay > .zero { try await Task.sleep(for: script.delay) }
        if script.failing { throw URLError(.cannotConnectToHost) }
        let body = script.body ?? JSONWebKey.keySet(script.keys).serialized()
        return KeySetResponse(status: script.status, headers: script.headers, body: body)
    }
}

/// Wall and monotonic time that move only when a test moves them, together.
final class ManualClock: SessionVerifierClock {
    /// The wall-clock second the clock starts at.
    static let start: Int64 = 1_750_000_000
    private let origin = ContinuousClock.now
    private let elapsed = Mutex(Duration.zero)

    var now: Date {
        let elapsed = elapsed.withLock { $0 }
        return Date(timeIntervalSince1970: TimeInterval(Self.start) + TimeInterval(elapsed.components.seconds))
    }

    var instant: ContinuousClock.Instant { origin + elapsed.withLock { $0 } }

    /// The current wall-clock second.
    var seconds: Int64 { Self.start + elapsed.withLock { $0 }.components.seconds }

    func advance(by duration: Duration) {
        elapsed.withLock { $0 += duration }
    }
}

/// A verifier on a scripted key set and a manual clock, with the issuer's keys to sign tokens.
struct Harness {
    static let issuer = "https://passkeys.example.com"
    static let audience = "https://api.example.com"

    let es256 = TestSigningKey(.es256)
    let edDSA = TestSigningKey(.edDSA)
    let fetcher: ScriptedKeySetFetcher
    let clock = ManualClock()
    let verifier: PasskeySessionVerifier

    init(algorithms: Set<JWSAlgorithm> = [.es256], headers: [String: String] = [:]) {
        fetcher = ScriptedKeySetFetcher(keys: [es256.publicKey, edDSA.publicKey], headers: headers)
        verifier = PasskeySessionVerifier(
            configuration: .init(
                issuer: Self.issuer, audience: Self.audience,
                keySetURL: URL(string: Self.issuer + "/.well-known/jwks.json")!, algorithms: algorithms,
                fetcher: fetcher, clock: clock))
    }

    /// The claims the issuer would give a token now.
    func claims(sessionID: String = "ses_01") -> AccessTokenClaims {
        TestSigningKey.claims(issuer: Self.issuer, audience: Self.audience, now: clock.seconds, sessionID: sessionID)
    }

    /// The claims of a token now as a JSON object, changed by `change`.
    func payload(_ change: (inout JSONObject) -> Void = { _ in }) -> JSONValue {
        var payload = TestSigningKey.payload(claims())
        change(&payload)
        return .object(payload)
    }

    /// The header the issuer would give a token of `key`, changed by `change`.
    func header(_ key: TestSigningKey, _ change: (inout JSONObject) -> Void = { _ in }) -> JSONValue {
        var header: JSONObject = [
            "alg": .string(key.algorithm.rawValue), "typ": "at+jwt", "kid": .string(key.keyID),
        ]
        change(&header)
        return .object(header)
    }
}
