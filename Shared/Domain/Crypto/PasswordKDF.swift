import COpenSSL

/// Password-based key derivation through OpenSSL 3's EVP_KDF: PBKDF2-HMAC and scrypt, for verifying password hashes
/// other systems stored. The callers bound the costs; these functions compute whatever they are given.
public enum PasswordKDF {
    /// The HMAC digest of a PBKDF2 derivation.
    public enum PBKDF2Digest: Sendable {
        case sha256, sha512

        var openSSLName: UnsafePointer<CChar> {
            switch self {
            case .sha256: KDFNames.sha256
            case .sha512: KDFNames.sha512
            }
        }
    }

    /// PBKDF2-HMAC of `password` and `salt`, `length` bytes long. OpenSSL's SP 800-132 lower bounds are off: stored
    /// legacy hashes may have short salts or few iterations, and verifying them is what upgrades them.
    public static func pbkdf2(
        password: [UInt8], salt: [UInt8], iterations: Int, digest: PBKDF2Digest, length: Int
    ) throws(CryptoError) -> [UInt8] {
        guard iterations > 0, let iterationCount = UInt64(exactly: iterations), length > 0 else {
            throw CryptoError("PBKDF2 parameters")
        }
        return try derive(KDFAlgorithms.pbkdf2, length: length) { builder in
            push(builder, KDFNames.password, password) && push(builder, KDFNames.salt, salt)
                && OSSL_PARAM_BLD_push_uint64(builder, KDFNames.iterations, iterationCount) == 1
                && OSSL_PARAM_BLD_push_utf8_string(builder, KDFNames.digest, digest.openSSLName, 0) == 1
                && OSSL_PARAM_BLD_push_int(builder, KDFNames.pkcs5, 1) == 1
        }
    }

    /// scrypt of `password` and `salt` with cost `n` (a power of two), block size `r` and parallelism `p`, `length`
    /// bytes long. `maximumMemory` caps what OpenSSL may allocate; a derivation needing more fails.
    public static func scrypt(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt32, p: UInt32, length: Int, maximumMemory: UInt64
    ) throws(CryptoError) -> [UInt8] {
        guard length > 0 else { throw CryptoError("scrypt parameters") }
        return try derive(KDFAlgorithms.scrypt, length: length) { builder in
            push(builder, KDFNames.password, password) && push(builder, KDFNames.salt, salt)
                && OSSL_PARAM_BLD_push_uint64(builder, KDFNames.scryptN, n) == 1
                && OSSL_PARAM_BLD_push_uint32(builder, KDFNames.scryptR, r) == 1
                && OSSL_PARAM_BLD_push_uint32(builder, KDFNames.scryptP, p) == 1
                && OSSL_PARAM_BLD_push_uint64(builder, KDFNames.scryptMaximumMemory, maximumMemory) == 1
        }
    }

    private static func push(_ builder: OpaquePointer, _ name: UnsafePointer<CChar>, _ bytes: [UInt8]) -> Bool {
        // An empty password is a valid input; OpenSSL wants a non-null pointer for it.
        let copy = bytes.isEmpty ? [0] : bytes
        return copy.withUnsafeBytes { raw in
            OSSL_PARAM_BLD_push_octet_string(builder, name, raw.baseAddress, bytes.count) == 1
        }
    }

    /// Runs `algorithm` with the parameters `push` adds. `OSSL_PARAM_BLD_to_param` copies the pushed octet strings,
    /// so the arrays pushed need only live through `push`.
    private static func derive(
        _ algorithm: KDFAlgorithm, length: Int, _ push: (OpaquePointer) -> Bool
    ) throws(CryptoError) -> [UInt8] {
        guard let builder = OSSL_PARAM_BLD_new() else { throw CryptoError("OSSL_PARAM_BLD_new") }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard push(builder), let params = OSSL_PARAM_BLD_to_param(builder) else {
            throw CryptoError("OSSL_PARAM_BLD")
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_KDF_CTX_new(algorithm.handle) else { throw CryptoError("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: length)
        guard EVP_KDF_derive(context, &output, length, params) == 1 else { throw CryptoError("EVP_KDF_derive") }
        return output
    }
}

/// A fetched `EVP_KDF`. Fetched algorithms are immutable and documented as safe to share between threads, which is
/// what makes `@unchecked Sendable` sound.
final class KDFAlgorithm: @unchecked Sendable {
    let handle: OpaquePointer

    init?(name: String) {
        guard let kdf = EVP_KDF_fetch(nil, name, nil) else {
            _ = CryptoError.drainErrorQueue()
            return nil
        }
        handle = kdf
    }

    deinit { EVP_KDF_free(handle) }
}

/// Every OpenSSL 3 default provider has both; a build without them cannot verify these hashes at all.
private enum KDFAlgorithms {
    static let pbkdf2 = KDFAlgorithm(name: "PBKDF2")!
    static let scrypt = KDFAlgorithm(name: "SCRYPT")!
}

/// OSSL_PARAM keeps pointers to its key names and string values, so they are allocated once per process and never
/// freed. `nonisolated(unsafe)` is sound because the pointers are immutable after initialization.
private enum KDFNames {
    nonisolated(unsafe) static let password = UnsafePointer(strdup(OSSL_KDF_PARAM_PASSWORD)!)
    nonisolated(unsafe) static let salt = UnsafePointer(strdup(OSSL_KDF_PARAM_SALT)!)
    nonisolated(unsafe) static let iterations = UnsafePointer(strdup(OSSL_KDF_PARAM_ITER)!)
    nonisolated(unsafe) static let digest = UnsafePointer(strdup(OSSL_KDF_PARAM_DIGEST)!)
    nonisolated(unsafe) static let pkcs5 = UnsafePointer(strdup(OSSL_KDF_PARAM_PKCS5)!)
    nonisolated(unsafe) static let scryptN = UnsafePointer(strdup(OSSL_KDF_PARAM_SCRYPT_N)!)
    nonisolated(unsafe) static let scryptR = UnsafePointer(strdup(OSSL_KDF_PARAM_SCRYPT_R)!)
    nonisolated(unsafe) static let scryptP = UnsafePointer(strdup(OSSL_KDF_PARAM_SCRYPT_P)!)
    nonisolated(unsafe) static let scryptMaximumMemory = UnsafePointer(strdup(OSSL_KDF_PARAM_SCRYPT_MAXMEM)!)
    nonisolated(unsafe) static let sha256 = UnsafePointer(strdup("SHA256")!)
    nonisolated(unsafe) static let sha512 = UnsafePointer(strdup("SHA512")!)
}
