import Encoding
import Foundation

/// Rows for `COPY … FROM STDIN` in Postgres's text format: columns separated by tabs, rows ended by newlines,
/// `\N` for NULL, and backslash escapes for the characters that would otherwise end a column or a row.
///
/// Values go in column by column; `endRow()` closes each row. The caller keeps the column order of its `COPY`
/// statement.
public struct PostgresCopyRows: Sendable {
    /// The encoded rows, ready for `PQputCopyData`.
    public private(set) var bytes: [UInt8] = []
    /// How many rows were ended.
    public private(set) var rowCount = 0
    private var columnsInRow = 0

    public init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if columnsInRow > 0 { bytes.append(0x09) }
        columnsInRow += 1
    }

    /// Appends a text column, escaping backslash, tab, newline and carriage return.
    public mutating func append(_ text: String) {
        separate()
        for byte in text.utf8 {
            switch byte {
            case 0x5C:
                bytes.append(0x5C)
                bytes.append(0x5C)
            case 0x09:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "t"))
            case 0x0A:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "n"))
            case 0x0D:
                bytes.append(0x5C)
                bytes.append(UInt8(ascii: "r"))
            default: bytes.append(byte)
            }
        }
    }

    /// Appends a text column, or NULL for nil.
    public mutating func append(_ text: String?) {
        guard let text else { return appendNull() }
        append(text)
    }

    /// Appends a `uuid` column.
    public mutating func append(_ uuid: UUID) {
        separate()
        bytes.append(contentsOf: uuid.lowercaseText.utf8)
    }

    /// Appends an integer column.
    public mutating func append(_ value: Int) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends a `timestamptz` column (UTC, microseconds).
    public mutating func append(_ date: Date) {
        separate()
        bytes.append(contentsOf: PostgresTimestamp.format(date).utf8)
    }

    /// Appends a `timestamptz` column, or NULL for nil.
    public mutating func append(_ date: Date?) {
        guard let date else { return appendNull() }
        append(date)
    }

    /// Appends a `bytea` column in hex form (`\x…`, its backslash escaped for the text format).
    public mutating func append(_ value: PostgresBytes) {
        separate()
        bytes.append(0x5C)
        bytes.append(0x5C)
        bytes.append(UInt8(ascii: "x"))
        let digits = Array("0123456789abcdef".utf8)
        for byte in value.bytes {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
    }

    /// Appends a `boolean` column.
    public mutating func append(_ value: Bool) {
        separate()
        bytes.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
    }

    /// Appends SQL NULL.
    public mutating func appendNull() {
        separate()
        bytes.append(0x5C)
        bytes.append(UInt8(ascii: "N"))
    }

    /// Ends the current row.
    public mutating func endRow() {
        bytes.append(0x0A)
        columnsInRow = 0
        rowCount += 1
    }
}
