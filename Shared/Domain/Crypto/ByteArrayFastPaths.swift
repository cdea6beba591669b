import COpenSSL

// Non-generic overloads of the generic byte helpers for the concrete types the verification hot path uses. The
// generic versions live in another module and are not specialized across it, so each call paid for runtime
// generic metadata lookups; these overloads are chosen by the compiler wherever the arguments are byte arrays.

/// `constantTimeEquals` for two byte arrays.
public func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { left in
        b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, a.count) == 0 }
    }
}

/// `constantTimeEquals` for a slice of a byte array and a byte array.
public func constantTimeEquals(_ a: ArraySlice<UInt8>, _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    return a.withUnsafeBytes { left in
        b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, a.count) == 0 }
    }
}

/// SHA-256 of a byte array.
public func sha256(_ data: [UInt8]) -> [UInt8] {
    DigestAlgorithm.sha256.hash(data)
}

extension DigestAlgorithm {
    /// Hashes a byte array in one call.
    public func hash(_ data: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputLength)
        var length: UInt32 = 0
        let ok = data.withUnsafeBufferPointer { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &output, &length, handle, nil)
        }
        // As in the generic version: EVP_Digest on a fetched, fixed-length algorithm fails only on allocation failure.
        precondition(ok == 1, "EVP_Digest failed: \(CryptoError.drainErrorQueue())")
        return output
    }
}
