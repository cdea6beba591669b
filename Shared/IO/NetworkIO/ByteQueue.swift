/// A growable FIFO of bytes: appended at the back, consumed from the front, compacted lazily.
public struct ByteQueue: Sendable {
    private var storage: [UInt8] = []
    private var head = 0

    /// Creates an empty queue.
    public init() {}

    /// The number of unread bytes.
    public var count: Int { storage.count - head }
    /// True when nothing is queued.
    public var isEmpty: Bool { storage.count == head }

    /// Appends bytes at the back.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        storage.append(contentsOf: bytes)
    }

    /// Appends bytes at the back.
    public mutating func append<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8 {
        storage.append(contentsOf: bytes)
    }

    /// Appends an array at the back; an empty queue takes the array's storage over instead of copying it.
    public mutating func append(_ bytes: consuming [UInt8]) {
        if storage.isEmpty {
            storage = bytes
            head = 0
        } else {
            storage.append(contentsOf: bytes)
        }
    }

    /// Calls `body` with the unread bytes.
    public func withUnreadBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[head...])) }
    }

    /// Drops `n` bytes from the front.
    public mutating func consume(_ n: Int) {
        head += min(n, count)
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 1 << 20)
            head = 0
        } else if head >= 64 * 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    /// Removes and returns the first `n` bytes; nil if fewer are queued.
    public mutating func read(_ n: Int) -> [UInt8]? {
        guard n <= count else { return nil }
        let result = Array(storage[head..<(head + n)])
        consume(n)
        return result
    }

    /// Removes everything.
    public mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
