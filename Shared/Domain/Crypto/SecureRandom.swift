import COpenSSL

/// A source of random bytes. Code that needs randomness takes one of these, so tests can inject a fixed one.
public protocol RandomSource: Sendable {
    /// Returns `count` random bytes.
    func bytes(count: Int) -> [UInt8]
}

/// Cryptographically secure random bytes from OpenSSL's DRBG (`RAND_bytes`).
public struct SecureRandom: RandomSource {
    public init() {}

    public func bytes(count: Int) -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max))
        var output = [UInt8](repeating: 0, count: count)
        // RAND_bytes fails only when the DRBG cannot be seeded; issuing a predictable challenge or token would be
        // worse than stopping.
        precondition(RAND_bytes(&output, Int32(count)) == 1, "RAND_bytes failed: \(CryptoError.drainErrorQueue())")
        return output
    }
}
