import AccountImport
import Foundation

/// Lines read and checked, waiting to be written: the candidates for the database and what was decided already.
struct LineBatch: Sendable {
    /// The batch's lines are `firstLine` up to `firstLine + lineCount - 1`.
    var firstLine: Int
    var lineCount = 0
    var candidates: [ImportCandidate] = []
    /// Lines refused before any lookup, with their numbers.
    var rejects: [(line: Int, reject: ImportReject)] = []
    var blank = 0
    /// Input bytes read when the batch was complete, for the progress.
    var bytesRead: Int64 = 0

    var lastLine: Int { firstLine + lineCount - 1 }
}

/// The hand-over between the reading thread and the writer: at most `capacity` batches wait, so memory stays bounded
/// however fast the input is read. The writer closes it when it stops; the reader then stops too.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
final class BatchQueue: @unchecked Sendable {
    enum Item: Sendable {
        case batch(LineBatch)
        /// The input ended after the batches before it.
        case end
        /// Reading stopped (a read error, a CSV header that cannot be read); the batches before it are whole.
        case failed(ImportFailure)
    }

    private let capacity: Int
    private let condition = NSCondition()
    private var items: [Item] = []
    private var closed = false

    init(capacity: Int) { self.capacity = capacity }

    /// Waits for room and adds `item`; false when the writer closed the queue.
    func put(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// Waits for the next item.
    func take() -> Item {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty { condition.wait() }
        let item = items.removeFirst()
        condition.broadcast()
        return item
    }

    /// Drops what waits and wakes the reader, whose next `put` returns false.
    func close() {
        condition.lock()
        closed = true
        items.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
