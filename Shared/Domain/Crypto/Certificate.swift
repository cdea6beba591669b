import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// An X.509 certificate parsed by OpenSSL.
///
/// The `X509` object is parsed in the initializer and only read afterwards. OpenSSL caches decoded extensions
/// lazily inside the object under its own lock, so concurrent reads are safe; that justifies `@unchecked Sendable`.
public final class Certificate: @unchecked Sendable {
    let handle: OpaquePointer
    /// The DER encoding the certificate was parsed from.
    public let derEncoded: [UInt8]

    /// Parses one DER certificate; trailing bytes are rejected.
    public init(derEncoded: [UInt8]) throws(CryptoError) {
        guard !derEncoded.isEmpty,
            let cert = derEncoded.withUnsafeBufferPointer({ copenssl_d2i_X509($0.baseAddress, $0.count) })
        else { throw CryptoError("d2i_X509") }
        self.handle = cert
        self.derEncoded = derEncoded
    }

    /// Parses one PEM certificate.
    public convenience init(pemEncoded: String) throws(CryptoError) {
        // The memory BIO reads the caller's buffer in place, so parsing must finish inside its scope.
        let der: [UInt8]? = Array(pemEncoded.utf8).withUnsafeBufferPointer { buffer in
            guard let inputLength = Int32(exactly: buffer.count),
                let bio = BIO_new_mem_buf(buffer.baseAddress, inputLength)
            else { return nil }
            defer { BIO_free(bio) }
            guard let cert = PEM_read_bio_X509(bio, nil, nil, nil) else { return nil }
            defer { X509_free(cert) }
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_X509(cert, &output)
            guard length > 0, let output else { return nil }
            defer { _ = copenssl_OPENSSL_free(output) }
            return Array(UnsafeBufferPointer(start: output, count: Int(length)))
        }
        guard let der else { throw CryptoError("PEM_read_bio_X509") }
        try self.init(derEncoded: der)
    }

    deinit { X509_free(handle) }

    /// The serial number in hex.
    public var serialNumberHex: String { Self.serialNumberHex(handle) }

    static func serialNumberHex(_ certificate: OpaquePointer) -> String {
        guard let serial = X509_get0_serialNumber(certificate), let number = ASN1_INTEGER_to_BN(serial, nil) else {
            return ""
        }
        defer { BN_free(number) }
        guard let hex = BN_bn2hex(number) else { return "" }
        defer { _ = copenssl_OPENSSL_free(hex) }
        return String(cString: hex)
    }

    /// The end of the validity period (`notAfter`) in seconds since 1970; nil when it cannot be read.
    public var notAfterUnixSeconds: Int64? {
        guard let time = X509_get0_notAfter(handle) else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }

    /// The X.509 version as written in the certificate plus one (3 for a v3 certificate).
    public var version: Int { Int(X509_get_version(handle)) + 1 }

    /// A subject attribute type.
    public enum NameAttribute: Sendable {
        case country, organization, organizationalUnit, commonName

        var nid: Int32 {
            switch self {
            case .country: return NID_countryName
            case .organization: return NID_organizationName
            case .organizationalUnit: return NID_organizationalUnitName
            case .commonName: return NID_commonName
            }
        }
    }

    /// All values of one subject attribute, as UTF-8 strings.
    public func subjectValues(_ attribute: NameAttribute) -> [String] {
        guard let name = X509_get_subject_name(handle) else { return [] }
        var values: [String] = []
        var index: Int32 = -1
        while true {
            index = X509_NAME_get_index_by_NID(name, attribute.nid, index)
            if index < 0 { break }
            guard let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
                continue
            }
            var output: UnsafeMutablePointer<UInt8>?
            let length = ASN1_STRING_to_UTF8(&output, data)
            if length >= 0, let output {
                values.append(String(decoding: UnsafeBufferPointer(start: output, count: Int(length)), as: UTF8.self))
                _ = copenssl_OPENSSL_free(output)
            }
        }
        return values
    }

    /// The number of attributes in the subject name (0 for an empty subject).
    public var subjectAttributeCount: Int {
        guard let name = X509_get_subject_name(handle) else { return 0 }
        return Int(X509_NAME_entry_count(name))
    }

    /// Whether basic constraints mark this certificate as a CA.
    public var isCertificateAuthority: Bool { copenssl_X509_is_ca_by_basic_constraints(handle) == 1 }

    /// An extension found by its dotted OID: the contents of `extnValue` and whether it is critical.
    public func extensionValue(oid: String) -> (value: [UInt8], critical: Bool)? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            _ = CryptoError.drainErrorQueue()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(handle, object, -1)
        guard index >= 0, let ext = X509_get_ext(handle, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let length = Int(ASN1_STRING_length(data))
        guard let bytes = ASN1_STRING_get0_data(data) else { return nil }
        return (Array(UnsafeBufferPointer(start: bytes, count: length)), X509_EXTENSION_get_critical(ext) == 1)
    }

    /// The subject public key.
    public func publicKey() throws(CryptoError) -> PublicKey {
        guard let key = X509_get0_pubkey(handle), EVP_PKEY_up_ref(key) == 1 else {
            throw CryptoError("X509_get0_pubkey")
        }
        return PublicKey(taking: key)
    }

    /// Whether the certificate is valid for `hostname` (subject alternative names, else common name).
    public func matches(hostname: String) -> Bool {
        X509_check_host(handle, hostname, hostname.utf8.count, 0, nil) == 1
    }

    /// Verifies that `leaf` chains through `intermediates` to one of `trustAnchors`, with every certificate's
    /// validity checked at `time` (seconds since 1970). An anchor need not be self-signed (partial chains are
    /// allowed, as FIDO metadata roots often are intermediates).
    public static func verifyChain(
        leaf: Certificate, intermediates: [Certificate], trustAnchors: [Certificate], at time: Int64
    ) throws(CryptoError) {
        guard !trustAnchors.isEmpty else { throw CryptoError("no trust anchors") }
        guard let store = X509_STORE_new() else { throw CryptoError("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for anchor in trustAnchors where X509_STORE_add_cert(store, anchor.handle) != 1 {
            _ = CryptoError.drainErrorQueue()
        }
        guard let untrusted = copenssl_sk_X509_new_null() else { throw CryptoError("sk_X509_new_null") }
        defer { copenssl_sk_X509_free(untrusted) }
        for cert in intermediates where copenssl_sk_X509_push(untrusted, cert.handle) <= 0 {
            throw CryptoError("sk_X509_push")
        }
        guard let context = X509_STORE_CTX_new() else { throw CryptoError("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.handle, untrusted) == 1 else {
            throw CryptoError("X509_STORE_CTX_init")
        }
        guard let param = X509_STORE_CTX_get0_param(context) else { throw CryptoError("X509_STORE_CTX_get0_param") }
        X509_VERIFY_PARAM_set_time(param, time_t(time))
        X509_VERIFY_PARAM_set_flags(param, copenssl_X509_V_FLAG_PARTIAL_CHAIN())
        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "unknown"
            _ = CryptoError.drainErrorQueue()
            throw CryptoError(operation: "X509_verify_cert", details: text)
        }
    }
}

extension CryptoError {
    /// An error with explicit details (no OpenSSL queue to drain).
    public init(operation: String, details: String) {
        self.operation = operation
        self.details = details
    }
}
