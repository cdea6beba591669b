import COpenSSL

/// Compares two byte strings in time that depends only on their lengths (`CRYPTO_memcmp`).
///
/// Use it for challenges, digests and tokens. Lengths are not secret: unequal lengths return `false` at once.
public func constantTimeEquals<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
where A.Element == UInt8, B.Element == UInt8 {
    let left = Array(a)
    let right = Array(b)
    guard left.count == right.count else { return false }
    if left.isEmpty { return true }
    return left.withUnsafeBytes { l in
        right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, left.count) == 0 }
    }
}
