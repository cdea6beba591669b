import Crypto
import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn

// Measures ES256 assertion verifications per second on the calling thread, through the full §7.2 ceremony.
//   webauthn-benchmark [--seconds N] [--emit FILE] [--breakdown] [--iterations N]
// --emit writes the same assertion as JSON so other verifiers can be timed on identical input.
// --iterations runs exactly N ceremonies with no warm-up and no clock, for instruction counting under callgrind.

var seconds = 3.0
var emitPath: String?
var breakdown = false
var iterations: Int?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--emit": emitPath = arguments.next()
    case "--breakdown": breakdown = true
    case "--iterations": iterations = Int(arguments.next() ?? "")
    default:
        FileHandle.standardError.write(
            Data("usage: webauthn-benchmark [--seconds N] [--emit FILE] [--breakdown] [--iterations N]\n".utf8))
        exit(2)
    }
}

let rpID = "example.com"
let origin = "https://example.com"
let challenge = SecureRandom().bytes(count: 32)
var authenticator = SoftwareAuthenticator(algorithm: .es256)
let response = authenticator.makeAssertion(challenge: challenge, rpID: rpID, origin: origin, flags: [.userPresent])
let credential = StoredCredential(
    id: authenticator.credentialID, publicKey: try CredentialPublicKey(coseKey: authenticator.key.coseKey),
    userHandle: authenticator.userHandle, signCount: 0, backupEligible: false)
let expectation = AuthenticationExpectation(
    challenge: challenge, relyingPartyID: rpID, origins: OriginPolicy(allowedOrigins: [origin]),
    userVerification: .preferred, allowedCredentialIDs: [authenticator.credentialID])
let verifier = AuthenticationVerifier()

if let emitPath {
    let document: [String: Any] = [
        "rpID": rpID, "origin": origin, "challenge": Base64URL.encode(challenge),
        "credentialPublicKey": Base64URL.encode(authenticator.key.coseKey), "currentSignCount": 0,
        "response": [
            "id": Base64URL.encode(response.credentialID), "rawId": Base64URL.encode(response.credentialID),
            "type": "public-key",
            "response": [
                "clientDataJSON": Base64URL.encode(response.clientDataJSON),
                "authenticatorData": Base64URL.encode(response.authenticatorData),
                "signature": Base64URL.encode(response.signature),
                "userHandle": Base64URL.encode(authenticator.userHandle),
            ],
        ],
    ]
    try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]).write(
        to: URL(fileURLWithPath: emitPath))
}

/// User CPU seconds of this process so far: the divisor `openssl speed` uses unless given -elapsed, which keeps
/// the figure comparable on a machine where other processes compete for the core.
func userCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
}

/// Runs `body` repeatedly for a second and returns user-CPU nanoseconds per call.
func nanosecondsPerCall(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    let cpuStart = userCPUSeconds()
    var calls = 0
    while clock.now - start < .seconds(1) {
        for _ in 0..<100 { try body() }
        calls += 100
    }
    return (userCPUSeconds() - cpuStart) * 1e9 / Double(calls)
}

if breakdown {
    let message = response.authenticatorData + sha256(response.clientDataJSON)
    let parts: [(String, () throws -> Void)] = [
        ("signature verify", { _ = credential.publicKey.verify(signature: response.signature, message: message) }),
        ("client data parse", { _ = try ClientData(json: response.clientDataJSON) }),
        ("authenticator data parse", { _ = try AuthenticatorData(bytes: response.authenticatorData) }),
        ("sha256 client data", { _ = sha256(response.clientDataJSON) }),
        (
            "full ceremony",
            {
                _ = try verifier.verify(response: response, expectation: expectation, credential: credential)
            }
        ),
    ]
    // Alternate the parts for a few rounds and keep each one's fastest, so a busy machine skews them alike.
    var fastest = [Double](repeating: .infinity, count: parts.count)
    for _ in 0..<3 {
        for (index, part) in parts.enumerated() {
            fastest[index] = min(fastest[index], try nanosecondsPerCall(part.1))
        }
    }
    for (index, part) in parts.enumerated() {
        print(String(format: "%-26@ %10.0f ns", part.0 as NSString, fastest[index]))
    }
    exit(0)
}

if let iterations {
    for _ in 0..<iterations {
        _ = try verifier.verify(response: response, expectation: expectation, credential: credential)
    }
    print("verifications \(iterations)")
    exit(0)
}

// Warm up, and make sure the assertion really verifies.
for _ in 0..<1_000 { _ = try verifier.verify(response: response, expectation: expectation, credential: credential) }

let clock = ContinuousClock()
let start = clock.now
let cpuStart = userCPUSeconds()
let deadline = start + .milliseconds(Int(seconds * 1000))
var count = 0
while clock.now < deadline {
    for _ in 0..<200 {
        _ = try verifier.verify(response: response, expectation: expectation, credential: credential)
    }
    count += 200
}
let cpuSeconds = userCPUSeconds() - cpuStart
let elapsed = clock.now - start
let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print(String(format: "verifications_per_second %.1f", Double(count) / cpuSeconds))
print(String(format: "verifications_per_wall_second %.1f", Double(count) / elapsedSeconds))
print("verifications \(count) user_cpu_seconds \(String(format: "%.3f", cpuSeconds))")
