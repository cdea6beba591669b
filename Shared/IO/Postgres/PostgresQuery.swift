/// A SQL statement with its parameters bound, never spliced into the text.
///
/// Written as a string literal, interpolated values become `$1`, `$2`, … binds:
/// `"SELECT id FROM accounts WHERE id = \(accountID)"`. The only way to put raw text into the SQL is
/// `\(unsafeSQL: …)`, for identifiers the program itself chose.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation {
    public private(set) var sql: String
    public private(set) var binds: [PostgresBind]

    public init(stringLiteral value: String) {
        self.sql = value
        self.binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.binds = stringInterpolation.binds
    }

    /// A statement with explicit binds, for SQL built elsewhere (migration files).
    public init(unsafeSQL sql: String, binds: [PostgresBind] = []) {
        self.sql = sql
        self.binds = binds
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresBind] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// Binds `value` as the next parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresBind)
            sql += "$\(binds.count)"
        }

        /// Binds `value` (NULL when nil) as the next parameter.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresBind ?? .null)
            sql += "$\(binds.count)"
        }

        /// Inserts raw SQL text. Only for text the program controls, never for input.
        public mutating func appendInterpolation(unsafeSQL text: String) { sql += text }

        /// Inserts another query (a fragment such as a CTE body) with its binds, renumbered to follow this one's.
        /// A fragment's text holds `$` only in its own placeholders.
        public mutating func appendInterpolation(fragment: PostgresQuery) {
            let offset = binds.count
            binds.append(contentsOf: fragment.binds)
            guard offset > 0, fragment.sql.utf8.contains(UInt8(ascii: "$")) else {
                sql += fragment.sql
                return
            }
            // On the sign-in path: scanned as bytes, each `$n` rewritten as `$(n + offset)`.
            var output: [UInt8] = []
            output.reserveCapacity(fragment.sql.utf8.count + 16)
            var number = 0
            var digits = 0
            var inPlaceholder = false
            func flush() {
                if inPlaceholder, digits > 0 { output.append(contentsOf: "\(number + offset)".utf8) }
                inPlaceholder = false
                number = 0
                digits = 0
            }
            for byte in fragment.sql.utf8 {
                if inPlaceholder, (0x30...0x39).contains(byte), digits < 6 {
                    number = number * 10 + Int(byte - 0x30)
                    digits += 1
                    continue
                }
                flush()
                output.append(byte)
                if byte == UInt8(ascii: "$") { inPlaceholder = true }
            }
            flush()
            sql += String(decoding: output, as: UTF8.self)
        }
    }
}
