import Crypto

/// The `packed` format (WebAuthn §8.2): self attestation or an x5c path with the §8.2.1 certificate rules.
enum PackedAttestation {
    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        let statement = input.statement
        try Reader.requireKeys(statement, ["alg", "sig", "x5c"], .packed)
        let algorithm = try Reader.algorithm(statement, .packed)
        let signature = try Reader.signature(statement, .packed)
        guard let path = try Reader.certificates(statement, .packed) else {
            guard algorithm == input.credentialKey.algorithm else {
                throw Reader.invalid(.packed, "self attestation alg differs from the credential key's alg")
            }
            guard input.credentialKey.verify(signature: signature, message: input.signedData) else {
                throw Reader.invalid(.packed, "self attestation signature does not verify")
            }
            return AttestationEvidence(type: .self, path: [])
        }
        guard algorithm != .rs1, let leaf = path.first else {
            throw Reader.invalid(.packed, "SHA-1 signatures are not accepted for packed attestation")
        }
        let key = try Reader.publicKey(leaf, .packed)
        try Reader.verify(key, algorithm, signature: signature, message: input.signedData, .packed)
        try checkCertificate(leaf, aaguid: input.attestedCredential.aaguid)
        return AttestationEvidence(type: .basic, path: path)
    }

    /// §8.2.1: version 3; subject C, O, OU "Authenticator Attestation", CN; not a CA; AAGUID extension consistent.
    static func checkCertificate(_ cert: Certificate, aaguid: AAGUID) throws(WebAuthnError) {
        typealias Reader = AttestationStatementReader
        guard cert.version == 3 else { throw Reader.invalid(.packed, "attestation certificate is not X.509 v3") }
        guard let country = cert.subjectValues(.country).first, country.utf8.count == 2 else {
            throw Reader.invalid(.packed, "attestation certificate subject has no two-letter C")
        }
        guard cert.subjectValues(.organization).first?.isEmpty == false else {
            throw Reader.invalid(.packed, "attestation certificate subject has no O")
        }
        guard cert.subjectValues(.organizationalUnit) == ["Authenticator Attestation"] else {
            throw Reader.invalid(.packed, "attestation certificate subject OU is not \"Authenticator Attestation\"")
        }
        guard cert.subjectValues(.commonName).first?.isEmpty == false else {
            throw Reader.invalid(.packed, "attestation certificate subject has no CN")
        }
        guard !cert.isCertificateAuthority else {
            throw Reader.invalid(.packed, "attestation certificate is a CA certificate")
        }
        try Reader.checkAAGUIDExtension(cert, aaguid, .packed)
    }
}
