import CNetworkIO
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Receives readiness events for one file descriptor registered with an ``EventLoop``.
public protocol EventLoopSource: AnyObject {
    /// Called on the loop thread with the epoll event bits that became ready.
    func handleEvents(_ events: UInt32)
}

/// epoll event bits, named as in `<sys/epoll.h>`.
public enum EpollEvents {
    public static let readable: UInt32 = 0x001
    public static let writable: UInt32 = 0x004
    public static let error: UInt32 = 0x008
    public static let hangUp: UInt32 = 0x010
    public static let readHangUp: UInt32 = 0x2000
}

/// A handle to a scheduled timer, used to cancel it.
public struct TimerID: Hashable, Sendable {
    let value: UInt64
}

/// Reads the monotonic clock in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds, negative durations as 0; for timers and deadlines on the monotonic clock.
    public var wholeNanoseconds: UInt64 {
        UInt64(max(0, components.seconds)) * 1_000_000_000 + UInt64(max(0, components.attoseconds / 1_000_000_000))
    }
}

/// The thread-specific slot that names the loop a thread runs (see ``EventLoop/current``).
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

/// The loops running in this process, weakly held, for probes that watch every loop (``EventLoop/running``).
private struct WeakLoop: @unchecked Sendable {
    // @unchecked: the reference is only read under `runningLoops`' lock.
    weak var loop: EventLoop?
}
private let runningLoops = Mutex<[ObjectIdentifier: WeakLoop]>([:])

/// A single-threaded epoll loop on a thread it owns: file-descriptor readiness, timers, cross-thread tasks
/// (woken through an eventfd) and an end-of-turn flush phase so that each connection writes once per turn.
///
/// All mutable state except `incoming` is touched only on the loop thread; `incoming` is behind a `Mutex`.
/// That confinement is what makes the `@unchecked Sendable` sound: every public method that may be called
/// from another thread (`execute`, `stop`, `inEventLoop`) only touches `incoming`, atomics or immutable fields.
public final class EventLoop: @unchecked Sendable {
    /// A task handed to the loop from another thread.
    public typealias Task = @Sendable () -> Void

    private let epollFD: Int32
    private let wakeFD: Int32
    private let incoming = Mutex<(tasks: [Task], jobs: [UnownedJob])>(([], []))
    private let wakePending = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let threadID = Atomic<UInt>(0)

    private var sources: [UInt64: EventLoopSource] = [:]
    private var nextSourceKey: UInt64 = 1
    private var timers = TimerHeap()
    private var timerActions: [UInt64: () -> Void] = [:]
    private var nextTimerID: UInt64 = 1
    private var flushQueue: [EndOfTurnFlushing] = []
    /// Swift concurrency jobs enqueued on the loop thread, run later in the same turn (no closure per job).
    private var localJobs: [UnownedJob] = []
    /// A scratch buffer that sources may use to read from sockets during one callback.
    public let readBuffer: UnsafeMutableRawBufferPointer
    /// The loop's name, used in thread names and logs.
    public let name: String

    /// Creates a loop; it does nothing until ``run()`` is called or it is started by ``EventLoopGroup``.
    public init(name: String) throws {
        self.name = name
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw NetworkError(.system, "epoll_create1 failed", errno: errno) }
        let wake = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard wake >= 0 else {
            close(epoll)
            throw NetworkError(.system, "eventfd failed", errno: errno)
        }
        epollFD = epoll
        wakeFD = wake
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
        var event = epoll_event()
        event.events = EpollEvents.readable
        event.data.u64 = 0
        epoll_ctl(epollFD, EPOLL_CTL_ADD, wakeFD, &event)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
        readBuffer.deallocate()
    }

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        threadID.load(ordering: .relaxed) == UInt(bitPattern: Int(bitPattern: pthread_self()))
    }

    /// Runs `task` on the loop thread soon; callable from any thread.
    public func execute(_ task: @escaping Task) {
        incoming.withLock { $0.tasks.append(task) }
        wake()
    }

    private func wake() {
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt64 = 1
            _ = write(wakeFD, &one, 8)
        }
    }

    /// Registers a file descriptor; returns the key to use with ``modify(key:fd:events:)`` and ``deregister(key:fd:)``.
    public func register(fd: Int32, events: UInt32, source: EventLoopSource) throws -> UInt64 {
        let key = nextSourceKey
        nextSourceKey += 1
        var event = epoll_event()
        event.events = events
        event.data.u64 = key
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw NetworkError(.system, "epoll_ctl ADD failed", errno: errno)
        }
        sources[key] = source
        return key
    }

    /// Changes the events a registered descriptor is watched for.
    public func modify(key: UInt64, fd: Int32, events: UInt32) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = key
        epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event)
    }

    /// Stops watching a descriptor; events already collected for it this turn are dropped.
    public func deregister(key: UInt64, fd: Int32) {
        epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
        sources[key] = nil
    }

    /// Calls `action` on the loop thread after `nanoseconds`; loop thread only.
    @discardableResult
    public func scheduleTimer(afterNanoseconds nanoseconds: UInt64, _ action: @escaping () -> Void) -> TimerID {
        let id = nextTimerID
        nextTimerID += 1
        timerActions[id] = action
        timers.push(deadline: monotonicNanoseconds() &+ nanoseconds, id: id)
        return TimerID(value: id)
    }

    /// Cancels a timer that has not fired yet; loop thread only.
    public func cancelTimer(_ timer: TimerID) {
        guard timerActions.removeValue(forKey: timer.value) != nil else { return }
        // A cancelled timer's heap entry would otherwise stay until its deadline: with a 60 s idle timeout re-armed
        // for every request that is hundreds of thousands of dead entries on a busy loop. Dropping them whenever
        // they are the majority keeps the heap within twice the live timers, at amortized constant cost.
        if timers.count > 64 && timers.count > 2 * timerActions.count {
            timers.removeAll { timerActions[$0] == nil }
        }
    }

    /// Heap entries for timers, live or cancelled; loop thread only (for tests).
    var timerEntryCount: Int { timers.count }

    /// Asks for `flusher.flushAtEndOfTurn()` to be called once at the end of this loop turn.
    public func scheduleFlush(_ flusher: EndOfTurnFlushing) {
        flushQueue.append(flusher)
    }

    /// Asks the loop to return from ``run()``; callable from any thread.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        execute {}
    }

    /// The loop running on the calling thread, or nil off every loop thread.
    public static var current: EventLoop? {
        guard let pointer = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The loops of this process that are running now.
    public static var running: [EventLoop] {
        runningLoops.withLock { loops in loops.values.compactMap(\.loop) }
    }

    /// Runs the loop on the calling thread until ``stop()``.
    public func run() {
        threadID.store(UInt(bitPattern: Int(bitPattern: pthread_self())), ordering: .relaxed)
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        runningLoops.withLock { $0[ObjectIdentifier(self)] = WeakLoop(loop: self) }
        defer {
            runningLoops.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) }
            pthread_setspecific(currentLoopKey, nil)
        }
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            let timeout = nextTimeoutMilliseconds()
            let count = epoll_wait(epollFD, events, capacity, timeout)
            if count < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in 0..<Int(count) {
                let event = events[index]
                let key = event.data.u64
                if key == 0 {
                    drainWakeups()
                    continue
                }
                sources[key]?.handleEvents(event.events)
            }
            runExpiredTimers()
            runEndOfTurn()
        }
        // Tasks queued before stop() (for example "fail the calls in flight") still run once.
        drainWakeups()
        runEndOfTurn()
    }

    private func nextTimeoutMilliseconds() -> Int32 {
        if !localJobs.isEmpty || !flushQueue.isEmpty { return 0 }
        guard let deadline = timers.peekDeadline() else { return -1 }
        let now = monotonicNanoseconds()
        if deadline <= now { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }

    private func drainWakeups() {
        var value: UInt64 = 0
        _ = read(wakeFD, &value, 8)
        wakePending.store(false, ordering: .releasing)
        let (tasks, jobs) = incoming.withLock { incoming -> ([Task], [UnownedJob]) in
            let taken = incoming
            incoming.tasks.removeAll(keepingCapacity: true)
            incoming.jobs.removeAll(keepingCapacity: true)
            return taken
        }
        for task in tasks { task() }
        if !jobs.isEmpty {
            let executor = asUnownedTaskExecutor()
            for job in jobs { job.runSynchronously(on: executor) }
        }
    }

    private func runExpiredTimers() {
        guard timers.peekDeadline() != nil else { return }
        let now = monotonicNanoseconds()
        while let deadline = timers.peekDeadline(), deadline <= now {
            let id = timers.pop()
            if let action = timerActions.removeValue(forKey: id) { action() }
        }
    }

    private func runEndOfTurn() {
        // Resumed tasks and flushes may schedule more of each other; run until both settle.
        var rounds = 0
        while (!localJobs.isEmpty || !flushQueue.isEmpty) && rounds < 64 {
            rounds += 1
            while !localJobs.isEmpty {
                let jobs = localJobs
                localJobs.removeAll(keepingCapacity: true)
                let executor = asUnownedTaskExecutor()
                for job in jobs { job.runSynchronously(on: executor) }
            }
            let flushers = flushQueue
            flushQueue.removeAll(keepingCapacity: true)
            for flusher in flushers { flusher.flushAtEndOfTurn() }
        }
    }
}

/// A loop is also a task executor: a task started with `Task(executorPreference: loop)` runs its synchronous
/// stretches on the loop thread, and resumes there after each suspension (a database reply, a backend's RPC
/// response). A request then stays on the thread that read it and writes its response from there, instead of
/// crossing to the global pool and back. Work that blocks belongs on a worker pool, as it would anyway.
extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if inEventLoop {
            localJobs.append(job)
        } else {
            incoming.withLock { $0.jobs.append(job) }
            wake()
        }
    }

    /// Runs `task` now when called on the loop thread, else hands it over like ``execute(_:)``.
    public func executeOnLoop(_ task: @escaping Task) {
        if inEventLoop { task() } else { execute(task) }
    }
}

/// Something that gathers output during a loop turn and writes it once at the end.
public protocol EndOfTurnFlushing: AnyObject {
    /// Called once per turn on the loop thread for each call of ``EventLoop/scheduleFlush(_:)``.
    func flushAtEndOfTurn()
}

/// A binary min-heap of timer deadlines.
struct TimerHeap {
    private var items: [(deadline: UInt64, id: UInt64)] = []

    var count: Int { items.count }

    func peekDeadline() -> UInt64? { items.first?.deadline }

    mutating func push(deadline: UInt64, id: UInt64) {
        items.append((deadline, id))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if items[parent].deadline <= items[child].deadline { break }
            items.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> UInt64 {
        let top = items[0].id
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            siftDown(from: 0)
        }
        return top
    }

    /// Removes the entries whose ID `shouldRemove` names and restores the heap order.
    mutating func removeAll(where shouldRemove: (UInt64) -> Bool) {
        items.removeAll { shouldRemove($0.id) }
        guard items.count > 1 else { return }
        for index in stride(from: items.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && items[left].deadline < items[smallest].deadline { smallest = left }
            if right < items.count && items[right].deadline < items[smallest].deadline { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// A fixed set of event loops, each on its own thread, handed out in turn.
public final class EventLoopGroup: Sendable {
    /// The loops, one per thread.
    public let loops: [EventLoop]
    private let nextIndex = Atomic<Int>(0)

    /// Starts `threadCount` loops (default: one per online core).
    public init(threadCount: Int = EventLoopGroup.onlineCoreCount, name: String = "loop") throws {
        var loops: [EventLoop] = []
        for index in 0..<max(1, threadCount) {
            loops.append(try EventLoop(name: "\(name)-\(index)"))
        }
        self.loops = loops
        for loop in loops { startThread(for: loop) }
    }

    /// The number of online CPU cores.
    public static var onlineCoreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// The next loop in round-robin order.
    public func next() -> EventLoop {
        let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Stops every loop; their threads exit after the current turn.
    public func shutdown() {
        for loop in loops { loop.stop() }
    }
}

private final class ThreadStart {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// Starts a detached thread that runs `loop` until it stops.
private func startThread(for loop: EventLoop) {
    let start = ThreadStart { loop.run() }
    var thread = pthread_t()
    let argument = Unmanaged.passRetained(start).toOpaque()
    let result = pthread_create(
        &thread, nil,
        { argument in
            guard let argument else { return nil }
            let start = Unmanaged<ThreadStart>.fromOpaque(argument).takeRetainedValue()
            start.body()
            return nil
        }, argument)
    if result == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<ThreadStart>.fromOpaque(argument).release()
    }
}
