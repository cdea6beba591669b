import Crypto
import WebAuthn

/// The TPM 2.0 structures of a `tpm` attestation statement (WebAuthn §8.3; TPM 2.0 Library, Part 2), as a Windows
/// Hello TPM makes them for an RSA credential key: `pubArea`, the key as a TPMT_PUBLIC, and `certInfo`, a TPMS_ATTEST
/// of type TPM_ST_ATTEST_CERTIFY naming that key and carrying the hash of what the attestation signs.
struct TPMStatement {
    let credentialKey: SigningKey
    let aikAlgorithm: COSEAlgorithm

    private static let rsa: UInt16 = 0x0001, null: UInt16 = 0x0010, sha256: UInt16 = 0x000B

    /// TPMT_PUBLIC: type RSA, name algorithm SHA-256, the attributes of a TPM-resident signing key (fixedTPM,
    /// fixedParent, sensitiveDataOrigin, userWithAuth, noDA, sign), no policy, no symmetric or scheme restriction,
    /// 2048 bits, the default exponent (0: 65537), and the modulus.
    var publicArea: [UInt8] {
        guard case .map(let entries) = credentialKey.coseKeyValue,
            case .bytes(let modulus)? = entries.first(where: { $0.key == CBORValue(-1) })?.value
        else { preconditionFailure("a TPM statement is made for an RSA credential key") }
        var bytes = Self.uint16(Self.rsa) + Self.uint16(Self.sha256) + Self.uint32(0x0006_0472) + Self.uint16(0)
        bytes +=
            Self.uint16(Self.null) + Self.uint16(Self.null) + Self.uint16(UInt16(modulus.count * 8)) + Self.uint32(0)
        return bytes + Self.sized(modulus)
    }

    /// TPMS_ATTEST over `signedData` (authenticatorData ‖ clientDataHash): extraData is its hash under the AIK's
    /// algorithm, and the attested name is the name algorithm and the hash of `publicArea`.
    func certInfo(signedData: [UInt8]) -> [UInt8] {
        let extraData: [UInt8]
        switch aikAlgorithm.signatureScheme {
        case .ecdsa(let hash), .rsaPKCS1v15(let hash), .rsaPSS(let hash): extraData = hash.algorithm.hash(signedData)
        case .ed25519: preconditionFailure("a TPM does not sign with EdDSA")
        }
        let name = Self.uint16(Self.sha256) + HashFunction.sha256.algorithm.hash(publicArea)
        var bytes = Self.uint32(0xFF54_4347) + Self.uint16(0x8017)  // TPM_GENERATED_VALUE, TPM_ST_ATTEST_CERTIFY
        bytes += Self.sized(Self.uint16(Self.sha256) + [UInt8](repeating: 0x5A, count: 32))  // qualifiedSigner
        bytes += Self.sized(extraData)
        bytes += [UInt8](repeating: 0, count: 8) + Self.uint32(1) + Self.uint32(0) + [1]  // clockInfo
        bytes += [0x20, 0x19, 0x10, 0x23, 0x00, 0x16, 0x36, 0x36]  // firmwareVersion
        return bytes + Self.sized(name) + Self.sized(name)  // name, qualifiedName
    }

    /// The AIK certificate's extensions that §8.3.1 requires besides basic constraints (CA false): a subject
    /// alternative name holding the TPM's manufacturer, model and version as a directory name, and the extended key
    /// usage tcg-kp-AIKCertificate; the subject stays empty.
    static func aikExtensions(manufacturer: String, model: String, version: String) -> [(String, Bool, [UInt8])] {
        func attribute(_ oid: [UInt8], _ value: String) -> [UInt8] {
            der(0x31, der(0x30, der(0x06, oid) + der(0x0C, Array(value.utf8))))
        }
        // 2.23.133.2.1 tcg-at-tpmManufacturer, .2 tcg-at-tpmModel, .3 tcg-at-tpmVersion.
        let name = der(
            0x30,
            attribute([0x67, 0x81, 0x05, 0x02, 0x01], manufacturer) + attribute([0x67, 0x81, 0x05, 0x02, 0x02], model)
                + attribute([0x67, 0x81, 0x05, 0x02, 0x03], version))
        let subjectAlternativeName = der(0x30, der(0xA4, name))
        let extendedKeyUsage = der(0x30, der(0x06, [0x67, 0x81, 0x05, 0x08, 0x03]))
        return [("2.5.29.17", true, subjectAlternativeName), ("2.5.29.37", false, extendedKeyUsage)]
    }

    private static func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        let length: [UInt8] =
            content.count < 0x80
            ? [UInt8(content.count)]
            : content.count < 0x100
                ? [0x81, UInt8(content.count)] : [0x82, UInt8(content.count >> 8), UInt8(content.count & 0xFF)]
        return [tag] + length + content
    }

    private static func uint16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
    private static func uint32(_ value: UInt32) -> [UInt8] {
        uint16(UInt16(value >> 16)) + uint16(UInt16(value & 0xFFFF))
    }
    private static func sized(_ bytes: [UInt8]) -> [UInt8] { uint16(UInt16(bytes.count)) + bytes }
}
