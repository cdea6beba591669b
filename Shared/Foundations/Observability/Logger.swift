import Encoding
import Foundation
import Synchronization

/// Where log lines go. `main` chooses one; libraries only take a `Logger`.
public protocol LogSink: Sendable {
    func write(_ line: String)
    /// Writes one line given as UTF-8 bytes, without its newline; by default decoded and passed to `write(_:)`.
    func writeLine(_ bytes: [UInt8])
}

extension LogSink {
    public func writeLine(_ bytes: [UInt8]) { write(String(decoding: bytes, as: UTF8.self)) }
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
/// `ts=… level=info service=verification-service trace.id=… event=registration.verified request.id=…` (`trace.id`
/// while a traced request is served).
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
        // Built as bytes: a line is made for every audit event, so on the request path.
        var line: [UInt8] = []
        line.reserveCapacity(160)
        line.append(contentsOf: "ts=".utf8)
        let milliseconds = Int64((clock().timeIntervalSince1970 * 1000).rounded(.down))
        TimestampText.append(unixMicroseconds: milliseconds * 1000, fractionDigits: 3, to: &line)
        line.append(contentsOf: " level=".utf8)
        line.append(contentsOf: level.name.utf8)
        for (key, value) in metadata { Self.appendPair(key, value, to: &line) }
        // A line written while a request is served names its trace, so the trace and its lines find each other.
        if let active = ActiveSpan.current { Self.appendPair("trace.id", active.context.traceID.hex, to: &line) }
        Self.appendPair("event", event, to: &line)
        for (key, value) in pairs { Self.appendPair(key, value, to: &line) }
        sink.writeLine(line)
    }

    private static func appendPair(_ key: String, _ value: String, to line: inout [UInt8]) {
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: key.utf8)
        line.append(UInt8(ascii: "="))
        appendQuoted(value, to: &line)
    }

    /// Quotes a value when it has spaces, quotes, `=` or control characters; escapes so one event stays one line.
    private static func appendQuoted(_ value: String, to line: inout [UInt8]) {
        let needsQuotes =
            value.isEmpty
            || value.utf8.contains {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=")
                    || $0 == UInt8(ascii: "\\")
                    || $0 < 0x20 || $0 == 0x7F
            }
        guard needsQuotes else {
            line.append(contentsOf: value.utf8)
            return
        }
        line.append(UInt8(ascii: "\""))
        // Bytes of multi-byte UTF-8 sequences are all >= 0x80 and pass through unchanged.
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): line.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): line.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): line.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"): line.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"): line.append(contentsOf: "\\t".utf8)
            case 0..<0x20, 0x7F:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                line.append(contentsOf: "\\u00".utf8)
                line.append(hex[Int(byte >> 4)])
                line.append(hex[Int(byte & 0x0F)])
            default:
                line.append(byte)
            }
        }
        line.append(UInt8(ascii: "\""))
    }
}

/// Writes each line to a file descriptor with one `write` call, so lines from several threads never interleave.
public struct FileDescriptorSink: LogSink {
    public let descriptor: Int32
    public init(_ descriptor: Int32) { self.descriptor = descriptor }

    public func write(_ line: String) { writeLine(Array(line.utf8)) }

    public func writeLine(_ line: [UInt8]) {
        var bytes = line
        bytes.append(UInt8(ascii: "\n"))
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
    public func writeLine(_ line: [UInt8]) { FileDescriptorSink(2).writeLine(line) }
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
