import Encoding
import Synchronization

/// A configuration value that cannot be used; the message names the variable.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable, Sendable {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "\(variable): \(problem)" }
}

/// Reads typed values from environment variables, each with a default, failing with the variable's name.
public struct EnvironmentReader: Sendable {
    private let environment: [String: String]
    private let log: ReadLog?

    /// A reader of `environment`; with a `log`, every variable it is asked for is written there (which variables a
    /// process's configuration reads, for `docs/configuration.md`'s **read by** column).
    public init(_ environment: [String: String], log: ReadLog? = nil) {
        self.environment = environment
        self.log = log
    }

    /// The names of the variables a reader was asked for, set or not.
    public final class ReadLog: Sendable {
        private let names = Mutex<Set<String>>([])

        public init() {}

        public var read: Set<String> { names.withLock { $0 } }

        func record(_ name: String) { _ = names.withLock { $0.insert(name) } }
    }

    /// The raw value, or nil when unset or empty.
    public func raw(_ name: String) -> String? {
        log?.record(name)
        guard let value = environment[name]?.trimmingWhitespace(), !value.isEmpty else { return nil }
        return value
    }

    public func string(_ name: String, default defaultValue: String) -> String { raw(name) ?? defaultValue }

    /// A comma-separated list; empty items are dropped.
    public func list(_ name: String, default defaultValue: [String] = []) -> [String] {
        guard let value = raw(name) else { return defaultValue }
        return value.split(separator: ",").map { String($0).trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    public func integer(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws -> Int {
        guard let value = raw(name) else { return defaultValue }
        guard let number = Int(value), range.contains(number) else {
            throw ConfigurationError(
                variable: name,
                problem: "expected a whole number from \(range.lowerBound) to \(range.upperBound), got \(value)")
        }
        return number
    }

    /// A duration such as `500ms`, `90s`, `5m`, `12h` or `30d`, in seconds; `0` too when `allowingZero`.
    public func duration(_ name: String, default defaultValue: String, allowingZero: Bool = false) throws -> Double {
        let value = raw(name) ?? defaultValue
        if allowingZero, value == "0" { return 0 }
        guard let seconds = Self.parseDuration(value), seconds > 0 || (allowingZero && seconds == 0) else {
            let expected =
                allowingZero ? "a duration like 0, 90s, 5m, 12h or 30d" : "a positive duration like 90s, 5m, 12h or 30d"
            throw ConfigurationError(variable: name, problem: "expected \(expected), got \(value)")
        }
        return seconds
    }

    /// A rate such as `10/m` or `100/s` (`0` turns it off, giving nil).
    public func rate(_ name: String, default defaultValue: String) throws -> Rate? {
        let value = raw(name) ?? defaultValue
        if value == "0" { return nil }
        let parts = value.split(separator: "/")
        let units: [Substring: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        guard parts.count == 2, let count = Double(parts[0]), count > 0, count.isFinite, let period = units[parts[1]]
        else {
            throw ConfigurationError(
                variable: name, problem: "expected a rate like 10/m or 100/s, or 0 for off, got \(value)")
        }
        return Rate(count: count, perSeconds: period)
    }

    public static func parseDuration(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            // "5ms" also ends in "s"; the longer suffix is tried first, and a number must remain.
            guard let value = Double(number), value.isFinite else { continue }
            return value * factor
        }
        return nil
    }
}

/// Events allowed per period.
public struct Rate: Sendable, Hashable {
    public let count: Double
    public let perSeconds: Double

    public init(count: Double, perSeconds: Double) {
        self.count = count
        self.perSeconds = perSeconds
    }

    public var perSecond: Double { count / perSeconds }
    /// The burst allowed: a tenth of the per-period rate, at least 10.
    public var burst: Double { max(10, count / 10) }
}
