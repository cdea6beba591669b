import Crypto
import Encoding
import JSON

/// A JWS in compact serialization (RFC 7515 §7.1) whose header carries its signer's certificate path in `x5c`, as
/// android-safetynet responses and FIDO metadata BLOBs do. Parsing checks the shape; `verifySignature` checks the
/// signature with the leaf's key. Chaining the path to a root is the caller's (it knows which roots apply).
struct CompactJWS {
    enum Failure: Error {
        case malformed(String)
        case badSignature(String)
    }

    let header: JSONValue
    let payload: [UInt8]
    let signature: [UInt8]
    /// The x5c path, leaf first.
    let certificates: [Certificate]
    /// header.payload as sent: what the signature covers.
    let signingInput: [UInt8]

    /// At most this many certificates in `x5c`.
    static let maximumCertificates = 8

    init(_ bytes: [UInt8]) throws(Failure) {
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("not a compact JWS (three base64url parts)") }
        guard let headerBytes = Base64URL.decode(String(decoding: parts[0], as: UTF8.self)),
            let header = try? JSONReader.parse(headerBytes), case .object = header
        else { throw .malformed("the JWS header is not a base64url JSON object") }
        guard let payload = Base64URL.decode(String(decoding: parts[1], as: UTF8.self)) else {
            throw .malformed("the JWS payload is not base64url")
        }
        guard let signature = Base64URL.decode(String(decoding: parts[2], as: UTF8.self)) else {
            throw .malformed("the JWS signature is not base64url")
        }
        guard case .array(let chain)? = header["x5c"], !chain.isEmpty else {
            throw .malformed("the JWS header has no x5c certificate path")
        }
        guard chain.count <= Self.maximumCertificates else {
            throw .malformed("the JWS x5c has more than \(Self.maximumCertificates) certificates")
        }
        var certificates: [Certificate] = []
        for item in chain {
            // x5c is standard base64 (RFC 7515 §4.1.6); the decoder takes either alphabet.
            guard let text = item.stringValue, let der = Base64URL.decode(text),
                let cert = try? Certificate(derEncoded: der)
            else { throw .malformed("the JWS x5c holds something that is not a DER certificate") }
            certificates.append(cert)
        }
        self.header = header
        self.payload = payload
        self.signature = signature
        self.certificates = certificates
        signingInput = Array(parts[0]) + [UInt8(ascii: ".")] + Array(parts[1])
    }

    /// Verifies the signature with the leaf certificate's key, for an `alg` in `allowed`.
    func verifySignature(allowed: Set<String>) throws(Failure) {
        guard let alg = header["alg"]?.stringValue else { throw .badSignature("the JWS header has no alg") }
        guard allowed.contains(alg) else { throw .badSignature("JWS alg \(alg) is not accepted") }
        guard let key = try? certificates[0].publicKey() else {
            throw .badSignature("the JWS signing certificate's key is unusable")
        }
        guard Self.verify(key: key, alg: alg, signature: signature, message: signingInput) else {
            throw .badSignature("the JWS signature does not verify")
        }
    }

    private static func verify(key: PublicKey, alg: String, signature: [UInt8], message: [UInt8]) -> Bool {
        switch alg {
        case "RS256": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha256))
        case "RS384": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha384))
        case "RS512": return key.verify(signature: signature, message: message, scheme: .rsaPKCS1v15(.sha512))
        case "ES256":
            guard let der = ECDSASignature.der(raw: signature) else { return false }
            return key.verify(signature: der, message: message, scheme: .ecdsa(.sha256))
        default: return false
        }
    }
}
