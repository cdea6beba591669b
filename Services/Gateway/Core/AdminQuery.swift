/// An admin call's query string: `name=value` pairs, percent-decoded, each name known to the route.
struct AdminQuery: Sendable {
    static let byteLimit = 4096
    var pairs: [(String, String)] = []

    /// No query.
    init() {}

    init(_ query: String?) throws {
        guard let query, !query.isEmpty else { return }
        guard query.utf8.count <= Self.byteLimit else { throw APIProblem.invalidRequest("The query is too long.") }
        for part in query.split(separator: "&") {
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard halves.count == 2, let name = percentDecoded(halves[0]),
                let value = percentDecoded(Substring(String(halves[1].map { $0 == "+" ? " " : $0 })))
            else { throw APIProblem.invalidRequest("The query is malformed.") }
            pairs.append((name, value))
        }
    }

    func allowOnly(_ names: Set<String>) throws {
        if let unknown = pairs.first(where: { !names.contains($0.0) }) {
            throw APIProblem.invalidRequest("Unknown query parameter \(unknown.0.prefix(32)).")
        }
    }

    /// The one value of `name`, at most `limit` bytes.
    func text(_ name: String, limit: Int) throws -> String? {
        let values = pairs.filter { $0.0 == name }.map(\.1)
        guard values.count <= 1 else { throw APIProblem.invalidRequest("\(name) is given twice.") }
        guard let value = values.first else { return nil }
        guard !value.isEmpty, value.utf8.count <= limit else {
            throw APIProblem.invalidRequest("\(name) must be 1 to \(limit) bytes.")
        }
        return value
    }

    func all(_ name: String, limit: Int, count: Int) throws -> [String] {
        let values = pairs.filter { $0.0 == name }.map(\.1)
        guard values.count <= count, values.allSatisfy({ !$0.isEmpty && $0.utf8.count <= limit }) else {
            throw APIProblem.invalidRequest("\(name): at most \(count) values of 1 to \(limit) bytes.")
        }
        return values
    }

    /// A `true`/`false` filter as the services take it: 0 absent, 1 true, 2 false.
    func filter(_ name: String) throws -> Int32 {
        switch try text(name, limit: 5) {
        case nil: return 0
        case "true": return 1
        case "false": return 2
        default: throw APIProblem.invalidRequest("\(name) is true or false.")
        }
    }

    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try text(name, limit: 20) else { return nil }
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(text), range.contains(value)
        else {
            throw APIProblem.invalidRequest(
                "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }
}
