/// One line of the input: its 1-based number and its bytes (without `\n` or a trailing `\r`), or only its number
/// when it was longer than the limit.
public enum InputLine: Sendable, Hashable {
    case complete(number: Int, bytes: [UInt8])
    case tooLong(number: Int)

    public var number: Int {
        switch self {
        case .complete(let number, _), .tooLong(let number): number
        }
    }
}

/// Cuts a byte stream fed in chunks of any size into lines, holding at most one line of at most `maximumLineBytes`
/// between chunks: a longer line is reported as too long and its bytes are dropped as they arrive, so memory stays
/// bounded whatever the input.
public struct LineSplitter: Sendable {
    public let maximumLineBytes: Int
    private var pending: [UInt8] = []
    private var pendingIsTooLong = false
    private var hasPending = false
    /// Lines reported so far.
    public private(set) var lineCount = 0

    public init(maximumLineBytes: Int = ImportLimits.maximumLineBytes) {
        self.maximumLineBytes = maximumLineBytes
        pending.reserveCapacity(min(maximumLineBytes, 4096))
    }

    /// Hands every line that `chunk` completes to `body`, in order.
    public mutating func feed<E: Error>(
        _ chunk: UnsafeBufferPointer<UInt8>, _ body: (InputLine) throws(E) -> Void
    ) throws(E) {
        var start = 0
        let count = chunk.count
        while start < count {
            var end = start
            // The byte loop over the raw buffer stays fast without optimization, unlike a collection algorithm.
            while end < count, chunk[end] != 0x0A { end += 1 }
            let piece = UnsafeBufferPointer(rebasing: chunk[start..<end])
            if !pendingIsTooLong {
                if pending.count + piece.count > maximumLineBytes + 1 {
                    // One byte of slack for a `\r` before the line break.
                    pendingIsTooLong = true
                    pending.removeAll(keepingCapacity: true)
                } else {
                    pending.append(contentsOf: piece)
                }
            }
            hasPending = true
            guard end < count else { return }
            try emitPending(body)
            start = end + 1
        }
    }

    /// Hands the last line to `body` when the input did not end with a line break.
    public mutating func finish<E: Error>(_ body: (InputLine) throws(E) -> Void) throws(E) {
        if hasPending { try emitPending(body) }
    }

    private mutating func emitPending<E: Error>(_ body: (InputLine) throws(E) -> Void) throws(E) {
        lineCount += 1
        if pending.last == 0x0D { pending.removeLast() }
        let line: InputLine
        if pendingIsTooLong || pending.count > maximumLineBytes {
            line = .tooLong(number: lineCount)
        } else {
            line = .complete(number: lineCount, bytes: pending)
        }
        pending.removeAll(keepingCapacity: true)
        pendingIsTooLong = false
        hasPending = false
        try body(line)
    }
}
