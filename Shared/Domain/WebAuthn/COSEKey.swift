import Crypto

/// COSE algorithm identifiers (IANA "COSE Algorithms") that WebAuthn credentials and attestations use.
public enum COSEAlgorithm: Int, Sendable, CaseIterable {
    case es256 = -7
    case es384 = -35
    case es512 = -36
    /// ECDSA P-256 with SHA-256, fully specified.
    case esp256 = -9
    case esp384 = -51
    case esp512 = -52
    case edDSA = -8
    /// Ed25519, fully specified.
    case ed25519 = -19
    case rs256 = -257
    case rs384 = -258
    case rs512 = -259
    case ps256 = -37
    case ps384 = -38
    case ps512 = -39
    /// RSASSA-PKCS1-v1_5 with SHA-1: in TPM attestation statements, and as the key of some TPM-backed Windows Hello
    /// credentials. A credential key may use it only where the relying party offered it (never by default).
    case rs1 = -65535

    /// The signature scheme this algorithm names.
    public var signatureScheme: SignatureScheme {
        switch self {
        case .es256, .esp256: return .ecdsa(.sha256)
        case .es384, .esp384: return .ecdsa(.sha384)
        case .es512, .esp512: return .ecdsa(.sha512)
        case .edDSA, .ed25519: return .ed25519
        case .rs256: return .rsaPKCS1v15(.sha256)
        case .rs384: return .rsaPKCS1v15(.sha384)
        case .rs512: return .rsaPKCS1v15(.sha512)
        case .ps256: return .rsaPSS(.sha256)
        case .ps384: return .rsaPSS(.sha384)
        case .ps512: return .rsaPSS(.sha512)
        case .rs1: return .rsaPKCS1v15(.sha1)
        }
    }

    /// The curve an ECDSA algorithm is bound to (WebAuthn binds -7/-9 to P-256, -35/-51 to P-384, -36/-52 to P-521).
    var curve: EllipticCurve? {
        switch self {
        case .es256, .esp256: return .p256
        case .es384, .esp384: return .p384
        case .es512, .esp512: return .p521
        default: return nil
        }
    }

    /// The default list of algorithms a relying party offers in `pubKeyCredParams`.
    public static let defaultAllowed: [Int] = [
        -8, -7, -36, -35, -9, -51, -52, -19, -257, -258, -259, -37, -38, -39,
    ]

    /// Every algorithm a credential key may have here: the default list and RS1, which a relying party may add.
    public static let credentialAlgorithms: [Int] = defaultAllowed + [COSEAlgorithm.rs1.rawValue]
}

/// A credential public key: its COSE encoding and the OpenSSL key built from it.
///
/// Parse once with `init(coseKey:)` and cache: verification never re-parses. Immutable and `Sendable`
/// (the `PublicKey` inside is safe to share).
public struct CredentialPublicKey: Sendable {
    /// COSE key type values.
    public enum KeyType: Int, Sendable {
        case okp = 1
        case ec2 = 2
        case rsa = 3
        case akp = 7
    }

    /// The COSE_Key bytes as the authenticator encoded them (stored and returned byte for byte).
    public let coseKey: [UInt8]
    /// The key's algorithm.
    public let algorithm: COSEAlgorithm
    /// The key type.
    public let keyType: KeyType
    /// The OpenSSL key.
    public let key: PublicKey
    /// The key prepared for this algorithm's signatures.
    private let verifier: PreparedVerifier

    /// Parses a COSE_Key that must fill `coseKey` exactly.
    public init(coseKey: [UInt8]) throws(WebAuthnError) {
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(coseKey)
        } catch {
            throw WebAuthnError(.malformedCBOR, "credential public key is not one CBOR item: \(error)")
        }
        try self.init(value: value, encoded: coseKey)
    }

    /// Builds the key from an already-decoded COSE_Key map and its encoding.
    init(value: CBORValue, encoded: [UInt8]) throws(WebAuthnError) {
        guard value.mapEntries != nil else {
            throw WebAuthnError(.malformedCBOR, "credential public key is not a CBOR map")
        }
        guard let ktyValue = value[int: 1]?.integer else {
            throw WebAuthnError(.malformedCBOR, "COSE key has no integer kty (1)")
        }
        guard let algValue = value[int: 3]?.integer else {
            throw WebAuthnError(.malformedCBOR, "COSE key has no integer alg (3)")
        }
        guard let keyType = KeyType(rawValue: ktyValue), keyType != .akp else {
            throw WebAuthnError(.unsupportedAlgorithm, "COSE key type \(ktyValue) is not supported")
        }
        guard let algorithm = COSEAlgorithm(rawValue: algValue) else {
            throw WebAuthnError(.unsupportedAlgorithm, "COSE algorithm \(algValue) is not supported")
        }
        self.coseKey = encoded
        self.algorithm = algorithm
        self.keyType = keyType
        let key = try CredentialPublicKey.buildKey(value, keyType: keyType, algorithm: algorithm)
        self.key = key
        do {
            self.verifier = try key.preparedVerifier(for: algorithm.signatureScheme)
        } catch {
            throw WebAuthnError(.unsupportedAlgorithm, "key cannot verify \(algorithm) signatures: \(error)")
        }
    }

    private static func buildKey(
        _ value: CBORValue, keyType: KeyType, algorithm: COSEAlgorithm
    ) throws(WebAuthnError) -> PublicKey {
        do {
            switch (keyType, algorithm.signatureScheme) {
            case (.ec2, .ecdsa):
                guard let curve = algorithm.curve, let crv = value[int: -1]?.integer else {
                    throw WebAuthnError(.malformedCBOR, "EC2 key has no crv (-1)")
                }
                let expectedCurve: Int
                switch curve {
                case .p256: expectedCurve = 1
                case .p384: expectedCurve = 2
                case .p521: expectedCurve = 3
                }
                guard crv == expectedCurve else {
                    throw WebAuthnError(.unsupportedAlgorithm, "EC2 curve \(crv) does not match algorithm \(algorithm)")
                }
                guard let x = value[int: -2]?.byteString, let y = value[int: -3]?.byteString else {
                    throw WebAuthnError(.malformedCBOR, "EC2 key needs byte-string x (-2) and y (-3)")
                }
                return try PublicKey.ellipticCurve(curve, x: x, y: y)
            case (.okp, .ed25519):
                guard let crv = value[int: -1]?.integer else {
                    throw WebAuthnError(.malformedCBOR, "OKP key has no crv (-1)")
                }
                guard crv == 6 else {
                    throw WebAuthnError(.unsupportedAlgorithm, "OKP curve \(crv) is not Ed25519 (6)")
                }
                guard let x = value[int: -2]?.byteString else {
                    throw WebAuthnError(.malformedCBOR, "OKP key needs a byte-string x (-2)")
                }
                return try PublicKey.ed25519(x)
            case (.rsa, .rsaPKCS1v15), (.rsa, .rsaPSS):
                guard let n = value[int: -1]?.byteString, let e = value[int: -2]?.byteString else {
                    throw WebAuthnError(.malformedCBOR, "RSA key needs byte-string n (-1) and e (-2)")
                }
                let key = try PublicKey.rsa(modulus: n, exponent: e)
                guard case .rsa(let bits) = key.kind, bits >= 2048 else {
                    throw WebAuthnError(.unsupportedAlgorithm, "RSA modulus shorter than 2048 bits")
                }
                return key
            default:
                throw WebAuthnError(.unsupportedAlgorithm, "key type \(keyType) does not fit algorithm \(algorithm)")
            }
        } catch let error as WebAuthnError {
            throw error
        } catch {
            throw WebAuthnError(.malformedAuthenticatorData, "credential public key rejected: \(error)")
        }
    }

    /// Verifies a signature made by this credential over `message`.
    public func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        verifier.verify(signature: signature, message: message)
    }
}
