import Crypto

/// The `tpm` format (WebAuthn §8.3): a TPM 2.0 certify structure over the credential key, signed by an AIK.
enum TPMAttestation {
    private static let generatedValue: UInt32 = 0xFF54_4347
    private static let attestCertify: UInt16 = 0x8017
    private static let algorithmRSA: UInt16 = 0x0001
    private static let algorithmECC: UInt16 = 0x0023
    private static let algorithmNull: UInt16 = 0x0010

    static func verify(_ input: AttestationInput) throws(WebAuthnError) -> AttestationEvidence {
        typealias Reader = AttestationStatementReader
        let statement = input.statement
        try Reader.requireKeys(statement, ["ver", "alg", "x5c", "sig", "certInfo", "pubArea"], .tpm)
        guard statement[text: "ver"]?.textString == "2.0" else { throw Reader.invalid(.tpm, "ver is not \"2.0\"") }
        let algorithm = try Reader.algorithm(statement, .tpm)
        let signature = try Reader.signature(statement, .tpm)
        guard let certInfo = statement[text: "certInfo"]?.byteString,
            let pubArea = statement[text: "pubArea"]?.byteString
        else { throw Reader.invalid(.tpm, "attStmt needs byte-string certInfo and pubArea") }
        guard let path = try Reader.certificates(statement, .tpm), let aik = path.first else {
            throw Reader.invalid(.tpm, "attStmt has no x5c (ECDAA is not supported)")
        }

        let publicArea = try PublicArea(pubArea)
        guard publicArea.key.isSameKey(as: input.credentialKey.key) else {
            throw Reader.invalid(.tpm, "pubArea key differs from the credential public key")
        }
        let attest = try CertifyInfo(certInfo)
        let digest: HashFunction
        switch algorithm.signatureScheme {
        case .ecdsa(let hash), .rsaPKCS1v15(let hash), .rsaPSS(let hash): digest = hash
        case .ed25519: throw Reader.invalid(.tpm, "EdDSA is not a TPM signing algorithm")
        }
        guard constantTimeEquals(attest.extraData, digest.algorithm.hash(input.signedData)) else {
            throw Reader.invalid(.tpm, "certInfo extraData is not the hash of authenticatorData and clientDataHash")
        }
        guard attest.name.count >= 2 else { throw Reader.invalid(.tpm, "certInfo name is too short") }
        let nameAlgorithm = UInt16(attest.name[0]) << 8 | UInt16(attest.name[1])
        guard nameAlgorithm == publicArea.nameAlgorithm, let nameHash = hashFunction(tpmAlgorithm: nameAlgorithm),
            constantTimeEquals(attest.name.dropFirst(2), nameHash.algorithm.hash(pubArea))
        else { throw Reader.invalid(.tpm, "certInfo name does not match pubArea") }

        let key = try Reader.publicKey(aik, .tpm)
        try Reader.verify(key, algorithm, signature: signature, message: certInfo, .tpm)
        try checkAIKCertificate(aik, aaguid: input.attestedCredential.aaguid)
        return AttestationEvidence(type: .attestationCA, path: path)
    }

    private static func hashFunction(tpmAlgorithm: UInt16) -> HashFunction? {
        switch tpmAlgorithm {
        case 0x0004: return .sha1
        case 0x000B: return .sha256
        case 0x000C: return .sha384
        case 0x000D: return .sha512
        default: return nil
        }
    }

    /// §8.3.1: v3, empty subject, a subject alternative name, the AIK extended key usage, not a CA.
    private static func checkAIKCertificate(_ cert: Certificate, aaguid: AAGUID) throws(WebAuthnError) {
        typealias Reader = AttestationStatementReader
        guard cert.version == 3 else { throw Reader.invalid(.tpm, "AIK certificate is not X.509 v3") }
        guard cert.subjectAttributeCount == 0 else {
            throw Reader.invalid(.tpm, "AIK certificate subject is not empty")
        }
        guard cert.extensionValue(oid: "2.5.29.17") != nil else {
            throw Reader.invalid(.tpm, "AIK certificate has no subject alternative name")
        }
        // id-kp tcg-kp-AIKCertificate, 2.23.133.8.3, as DER content bytes.
        let aikUsage: [UInt8] = [0x67, 0x81, 0x05, 0x08, 0x03]
        guard let eku = cert.extensionValue(oid: "2.5.29.37") else {
            throw Reader.invalid(.tpm, "AIK certificate has no extended key usage")
        }
        var reader = DERReader(eku.value)
        guard let sequence = reader.read(), sequence.isSequence, let usages = sequence.children(),
            usages.contains(where: { $0.isObjectIdentifier && Array($0.content) == aikUsage })
        else { throw Reader.invalid(.tpm, "AIK certificate lacks the tcg-kp-AIKCertificate usage") }
        guard !cert.isCertificateAuthority else { throw Reader.invalid(.tpm, "AIK certificate is a CA certificate") }
        try Reader.checkAAGUIDExtension(cert, aaguid, .tpm)
    }

    /// A big-endian cursor over TPM structures.
    struct Cursor {
        let bytes: [UInt8]
        var position = 0

        mutating func uint16() throws(WebAuthnError) -> UInt16 {
            guard bytes.count - position >= 2 else { throw truncated }
            defer { position += 2 }
            return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
        }

        mutating func uint32() throws(WebAuthnError) -> UInt32 {
            let high = try uint16()
            return UInt32(high) << 16 | UInt32(try uint16())
        }

        mutating func take(_ count: Int) throws(WebAuthnError) -> [UInt8] {
            guard count >= 0, bytes.count - position >= count else { throw truncated }
            defer { position += count }
            return Array(bytes[position..<position + count])
        }

        /// A TPM2B: a 16-bit size and that many bytes.
        mutating func sized() throws(WebAuthnError) -> [UInt8] {
            let size = try uint16()
            return try take(Int(size))
        }

        var isAtEnd: Bool { position == bytes.count }

        private var truncated: WebAuthnError { AttestationStatementReader.invalid(.tpm, "TPM structure is truncated") }
    }

    /// TPMT_PUBLIC: the credential key as the TPM describes it.
    struct PublicArea {
        let nameAlgorithm: UInt16
        let key: PublicKey

        init(_ bytes: [UInt8]) throws(WebAuthnError) {
            typealias Reader = AttestationStatementReader
            var cursor = Cursor(bytes: bytes)
            let type = try cursor.uint16()
            nameAlgorithm = try cursor.uint16()
            _ = try cursor.uint32()  // objectAttributes
            _ = try cursor.sized()  // authPolicy
            do {
                switch type {
                case TPMAttestation.algorithmRSA:
                    let symmetric = try cursor.uint16()
                    let scheme = try cursor.uint16()
                    guard symmetric == TPMAttestation.algorithmNull, scheme == TPMAttestation.algorithmNull else {
                        throw Reader.invalid(.tpm, "pubArea RSA parameters are not a plain signing key")
                    }
                    _ = try cursor.uint16()  // keyBits
                    let exponentValue = try cursor.uint32()
                    let modulus = try cursor.sized()
                    let exponent = exponentValue == 0 ? 65537 : exponentValue
                    let exponentBytes = withUnsafeBytes(of: exponent.bigEndian) { Array($0) }.drop { $0 == 0 }
                    key = try PublicKey.rsa(modulus: modulus, exponent: Array(exponentBytes))
                case TPMAttestation.algorithmECC:
                    let symmetric = try cursor.uint16()
                    _ = try cursor.uint16()  // scheme
                    let curveID = try cursor.uint16()
                    let kdf = try cursor.uint16()
                    guard symmetric == TPMAttestation.algorithmNull, kdf == TPMAttestation.algorithmNull else {
                        throw Reader.invalid(.tpm, "pubArea ECC parameters are not a plain signing key")
                    }
                    let curve: EllipticCurve
                    switch curveID {
                    case 0x0003: curve = .p256
                    case 0x0004: curve = .p384
                    case 0x0005: curve = .p521
                    default: throw Reader.invalid(.tpm, "pubArea curve \(curveID) is not supported")
                    }
                    let x = try cursor.sized()
                    let y = try cursor.sized()
                    let length = curve.coordinateLength
                    guard x.count <= length, y.count <= length else {
                        throw Reader.invalid(.tpm, "pubArea ECC point is too long")
                    }
                    let padX = [UInt8](repeating: 0, count: length - x.count) + x
                    let padY = [UInt8](repeating: 0, count: length - y.count) + y
                    key = try PublicKey.ellipticCurve(curve, x: padX, y: padY)
                default:
                    throw Reader.invalid(.tpm, "pubArea type \(type) is not supported")
                }
            } catch let error as WebAuthnError {
                throw error
            } catch {
                throw Reader.invalid(.tpm, "pubArea key is invalid")
            }
            guard cursor.isAtEnd else { throw Reader.invalid(.tpm, "pubArea has trailing bytes") }
        }
    }

    /// TPMS_ATTEST of type TPM_ST_ATTEST_CERTIFY.
    struct CertifyInfo {
        let extraData: [UInt8]
        let name: [UInt8]

        init(_ bytes: [UInt8]) throws(WebAuthnError) {
            typealias Reader = AttestationStatementReader
            var cursor = Cursor(bytes: bytes)
            guard try cursor.uint32() == TPMAttestation.generatedValue else {
                throw Reader.invalid(.tpm, "certInfo magic is not TPM_GENERATED_VALUE")
            }
            guard try cursor.uint16() == TPMAttestation.attestCertify else {
                throw Reader.invalid(.tpm, "certInfo type is not TPM_ST_ATTEST_CERTIFY")
            }
            _ = try cursor.sized()  // qualifiedSigner
            extraData = try cursor.sized()
            _ = try cursor.take(17)  // clockInfo
            _ = try cursor.take(8)  // firmwareVersion
            name = try cursor.sized()
            _ = try cursor.sized()  // qualifiedName
            guard cursor.isAtEnd else { throw Reader.invalid(.tpm, "certInfo has trailing bytes") }
        }
    }
}
