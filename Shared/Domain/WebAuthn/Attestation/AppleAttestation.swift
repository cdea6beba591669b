import Crypto

/// The `apple` anonymous attestation format (WebAuthn §8.8).
///
/// §8.8 defines `x5c` alone, but deployed iPhones have sent an `alg` beside it (the credential key's COSE
/// algorithm). The statement carries no signature, and the nonce extension binds the certificate to authData and
/// clientDataHash, so `alg` proves nothing: it is accepted when it is an integer equal to the credential key's
/// algorithm, and any other member (or an `alg` naming another algorithm) is refused.
enum AppleAttestation {
    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        try Reader.requireKeys(input.statement, ["x5c", "alg"], .apple)
        if let member = input.statement[text: "alg"] {
            guard let alg = member.integer else { throw Reader.invalid(.apple, "attStmt alg is not an integer") }
            guard alg == input.credentialKey.algorithm.rawValue else {
                throw Reader.invalid(.apple, "attStmt alg \(alg) is not the credential key's algorithm")
            }
        }
        guard let path = try Reader.certificates(input.statement, .apple), let leaf = path.first else {
            throw Reader.invalid(.apple, "attStmt has no x5c")
        }
        let nonce = sha256(input.signedData)
        guard let ext = leaf.extensionValue(oid: "1.2.840.113635.100.8.2") else {
            throw Reader.invalid(.apple, "credential certificate has no nonce extension")
        }
        // Extension value: SEQUENCE { [1] EXPLICIT OCTET STRING nonce }.
        var reader = DERReader(ext.value)
        guard let sequence = reader.read(), sequence.isSequence, reader.isAtEnd,
            let children = sequence.children(), children.count == 1, children[0].isContextSpecific(1),
            let inner = children[0].children(), inner.count == 1, inner[0].isOctetString
        else { throw Reader.invalid(.apple, "nonce extension is malformed") }
        guard constantTimeEquals(inner[0].content, nonce) else {
            throw Reader.invalid(.apple, "nonce extension does not match authenticatorData and clientDataHash")
        }
        let key = try Reader.publicKey(leaf, .apple)
        guard key.isSameKey(as: input.credentialKey.key) else {
            throw Reader.invalid(.apple, "credential certificate key differs from the credential public key")
        }
        return AttestationEvidence(type: .anonymizationCA, path: path)
    }
}
