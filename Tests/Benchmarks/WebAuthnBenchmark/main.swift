import Crypto
import Encoding
import Foundation
import SoftwareAuthenticator
import WebAuthn

// Measures ES256 assertion verifications per second on the calling thread, through the full §7.2 ceremony.
//   webauthn-benchmark [--seconds N] [--emit FILE]
// --emit writes the same assertion as JSON so other verifiers can be timed on identical input.

var seconds = 3.0
var emitPath: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--emit": emitPath = arguments.next()
    default:
        FileHandle.standardError.write(Data("usage: webauthn-benchmark [--seconds N] [--emit FILE]\n".utf8))
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

// Warm up, and make sure the assertion really verifies.
for _ in 0..<1_000 { _ = try verifier.verify(response: response, expectation: expectation, credential: credential) }

let clock = ContinuousClock()
let start = clock.now
let deadline = start + .milliseconds(Int(seconds * 1000))
var count = 0
while clock.now < deadline {
    for _ in 0..<200 {
        _ = try verifier.verify(response: response, expectation: expectation, credential: credential)
    }
    count += 200
}
let elapsed = clock.now - start
let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
print(String(format: "verifications_per_second %.1f", Double(count) / elapsedSeconds))
print("verifications \(count) seconds \(String(format: "%.3f", elapsedSeconds))")
