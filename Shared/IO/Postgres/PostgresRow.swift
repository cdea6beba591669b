/// The rows a statement returned, copied out of libpq's result so they outlive it.
public struct PostgresRows: Sendable, Sequence {
    /// Column names in order.
    public let columns: [String]
    let cells: [[String?]]
    /// How many rows an INSERT, UPDATE or DELETE touched (`PQcmdTuples`), or 0.
    public let affectedRowCount: Int

    init(columns: [String], cells: [[String?]], affectedRowCount: Int) {
        self.columns = columns
        self.cells = cells
        self.affectedRowCount = affectedRowCount
    }

    public var count: Int { cells.count }
    public var isEmpty: Bool { cells.isEmpty }
    public var first: PostgresRow? { cells.isEmpty ? nil : PostgresRow(columns: columns, cells: cells[0]) }

    public func makeIterator() -> some IteratorProtocol<PostgresRow> {
        cells.lazy.map { PostgresRow(columns: columns, cells: $0) }.makeIterator()
    }
}

/// One row; columns are read by name with a type.
public struct PostgresRow: Sendable {
    let columns: [String]
    let cells: [String?]

    /// Decodes a non-null column. Throws `.decoding` when the column is missing, NULL or of the wrong shape.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type, _ column: String) throws -> Value {
        guard let value = try decode(Value?.self, column) else {
            throw PostgresError(.decoding, "column \(column) is NULL")
        }
        return value
    }

    /// Decodes a nullable column.
    public func decode<Value: PostgresDecodable>(_ type: Value?.Type, _ column: String) throws -> Value? {
        guard let index = columns.firstIndex(of: column) else {
            throw PostgresError(.decoding, "no column named \(column)")
        }
        guard let text = cells[index] else { return nil }
        return try Value(postgresText: text)
    }
}
