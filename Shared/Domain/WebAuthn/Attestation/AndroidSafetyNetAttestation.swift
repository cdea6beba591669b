import Crypto
import Encoding
import Foundation
import JSON

/// The `android-safetynet` format (WebAuthn §8.5): a JWS from Google's SafetyNet attestation API.
enum AndroidSafetyNetAttestation {
    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        let statement = input.statement
        try Reader.requireKeys(statement, ["ver", "response"], .androidSafetyNet)
        guard let version = statement[text: "ver"]?.textString, !version.isEmpty else {
            throw Reader.invalid(.androidSafetyNet, "attStmt has no ver")
        }
        guard let response = statement[text: "response"]?.byteString else {
            throw Reader.invalid(.androidSafetyNet, "attStmt has no byte-string response")
        }
        let jws: CompactJWS
        do {
            jws = try CompactJWS(response)
        } catch {
            throw Reader.invalid(.androidSafetyNet, "response is not a compact JWS with an x5c path")
        }
        let payload: JSONValue
        do {
            payload = try JSONReader.parse(jws.payload)
        } catch {
            throw Reader.invalid(.androidSafetyNet, "response is not a compact JWS")
        }
        let path = jws.certificates
        guard path[0].matches(hostname: "attest.android.com") else {
            throw Reader.invalid(.androidSafetyNet, "JWS certificate is not issued to attest.android.com")
        }
        do {
            try jws.verifySignature(allowed: ["RS256", "RS384", "RS512", "ES256"])
        } catch {
            throw Reader.invalid(.androidSafetyNet, "JWS signature does not verify")
        }

        let expectedNonce = Base64URL.encodeStandard(sha256(input.signedData))
        guard let nonce = payload["nonce"]?.stringValue,
            constantTimeEquals(Array(nonce.utf8), Array(expectedNonce.utf8))
        else {
            throw Reader.invalid(.androidSafetyNet, "JWS nonce does not match authenticatorData and clientDataHash")
        }
        guard payload["ctsProfileMatch"]?.boolValue == true else {
            throw Reader.invalid(.androidSafetyNet, "ctsProfileMatch is not true")
        }
        guard case .number(let timestampMs)? = payload["timestampMs"] else {
            throw Reader.invalid(.androidSafetyNet, "JWS payload has no timestampMs")
        }
        let age = input.now.timeIntervalSince1970 - timestampMs / 1000
        guard age <= input.policy.safetyNetMaximumAge, age >= -input.policy.safetyNetAllowedClockSkew else {
            throw Reader.invalid(.androidSafetyNet, "JWS timestamp is outside the accepted window")
        }
        return AttestationEvidence(type: .basic, path: path)
    }
}
