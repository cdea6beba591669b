import Foundation
import Synchronization
import PostgresTestSupport

/// One of the stack's executables, started as a real process with its output in a log file.
final class ManagedProcess: @unchecked Sendable {
    // @unchecked: `process` is only replaced by start()/stop(), which the test's single task calls in turn.
    let executable: String
    let environment: [String: String]
    let logURL: URL
    private var process: Process?

    init(executable: String, environment: [String: String], logDirectory: URL) {
        self.executable = executable
        self.environment = environment
        self.logURL = logDirectory.appendingPathComponent("\(executable)-\(UUID().uuidString.prefix(8)).log")
    }

    func start() throws {
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = builtExecutable(executable)
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        try process.run()
        self.process = process
    }

    /// SIGKILL, as a crash would.
    func kill() {
        guard let process, process.isRunning else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        _ = waitUntil(timeout: 10) { !process.isRunning }
    }

    /// SIGTERM and wait for the exit status (SIGKILL after 15 seconds). Polls instead of `waitUntilExit()`, which
    /// needs a run loop that a blocked main thread cannot turn.
    @discardableResult
    func terminate() -> Int32 {
        guard let process else { return -1 }
        if process.isRunning { process.terminate() }
        if !waitUntil(timeout: 15, { !process.isRunning }) {
            Foundation.kill(process.processIdentifier, SIGKILL)
            _ = waitUntil(timeout: 10) { !process.isRunning }
        }
        return process.isRunning ? -1 : process.terminationStatus
    }

    var isRunning: Bool { process?.isRunning ?? false }

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
