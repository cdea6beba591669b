import Synchronization

/// A service's work besides its calls (flushing batches, sweeping), started while the service starts and ended
/// after its calls have drained: each task is cancelled and awaited, so what it still holds is written first.
public final class BackgroundTasks: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    public init() {}

    /// Starts `body`, which should return soon after its task is cancelled.
    public func start(_ body: @escaping @Sendable () async -> Void) {
        let task = Task.detached { await body() }
        tasks.withLock { $0.append(task) }
    }

    /// Cancels every task and waits for each to return.
    public func cancelAndWait() async {
        let running = tasks.withLock { tasks in
            defer { tasks.removeAll() }
            return tasks
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }
}
