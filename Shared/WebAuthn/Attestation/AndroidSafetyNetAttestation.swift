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
        let parts = response.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let payloadBytes = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)),
            let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)),
            let header = try? JSONReader.parse(headerBytes), let payload = try? JSONReader.parse(payloadBytes)
        else { throw Reader.invalid(.androidSafetyNet, "response is not a compact JWS") }

        guard case .array(let chain)? = header["x5c"], !chain.isEmpty, chain.count <= 8 else {
            throw Reader.invalid(.androidSafetyNet, "JWS header has no x5c")
        }
        var path: [Certificate] = []
        for item in chain {
            guard let text = item.stringValue, let der = Base64URL.decode(text),
                let cert = try? Certificate(derEncoded: der)
            else { throw Reader.invalid(.androidSafetyNet, "JWS x5c holds an invalid certificate") }
            path.append(cert)
        }
        let leaf = path[0]
        guard leaf.matches(hostname: "attest.android.com") else {
            throw Reader.invalid(.androidSafetyNet, "JWS certificate is not issued to attest.android.com")
        }
        let key = try Reader.publicKey(leaf, .androidSafetyNet)
        let signedInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
        guard let alg = header["alg"]?.stringValue,
            verifyJWS(key: key, alg: alg, signature: signature, message: signedInput)
        else { throw Reader.invalid(.androidSafetyNet, "JWS signature does not verify") }

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

    private static func verifyJWS(key: PublicKey, alg: String, signature: [UInt8], message: [UInt8]) -> Bool {
        switch alg {
        case "RS256": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha256))
        case "RS384": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha384))
        case "RS512": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha512))
        case "ES256":
            guard signature.count == 64 else { return false }
            let der = ECDSASignature.der(r: Array(signature[0..<32]), s: Array(signature[32..<64]))
            return key.verify(signature: der, message: message, scheme: .ecdsa(.sha256))
        default: return false
        }
    }
}

/// Converts JOSE's fixed-width ECDSA signatures to DER.
enum ECDSASignature {
    static func der(r: [UInt8], s: [UInt8]) -> [UInt8] {
        func integer(_ bytes: [UInt8]) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(r) + integer(s)
        return [0x30, UInt8(body.count)] + body
    }
}
