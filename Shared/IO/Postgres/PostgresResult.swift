import CLibPQ
import Foundation

/// Reading a libpq result, shared by the blocking connection and the pipelined one.
enum PostgresResult {
    /// The rows of a successful result, or the error it reports. `connection` tells a broken connection apart
    /// from a statement the server rejected.
    static func outcome(_ result: OpaquePointer, connection: OpaquePointer) -> Result<PostgresRows, PostgresError> {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return .success(rows(of: result))
        default:
            let sqlState = field(result, "C")
            let message = field(result, "M") ?? errorMessage(of: connection)
            if PQstatus(connection) != CONNECTION_OK {
                return .failure(PostgresError(.connectionLost, message, sqlState: sqlState))
            }
            return .failure(PostgresError(.server, message, sqlState: sqlState, constraint: field(result, "n")))
        }
    }

    static func rows(of result: OpaquePointer) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        let columns = (0..<columnCount).map { String(cString: PQfname(result, Int32($0))) }
        var cells: [[String?]] = []
        cells.reserveCapacity(rowCount)
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                if PQgetisnull(result, Int32(row), Int32(column)) == 1 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, Int32(row), Int32(column))))
                }
            }
            cells.append(values)
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresRows(columns: columns, cells: cells, affectedRowCount: affected)
    }

    static func field(_ result: OpaquePointer, _ code: Character) -> String? {
        guard let ascii = code.asciiValue, let value = PQresultErrorField(result, Int32(ascii)) else { return nil }
        return String(cString: value)
    }

    static func errorMessage(of connection: OpaquePointer) -> String {
        guard let message = PQerrorMessage(connection) else { return "unknown error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Calls `body` with a statement's binds laid out as libpq's parameter arrays (text values NUL-terminated).
    static func withParameters<R>(
        _ binds: [PostgresBind],
        _ body: (
            _ count: Int32, _ types: [Oid], _ values: [UnsafePointer<CChar>?], _ lengths: [Int32], _ formats: [Int32]
        ) throws -> R
    ) rethrows -> R {
        let types = binds.map { Oid($0.typeOID) }
        let lengths = binds.map { Int32($0.bytes?.count ?? 0) }
        let formats = binds.map { Int32($0.isBinary ? 1 : 0) }
        let buffers: [UnsafeMutablePointer<CChar>?] = binds.map { bind in
            guard let bytes = bind.bytes else { return nil }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { memcpy(buffer, base, bytes.count) }
            }
            buffer[bytes.count] = 0
            return buffer
        }
        defer { for buffer in buffers { buffer?.deallocate() } }
        return try body(Int32(binds.count), types, buffers.map { UnsafePointer($0) }, lengths, formats)
    }
}
