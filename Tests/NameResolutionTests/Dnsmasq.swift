import Foundation
import XCTest

/// A real DNS server for the tests: Debian's dnsmasq on a loopback port, answering only from a hosts file the
/// test rewrites (no upstream, no cache; dnsmasq watches its hosts directory with inotify), so a test controls
/// what a name resolves to at each moment.
final class Dnsmasq {
    private(set) var port: UInt16 = 0
    private let directory: URL
    private var process = Process()

    /// Starts dnsmasq with `records` (name → addresses) and waits until it answers.
    init(records: [String: [String]]) throws {
        let executable = ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let executable else {
            throw NSError(
                domain: "dnsmasq", code: 1,
                userInfo: [
                    NSLocalizedDescriptionKey: "dnsmasq is not installed (./deploy/local/test installs dnsmasq-base)"
                ])
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("dnsmasq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("hosts.d"), withIntermediateDirectories: true)
        var lastError: Error?
        for _ in 0..<5 {
            let candidate = UInt16.random(in: 20_000...40_000)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "--keep-in-foreground", "--no-resolv", "--no-hosts", "--local=/test/", "--no-poll", "--cache-size=0",
                "--local-ttl=0",
                "--listen-address=127.0.0.1", "--bind-interfaces", "--port=\(candidate)", "--user=\(NSUserName())",
                "--pid-file=", "--hostsdir=\(directory.appendingPathComponent("hosts.d").path)",
                "--log-facility=\(directory.appendingPathComponent("log").path)", "--log-queries",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            self.port = candidate
            self.process = process
            try Self.write(records, to: directory)
            do {
                try process.run()
                // dnsmasq exits at once when the port is taken; it answers once it is listening.
                for _ in 0..<100 where process.isRunning {
                    if Self.answers(port: candidate) { return }
                    usleep(20_000)
                }
                lastError = NSError(domain: "dnsmasq", code: Int(process.isRunning ? 0 : process.terminationStatus))
                if process.isRunning { process.terminate() }
            } catch {
                lastError = error
            }
        }
        throw lastError ?? NSError(domain: "dnsmasq", code: -1)
    }

    /// Replaces the records; dnsmasq sees the new file at once and serves it after a moment.
    func set(_ records: [String: [String]]) throws {
        try Self.write(records, to: directory)
        usleep(100_000)
    }

    func stop() {
        // waitUntilExit spins a run loop, which a test's concurrent thread does not have: poll instead.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            for _ in 0..<200 where process.isRunning { usleep(10_000) }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    private static func write(_ records: [String: [String]], to directory: URL) throws {
        let lines = records.sorted { $0.key < $1.key }.flatMap { name, addresses in addresses.map { "\($0) \(name)" } }
        let file = directory.appendingPathComponent("hosts.d/records")
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
    }

    /// Whether something answers a DNS query on the port (any datagram back counts).
    private static func answers(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let query: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5] + Array("probe".utf8) + [0, 0, 1, 0, 1]
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, query, query.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard sent == query.count else { return false }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 100) > 0
    }
}
