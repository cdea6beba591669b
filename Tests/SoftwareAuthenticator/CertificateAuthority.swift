import COpenSSL
import Crypto
import WebAuthn

/// A test certificate authority: a self-signed root that issues attestation certificates, so tests can build
/// x5c paths with chosen subjects, extensions and validity.
public final class CertificateAuthority: Sendable {
    /// The root's key.
    public let key: SigningKey
    /// The root certificate (DER).
    public let rootCertificate: [UInt8]
    private let subject: [(String, String)]

    /// A root valid from `notBefore` for `lifetime` seconds (epoch seconds).
    public init(commonName: String = "Test Attestation Root", notBefore: Int64, lifetime: Int64 = 10 * 365 * 86_400) {
        key = SigningKey(algorithm: .es256)
        subject = [("C", "US"), ("O", "Test"), ("CN", commonName)]
        rootCertificate = CertificateAuthority.build(
            subject: subject, issuer: subject, subjectKey: key, signer: key, serial: 1, notBefore: notBefore,
            lifetime: lifetime, isCA: true, extensions: [])
    }

    /// Issues a certificate for `subjectKey` signed by this root.
    /// - Parameters:
    ///   - subject: relative distinguished names in order, for example `[("C","US"),("O","Maker")]`; may be empty.
    ///   - extensions: extra extensions as (dotted OID, critical, DER extnValue contents).
    public func issue(
        subject: [(String, String)], subjectKey: SigningKey, serial: Int = 2, notBefore: Int64,
        lifetime: Int64 = 365 * 86_400, isCA: Bool = false, extensions: [(String, Bool, [UInt8])] = []
    ) -> [UInt8] {
        CertificateAuthority.build(
            subject: subject, issuer: self.subject, subjectKey: subjectKey, signer: key, serial: serial,
            notBefore: notBefore, lifetime: lifetime, isCA: isCA, extensions: extensions)
    }

    /// The id-fido-gen-ce-aaguid extension for `aaguid`.
    public static func aaguidExtension(_ aaguid: AAGUID, critical: Bool = false) -> (String, Bool, [UInt8]) {
        ("1.3.6.1.4.1.45724.1.1.4", critical, [0x04, 0x10] + aaguid.bytes)
    }

    private static func build(
        subject: [(String, String)], issuer: [(String, String)], subjectKey: SigningKey, signer: SigningKey,
        serial: Int, notBefore: Int64, lifetime: Int64, isCA: Bool, extensions: [(String, Bool, [UInt8])]
    ) -> [UInt8] {
        let cert = X509_new()
        defer { X509_free(cert) }
        precondition(X509_set_version(cert, 2) == 1)
        precondition(ASN1_INTEGER_set(X509_get_serialNumber(cert), serial) == 1)
        var start = time_t(notBefore)
        precondition(X509_time_adj_ex(X509_getm_notBefore(cert), 0, 0, &start) != nil)
        var end = time_t(notBefore + lifetime)
        precondition(X509_time_adj_ex(X509_getm_notAfter(cert), 0, 0, &end) != nil)
        for (field, value) in subject {
            precondition(
                X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), field, MBSTRING_FLAG | 1, value, -1, -1, 0) == 1
            )
        }
        for (field, value) in issuer {
            precondition(
                X509_NAME_add_entry_by_txt(X509_get_issuer_name(cert), field, MBSTRING_FLAG | 1, value, -1, -1, 0) == 1)
        }
        precondition(X509_set_pubkey(cert, subjectKey.handle) == 1)
        let constraints = X509V3_EXT_conf_nid(nil, nil, NID_basic_constraints, isCA ? "critical,CA:TRUE" : "CA:FALSE")
        precondition(X509_add_ext(cert, constraints, -1) == 1)
        X509_EXTENSION_free(constraints)
        for (oid, critical, value) in extensions {
            let object = OBJ_txt2obj(oid, 1)
            let data = ASN1_OCTET_STRING_new()
            precondition(ASN1_OCTET_STRING_set(data, value, Int32(value.count)) == 1)
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, critical ? 1 : 0, data)
            precondition(X509_add_ext(cert, ext, -1) == 1)
            X509_EXTENSION_free(ext)
            ASN1_OCTET_STRING_free(data)
            ASN1_OBJECT_free(object)
        }
        precondition(X509_sign(cert, signer.handle, DigestAlgorithm.sha256.handle) > 0, "X509_sign")
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(cert, &output)
        precondition(length > 0)
        defer { _ = copenssl_OPENSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
