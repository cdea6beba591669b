import COpenSSL

/// A message digest algorithm, fetched from OpenSSL's default provider once per process.
///
/// `EVP_MD` objects are immutable after `EVP_MD_fetch` and documented as safe to share between threads,
/// which is what makes the `@unchecked Sendable` below sound.
public final class DigestAlgorithm: @unchecked Sendable {
    /// The fetched `EVP_MD`. Owned by this object and freed in `deinit`.
    public let handle: OpaquePointer
    /// Output length in bytes.
    public let outputLength: Int
    /// The OpenSSL name, for example `"SHA256"`.
    public let name: String

    private init?(name: String) {
        guard let md = EVP_MD_fetch(nil, name, nil) else {
            _ = CryptoError.drainErrorQueue()
            return nil
        }
        self.handle = md
        self.outputLength = Int(EVP_MD_get_size(md))
        self.name = name
    }

    deinit { EVP_MD_free(handle) }

    // The force unwraps below are on algorithms every OpenSSL 3 default provider has; a build without them
    // cannot do anything this product needs, so failing at first use is the right outcome.

    /// SHA-1, needed only to verify legacy attestation statements.
    public static let sha1 = DigestAlgorithm(name: "SHA1")!
    /// SHA-256.
    public static let sha256 = DigestAlgorithm(name: "SHA256")!
    /// SHA-384.
    public static let sha384 = DigestAlgorithm(name: "SHA384")!
    /// SHA-512.
    public static let sha512 = DigestAlgorithm(name: "SHA512")!

    /// Hashes `data` in one call.
    public func hash<Bytes: Collection>(_ data: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var output = [UInt8](repeating: 0, count: outputLength)
        var length: UInt32 = 0
        let ok: Int32 =
            data.withContiguousStorageIfAvailable { buffer in
                EVP_Digest(buffer.baseAddress, buffer.count, &output, &length, handle, nil)
            }
            ?? Array(data).withUnsafeBufferPointer { buffer in
                EVP_Digest(buffer.baseAddress, buffer.count, &output, &length, handle, nil)
            }
        // EVP_Digest on a fetched, fixed-length algorithm fails only on allocation failure.
        precondition(ok == 1, "EVP_Digest failed: \(CryptoError.drainErrorQueue())")
        return output
    }
}

/// SHA-256 of `data`.
public func sha256<Bytes: Collection>(_ data: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
    DigestAlgorithm.sha256.hash(data)
}

/// HMAC-SHA256 of `data` under `key` (RFC 2104), through OpenSSL 3's one-shot `EVP_Q_mac`.
public func hmacSHA256(key: [UInt8], data: [UInt8]) -> [UInt8] {
    var output = [UInt8](repeating: 0, count: 32)
    var length = 0
    let result = key.withUnsafeBytes { keyBytes in
        data.withUnsafeBufferPointer { dataBytes in
            EVP_Q_mac(
                nil, "HMAC", nil, "SHA256", nil, keyBytes.baseAddress, keyBytes.count, dataBytes.baseAddress,
                dataBytes.count, &output, output.count, &length)
        }
    }
    // HMAC with SHA-256 is in every default provider; it fails only on allocation failure.
    precondition(result != nil && length == 32, "EVP_Q_mac failed: \(CryptoError.drainErrorQueue())")
    return output
}
