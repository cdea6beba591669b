import CNetworkIO

#if canImport(Glibc)
    import Glibc
#endif

/// Waits for POSIX signals: a handler writes the signal number into an eventfd that ``wait()`` reads.
public final class SignalWaiter: Sendable {
    // Written once, before the handlers are installed; afterwards only read (by the handler and `wait`).
    nonisolated(unsafe) static var wakeFD: Int32 = -1

    /// Installs handlers for `signals` (e.g. `[SIGTERM, SIGINT]`) and unblocks them on the calling thread: a process
    /// spawned from a thread that blocks signals (a dispatch or task-pool thread) inherits that mask, and would
    /// otherwise never see the signal it waits for.
    public init(signals: [Int32]) throws {
        if Self.wakeFD < 0 {
            Self.wakeFD = eventfd(0, Int32(EFD_CLOEXEC))
            guard Self.wakeFD >= 0 else { throw NetworkError(.system, "eventfd failed", errno: errno) }
        }
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var value = UInt64(number)
                _ = write(SignalWaiter.wakeFD, &value, 8)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = Int32(SA_RESTART)
            sigaction(signal, &action, nil)
        }
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        for signal in signals { sigaddset(&unblocked, signal) }
        pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    }

    /// Blocks until a signal arrives; returns its number (or the sum if several arrived at once).
    public func wait() -> Int32 {
        var value: UInt64 = 0
        while read(Self.wakeFD, &value, 8) != 8 {}
        return Int32(truncatingIfNeeded: value)
    }
}
