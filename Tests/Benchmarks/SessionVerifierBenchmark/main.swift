import AccessTokenSigning
import AccessTokens
import Foundation
import JSON
import PasskeySessionVerifier

// Measures access token verifications per second on the calling thread, through PasskeySessionVerifier.verify with
// the key set cached (parse, key lookup, signature, claims).
//   session-verifier-benchmark [--algorithm ES256|EdDSA] [--seconds N]

var algorithm = JWSAlgorithm.es256
var seconds = 3.0
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--algorithm": algorithm = arguments.next().flatMap(JWSAlgorithm.init(configurationValue:)) ?? algorithm
    case "--seconds": seconds = arguments.next().flatMap(Double.init) ?? seconds
    default:
        FileHandle.standardError.write(
            Data("usage: session-verifier-benchmark [--algorithm ES256|EdDSA] [--seconds N]\n".utf8))
        exit(2)
    }
}

/// The issuer's key set, served from memory.
struct KeySetInMemory: KeySetFetcher {
    let keys: [JSONWebKey]

    func get(_ url: URL) async throws -> KeySetResponse {
        KeySetResponse(
            status: 200, headers: ["cache-control": "public, max-age=86400"],
            body: JSONWebKey.keySet(keys).serialized())
    }
}

let issuer = "https://passkeys.example.com"
// A key set of a few keys, as during a rotation, with the signing key last.
let signingKey = TestSigningKey(algorithm)
let keys = [TestSigningKey(.es256).publicKey, TestSigningKey(.edDSA).publicKey, signingKey.publicKey]
let verifier = PasskeySessionVerifier(
    configuration: .init(
        issuer: issuer, audience: issuer, keySetURL: URL(string: issuer + "/.well-known/jwks.json")!,
        algorithms: [algorithm], fetcher: KeySetInMemory(keys: keys)))
let token = signingKey.token(
    TestSigningKey.claims(issuer: issuer, audience: issuer, now: Int64(Date().timeIntervalSince1970)))
try await verifier.loadKeys()

/// User CPU seconds of this process so far: the divisor `openssl speed` uses unless given -elapsed.
func userCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
}

/// Verifications per user-CPU second and per wall-clock second over `seconds`. Not isolated to the main actor, so
/// that it runs on the cooperative pool as a server's request handler does, with no executor hop per call.
nonisolated func measure(seconds: Double) async throws -> (cpu: Double, wall: Double) {
    // Warm up, and make sure the token really verifies.
    for _ in 0..<500 { _ = try await verifier.verify(token) }
    let clock = ContinuousClock()
    let start = clock.now
    let cpuStart = userCPUSeconds()
    let deadline = start + .milliseconds(Int(seconds * 1000))
    var count = 0
    while clock.now < deadline {
        for _ in 0..<100 { _ = try await verifier.verify(token) }
        count += 100
    }
    let cpuSeconds = userCPUSeconds() - cpuStart
    let elapsed = clock.now - start
    let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return (Double(count) / cpuSeconds, Double(count) / elapsedSeconds)
}

let rates = try await measure(seconds: seconds)
print("token_bytes \(token.utf8.count)")
print(String(format: "verifications_per_second %.1f", rates.cpu))
print(String(format: "verifications_per_wall_second %.1f", rates.wall))
