import Encoding
import Foundation
import Synchronization

/// Where log lines go. `main` chooses one; libraries only take a `Logger`.
public protocol LogSink: Sendable {
    func write(_ line: String)
}

/// How important a log line is.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A structured logger: one line per event, `key=value` pairs with dotted keys, for example
/// `ts=… level=info service=verification-service event=registration.verified request.id=…`.
///
/// Never pass tokens, passwords, private keys or whole credentials as metadata.
public struct Logger: Sendable {
    public var minimumLevel: LogLevel
    /// Pairs added to every line, in order (for example `service`).
    public private(set) var metadata: [(String, String)]
    private let sink: any LogSink
    private let clock: @Sendable () -> Date

    public init(
        service: String, minimumLevel: LogLevel = .info, sink: any LogSink = StandardErrorSink(),
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.minimumLevel = minimumLevel
        self.metadata = [("service", service)]
        self.sink = sink
        self.clock = clock
    }

    /// A logger that adds `pairs` to every line.
    public func with(_ pairs: KeyValuePairs<String, String>) -> Logger {
        var copy = self
        copy.metadata.append(contentsOf: pairs.map { ($0.key, $0.value) })
        return copy
    }

    /// A logger that writes nothing, for libraries whose caller gave none.
    public static let disabled = Logger(service: "", minimumLevel: .error, sink: DiscardingSink())

    /// Logs one event with its fields as pairs.
    public func log(_ level: LogLevel, _ event: String, _ fields: (String, String)...) {
        log(level, event, fields: fields)
    }

    public func debug(_ event: String, _ pairs: KeyValuePairs<String, String> = [:]) { log(.debug, event, pairs) }
    public func info(_ event: String, _ pairs: KeyValuePairs<String, String> = [:]) { log(.info, event, pairs) }
    public func warning(_ event: String, _ pairs: KeyValuePairs<String, String> = [:]) { log(.warning, event, pairs) }
    public func error(_ event: String, _ pairs: KeyValuePairs<String, String> = [:]) { log(.error, event, pairs) }

    public func log(_ level: LogLevel, _ event: String, _ pairs: KeyValuePairs<String, String>) {
        log(level, event, fields: pairs.map { ($0.key, $0.value) })
    }

    /// Logs one event with pairs built at run time (for example when some are optional).
    public func log(_ level: LogLevel, _ event: String, fields pairs: [(String, String)]) {
        guard level >= minimumLevel else { return }
        var line = "ts=" + formatTimestamp(clock()) + " level=" + level.name
        for (key, value) in metadata { line += " " + key + "=" + Self.quote(value) }
        line += " event=" + Self.quote(event)
        for (key, value) in pairs { line += " " + key + "=" + Self.quote(value) }
        sink.write(line)
    }

    /// Quotes a value when it has spaces, quotes, `=` or control characters; escapes so one event stays one line.
    static func quote(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.utf8.contains {
            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\\")
                || $0 < 0x20 || $0 == 0x7F
        }
        guard needsQuotes else { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    quoted += String(format: "\\u%04x", scalar.value)
                } else {
                    quoted.unicodeScalars.append(scalar)
                }
            }
        }
        return quoted + "\""
    }
}

/// RFC 3339 UTC with milliseconds.
func formatTimestamp(_ date: Date) -> String {
    let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    var seconds = time_t(milliseconds / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var text: [UInt8] = []
    text.reserveCapacity(24)
    for (value, width, separator) in [
        (parts.tm_year + 1900, 4, "-"), (parts.tm_mon + 1, 2, "-"), (parts.tm_mday, 2, "T"), (parts.tm_hour, 2, ":"),
        (parts.tm_min, 2, ":"), (parts.tm_sec, 2, "."), (Int32(milliseconds % 1000), 3, "Z"),
    ] as [(Int32, Int, Unicode.Scalar)] {
        DecimalText.append(Int64(value), width: width, to: &text)
        text.append(UInt8(ascii: separator))
    }
    return String(decoding: text, as: UTF8.self)
}

/// Writes each line to a file descriptor with one `write` call, so lines from several threads never interleave.
public struct FileDescriptorSink: LogSink {
    public let descriptor: Int32
    public init(_ descriptor: Int32) { self.descriptor = descriptor }

    public func write(_ line: String) {
        var bytes = Array((line + "\n").utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}

/// Standard error, where services log.
public struct StandardErrorSink: LogSink {
    public init() {}
    public func write(_ line: String) { FileDescriptorSink(2).write(line) }
}

/// Drops every line.
public struct DiscardingSink: LogSink {
    public init() {}
    public func write(_ line: String) {}
}

/// Keeps lines in memory; for tests.
public final class MemoryLogSink: LogSink {
    private let storage = Mutex<[String]>([])
    public init() {}
    public func write(_ line: String) { storage.withLock { $0.append(line) } }
    /// Every line written so far.
    public var lines: [String] { storage.withLock { $0 } }
}
