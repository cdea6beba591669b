import Foundation

/// Threads of our own for blocking work (libpq calls, password hashing), so it never runs on Swift's cooperative
/// pool or an event loop.
///
/// Each thread keeps a `State` of its own (a database connection, say), created on that thread and never shared.
/// Jobs are taken in order by whichever thread is free. The queue can be bounded, so a flood of work is refused
/// at once instead of waiting without limit.
public final class BlockingWorkerPool<State>: Sendable {
    /// Why a job was not run.
    public enum Failure: Error, Equatable, Sendable {
        /// The queue already holds `maximumQueueLength` jobs.
        case queueFull
        /// The pool was shut down.
        case closed
    }

    private let queue: JobQueue<State>
    public let threadCount: Int
    public let maximumQueueLength: Int

    /// Starts `threadCount` threads named `name-0`, `name-1`, …; each calls `makeState` once, on itself.
    public init(
        name: String, threadCount: Int, maximumQueueLength: Int = Int.max,
        makeState: @escaping @Sendable () -> State
    ) {
        precondition(threadCount > 0 && maximumQueueLength > 0)
        self.threadCount = threadCount
        self.maximumQueueLength = maximumQueueLength
        let queue = JobQueue<State>()
        self.queue = queue
        for index in 0..<threadCount {
            let thread = Thread {
                // Named from inside: on Linux a name set before start() is not applied to the thread.
                Thread.current.name = "\(name)-\(index)"
                var state = makeState()
                while let job = queue.next() { job(&state) }
            }
            thread.start()
        }
    }

    /// Runs `body` on a pool thread with that thread's state, and returns its result.
    public func run<Result: Sendable>(_ body: @escaping @Sendable (inout State) throws -> Result) async throws -> Result
    {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = queue.enqueue(limit: maximumQueueLength) { state in
                continuation.resume(with: Swift.Result { try body(&state) })
            }
            if let outcome { continuation.resume(throwing: outcome) }
        }
    }

    /// Jobs waiting for a thread.
    public var queuedCount: Int { queue.count }

    /// Lets the threads finish the queued jobs and exit; later jobs fail with `.closed`.
    public func shutdown() { queue.close() }
}

/// A blocking FIFO shared by the worker threads.
final class JobQueue<State>: @unchecked Sendable {
    // @unchecked: `jobs`, `head` and `closed` are only touched while `condition` is locked.
    typealias Job = @Sendable (inout State) -> Void

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var head = 0
    private var closed = false

    var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    /// Adds a job; returns the reason when it was refused.
    func enqueue(limit: Int, _ job: @escaping Job) -> BlockingWorkerPool<State>.Failure? {
        condition.lock()
        defer { condition.unlock() }
        if closed { return .closed }
        if jobs.count - head >= limit { return .queueFull }
        jobs.append(job)
        condition.signal()
        return nil
    }

    /// Blocks until a job is available; nil once the queue is closed and drained.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !closed { condition.wait() }
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 {
            jobs.removeFirst(head)
            head = 0
        }
        return job
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}
