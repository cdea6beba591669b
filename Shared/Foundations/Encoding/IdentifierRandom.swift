import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Random bytes for identifiers (UUIDs, request IDs) from the kernel's CSPRNG, drawn 4 KiB at a time: a syscall per
/// identifier, or two as `SystemRandomNumberGenerator` makes for a UUID, would be a measurable part of a request.
/// Not for secrets (challenges, tokens, keys): those come from OpenSSL's DRBG (`SecureRandom`).
public enum IdentifierRandom {
    private static let capacity = 4096
    private static let pool = Mutex<(bytes: [UInt8], offset: Int)>(
        ([UInt8](repeating: 0, count: capacity), capacity))

    /// Fills `output` (at most 4 KiB) with random bytes.
    public static func fill(_ output: UnsafeMutableRawBufferPointer) {
        precondition(output.count <= capacity, "at most \(capacity) bytes at a time")
        pool.withLock { pool in
            if pool.offset + output.count > pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes { refill($0) }
                pool.offset = 0
            }
            let start = pool.offset
            pool.bytes.withUnsafeMutableBytes { bytes in
                let taken = UnsafeMutableRawBufferPointer(rebasing: bytes[start..<(start + output.count)])
                output.copyMemory(from: UnsafeRawBufferPointer(taken))
                // Bytes handed out are not kept.
                taken.initializeMemory(as: UInt8.self, repeating: 0)
            }
            pool.offset += output.count
        }
    }

    /// A random 64-bit value.
    public static func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    private static func refill(_ buffer: UnsafeMutableRawBufferPointer) {
        // /dev/urandom is the kernel CSPRNG that getrandom reads (which Glibc's module map does not export).
        let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        precondition(descriptor >= 0, "/dev/urandom cannot be opened (errno \(errno))")
        defer { close(descriptor) }
        var filled = 0
        while filled < buffer.count {
            let count = read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            if count > 0 {
                filled += count
            } else {
                // Without random bytes no identifier can be made; EINTR is retried.
                precondition(count < 0 && errno == EINTR, "/dev/urandom read failed (errno \(errno))")
            }
        }
    }
}
