import Foundation
import PostgresTestSupport
import Synchronization

/// One of the stack's executables, started as a real process with its output in a log file.
///
/// Started with `posix_spawn` directly rather than Foundation's `Process`: that one lists `/proc/self/fd` to close
/// every descriptor in the child, and has crashed (a bad copy inside `Process.run()`) while this test process's
/// other threads opened and closed descriptors. Here the child closes everything above stderr itself
/// (`posix_spawn_file_actions_addclosefrom_np`), and its status is collected with `waitpid`.
final class ManagedProcess: @unchecked Sendable {
    // @unchecked: the state is only changed under `lock`.
    let executable: String
    let environment: [String: String]
    let logURL: URL
    private let lock = NSLock()
    private var pid: pid_t = 0
    /// The wait status once the process was reaped.
    private var exitStatus: Int32?

    init(executable: String, environment: [String: String], logDirectory: URL) {
        self.executable = executable
        self.environment = environment
        self.logURL = logDirectory.appendingPathComponent("\(executable)-\(UUID().uuidString.prefix(8)).log")
    }

    func start() throws {
        let path = builtExecutable(executable).path
        let log = open(logURL.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard log >= 0 else {
            throw StackError(message: "cannot open \(logURL.path): \(String(cString: strerror(errno)))")
        }
        defer { close(log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, log, 1)
        posix_spawn_file_actions_adddup2(&actions, log, 2)
        guard let closeFrom = Self.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw StackError(message: "posix_spawn_file_actions_addclosefrom_np is unavailable (glibc 2.34 or later)")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A process group of its own, as Foundation's Process gives it: a terminal's Ctrl-C reaches the test only.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        let arguments = [strdup(path)] + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for argument in arguments { free(argument) }
            for variable in variables { free(variable) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, path, &actions, &attributes, arguments, variables)
        guard result == 0 else {
            throw StackError(message: "cannot start \(path): \(String(cString: strerror(result)))")
        }
        lock.withLock {
            pid = child
            exitStatus = nil
        }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, which Swift does not import (it is behind _GNU_SOURCE).
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// Whether the process is still running; reaps it when it has exited.
    var isRunning: Bool {
        lock.withLock {
            guard pid > 0, exitStatus == nil else { return false }
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                exitStatus = status
                return false
            }
            return reaped == 0
        }
    }

    /// SIGKILL, as a crash would.
    func kill() {
        guard isRunning else { return }
        _ = Glibc.kill(lock.withLock { pid }, SIGKILL)
        _ = waitUntil(timeout: 10) { !self.isRunning }
    }

    /// SIGTERM and wait for the exit status (SIGKILL after 15 seconds): the exit code, 128 + the signal for a
    /// process a signal ended, or -1 when it never started or could not be reaped.
    @discardableResult
    func terminate() -> Int32 {
        guard lock.withLock({ pid }) > 0 else { return -1 }
        if isRunning { _ = Glibc.kill(lock.withLock { pid }, SIGTERM) }
        if !waitUntil(timeout: 15, { !self.isRunning }) {
            _ = Glibc.kill(lock.withLock { pid }, SIGKILL)
            _ = waitUntil(timeout: 10) { !self.isRunning }
        }
        guard let status = lock.withLock({ exitStatus }) else { return -1 }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
}

/// Ports already handed out by this test process. The servers listen with SO_REUSEPORT, so two of them given the
/// same port would both bind it and share its connections: each port is handed out once.
private let handedOut = Mutex<Set<Int>>([])

/// A TCP port nobody listens on right now, never the same one twice.
func freePort() -> Int {
    while true {
        let port = ephemeralPort()
        if handedOut.withLock({ $0.insert(port).inserted }) { return port }
    }
}

private func ephemeralPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            _ = bind(fd, generic, length)
            _ = getsockname(fd, generic, &length)
        }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
func isListening(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// Polls until `condition` holds or `timeout` seconds pass.
func waitUntil(timeout: Double = 20, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
