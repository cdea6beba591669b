import Crypto

/// The `fido-u2f` format (WebAuthn §8.6).
enum FIDOU2FAttestation {
    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        let statement = input.statement
        try Reader.requireKeys(statement, ["sig", "x5c"], .fidoU2F)
        let signature = try Reader.signature(statement, .fidoU2F)
        guard let path = try Reader.certificates(statement, .fidoU2F), path.count == 1, let leaf = path.first else {
            throw Reader.invalid(.fidoU2F, "x5c must hold exactly one certificate")
        }
        let key = try Reader.publicKey(leaf, .fidoU2F)
        guard key.kind == .ellipticCurve(.p256) else {
            throw Reader.invalid(.fidoU2F, "attestation certificate key is not P-256")
        }
        let credential = input.credentialKey
        guard credential.algorithm == .es256 || credential.algorithm == .esp256,
            let x = input.attestedCredential.publicKeyValue[int: -2]?.byteString,
            let y = input.attestedCredential.publicKeyValue[int: -3]?.byteString
        else { throw Reader.invalid(.fidoU2F, "credential key is not a P-256 EC2 key") }
        var message: [UInt8] = [0x00]
        message += input.authenticatorData.rpIDHash
        message += input.clientDataHash
        message += input.attestedCredential.credentialID
        message += [0x04] + x + y
        try Reader.verify(key, .es256, signature: signature, message: message, .fidoU2F)
        return AttestationEvidence(type: .basic, path: path)
    }
}
