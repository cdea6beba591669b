#if canImport(Glibc)
    import Glibc
#endif

/// What Linux reports of this process in `/proc/self/stat`: CPU time, resident memory and start time.
public struct ProcessStatistics: Sendable, Equatable {
    /// User plus system CPU time, in seconds.
    public var cpuSeconds: Double
    /// Resident set size, in bytes.
    public var residentBytes: Double
    /// When the process started, in seconds after the machine booted.
    public var startSecondsAfterBoot: Double

    /// Reads `/proc/self/stat` fields 14 and 15 (utime, stime), 22 (starttime) and 24 (rss). The second field is
    /// the command name in parentheses, which may itself hold spaces and parentheses: fields are counted from the
    /// last `)`. Nil for text that is not such a line.
    public static func parse(stat text: String, ticksPerSecond: Double, pageSize: Double) -> ProcessStatistics? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // After ")": field 3 (state) onwards.
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        func field(_ number: Int) -> Double? {
            let index = number - 3
            guard index >= 0, index < fields.count else { return nil }
            return Double(fields[index])
        }
        guard ticksPerSecond > 0, let user = field(14), let system = field(15), let start = field(22),
            let pages = field(24)
        else { return nil }
        return ProcessStatistics(
            cpuSeconds: (user + system) / ticksPerSecond, residentBytes: pages * pageSize,
            startSecondsAfterBoot: start / ticksPerSecond)
    }

    /// This process's statistics now, or nil where `/proc` cannot be read.
    public static func current() -> ProcessStatistics? {
        guard let text = readSmallFile("/proc/self/stat") else { return nil }
        return parse(
            stat: text, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))),
            pageSize: Double(sysconf(Int32(_SC_PAGESIZE))))
    }

    /// The machine's boot time in seconds since 1970 (`btime` of `/proc/stat`), to turn a start time after boot
    /// into a Unix time.
    public static func bootTime() -> Double? {
        guard let text = readSmallFile("/proc/stat", limit: 1 << 20) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingPrefix(" "))
        }
        return nil
    }

    /// The number of open file descriptors (entries of `/proc/self/fd`).
    public static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        // Only the name's first byte is read, in place. A directory entry is as long as its name (`d_reclen`), not
        // `MemoryLayout<dirent>.size`: loading `entry.pointee` whole reads past the last entry of the buffer, which
        // can end at an unmapped page (it crashed a test process that way, in memcpy).
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(directory) {
            let first = UnsafeRawPointer(entry).load(fromByteOffset: nameOffset, as: UInt8.self)
            if first != UInt8(ascii: ".") { count += 1 }
        }
        // The directory stream's own descriptor is listed too.
        return max(0, count - 1)
    }

    /// The contents of a small file (read until EOF, at most `limit` bytes), or nil.
    static func readSmallFile(_ path: String, limit: Int = 64 * 1024) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes.prefix(limit), as: UTF8.self)
    }
}
