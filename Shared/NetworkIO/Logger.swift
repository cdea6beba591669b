/// A minimal structured logger: one line per event, `key=value` pairs with dotted keys. Libraries take one as a
/// parameter; `main` chooses where lines go by giving the sink.
public struct Logger: Sendable {
    /// Severity of an event.
    public enum Level: Int, Sendable, Comparable {
        case debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    private let sink: (@Sendable (String) -> Void)?
    private let minimumLevel: Level
    private let baseFields: [(String, String)]

    /// A logger writing lines at or above `minimumLevel` to `sink`.
    public init(
        minimumLevel: Level = .info, baseFields: [(String, String)] = [], sink: @escaping @Sendable (String) -> Void
    ) {
        self.sink = sink
        self.minimumLevel = minimumLevel
        self.baseFields = baseFields
    }

    /// A logger that drops everything.
    public static let disabled = Logger()

    private init() {
        sink = nil
        minimumLevel = .error
        baseFields = []
    }

    /// A logger that adds `fields` to every line.
    public func with(_ fields: (String, String)...) -> Logger {
        guard let sink else { return self }
        return Logger(minimumLevel: minimumLevel, baseFields: baseFields + fields, sink: sink)
    }

    /// Logs one event.
    public func log(_ level: Level, _ event: String, _ fields: (String, String)...) {
        guard let sink, level >= minimumLevel else { return }
        var line = "level=\(level.name) event=\(event)"
        for (key, value) in baseFields + fields {
            line += " \(key)=\(Self.quoteIfNeeded(value))"
        }
        sink(line)
    }

    private static func quoteIfNeeded(_ value: String) -> String {
        guard value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) else { return value }
        return "\"" + value.replacingQuotes() + "\""
    }
}

extension String {
    fileprivate func replacingQuotes() -> String {
        var result = ""
        for character in self { result += character == "\"" ? "\\\"" : String(character) }
        return result
    }
}
