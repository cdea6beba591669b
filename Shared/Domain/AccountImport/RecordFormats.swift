import Encoding
import JSON

/// The two input formats.
public enum ImportFormat: String, Sendable, Hashable, CaseIterable {
    /// One JSON object per line, its members named as `ImportField`.
    case jsonLines = "jsonl"
    /// Comma-separated values with a header row naming the columns as `ImportField`.
    case csv

    /// The format a file name's extension says, or nil.
    public init?(fileName: String) {
        let lowered = fileName.lowercased()
        if lowered.hasSuffix(".jsonl") || lowered.hasSuffix(".ndjson") {
            self = .jsonLines
        } else if lowered.hasSuffix(".csv") {
            self = .csv
        } else {
            return nil
        }
    }
}

/// What one line held.
public enum ParsedLine: Sendable, Hashable {
    /// Nothing but spaces or tabs: ignored, and counted apart.
    case blank
    case record(RawImportRecord)
    case rejected(ImportReject)
}

/// Reads the bytes of a line as text: nil for invalid UTF-8. A UTF-8 byte order mark is dropped from line 1.
func lineText(_ bytes: [UInt8], number: Int) -> String? {
    var bytes = bytes[...]
    if number == 1, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
    return String(validating: bytes, as: UTF8.self)
}

func isBlank(_ bytes: [UInt8]) -> Bool {
    bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 }
}

/// JSON Lines: each line one object whose members are record fields with string values (`emailVerified` a
/// boolean); `null` is the same as an absent member.
public enum JSONLinesRecords {
    public static func parse(_ line: InputLine) -> ParsedLine {
        guard case .complete(let number, var bytes) = line else {
            return .rejected(ImportReject(.lineTooLong, "longer than \(ImportLimits.maximumLineBytes) bytes"))
        }
        if isBlank(bytes) { return .blank }
        guard lineText(bytes, number: number) != nil else {
            return .rejected(ImportReject(.invalidUTF8, "not valid UTF-8"))
        }
        if number == 1, bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        var record = RawImportRecord()
        var unknown: String?
        var wrongType: String?
        do {
            try JSONReader.parseObject(bytes) { (key: String, reader: inout JSONReader) throws(JSONReader.Failure) in
                let value = try reader.readValue()
                guard let field = ImportField(rawValue: key) else {
                    if unknown == nil { unknown = key }
                    return
                }
                switch (field, value) {
                case (_, .null): break
                case (.emailVerified, .boolean(let flag)): record.emailVerifiedFlag = flag
                case (.emailVerified, _): if wrongType == nil { wrongType = "emailVerified must be true or false" }
                case (_, .string(let text)): record[field] = text
                default: if wrongType == nil { wrongType = "\(field.rawValue) must be a string" }
                }
            }
        } catch {
            return .rejected(ImportReject(.malformedJSON, "not one JSON object (stopped at byte \(error.offset + 1))"))
        }
        if let unknown {
            // The name is shown only when it is short and printable: it came from the input.
            let shown = unknown.count <= 64 && unknown.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
            return .rejected(ImportReject(.unknownField, shown ? "unknown member \"\(unknown)\"" : "an unknown member"))
        }
        if let wrongType { return .rejected(ImportReject(.wrongType, wrongType)) }
        return .record(record)
    }
}

/// CSV (RFC 4180 quoting): the header row names the columns; each later row has one value per column, an empty
/// value being an absent field. A quoted value may contain commas and doubled quotes but no line break (no field
/// may contain one).
public struct CSVRecords: Sendable {
    /// The header row's problem: the whole input is refused.
    public struct HeaderError: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    public let columns: [ImportField]

    /// Reads the header row. It must name `email` and may name each other field once, in any order.
    public init(header line: InputLine) throws(HeaderError) {
        guard case .complete(let number, let bytes) = line else {
            throw HeaderError(description: "the header row is longer than \(ImportLimits.maximumLineBytes) bytes")
        }
        guard let text = lineText(bytes, number: number) else {
            throw HeaderError(description: "the header row is not valid UTF-8")
        }
        guard case .success(let names) = Self.split(text) else {
            throw HeaderError(description: "the header row has a stray or unterminated quote")
        }
        var columns: [ImportField] = []
        for name in names {
            let trimmed = name.trimmingWhitespace()
            guard let field = ImportField(rawValue: trimmed) else {
                let known = ImportField.allCases.map(\.rawValue).joined(separator: ", ")
                let shown = trimmed.count <= 64 ? "\"\(trimmed)\"" : "a column"
                throw HeaderError(description: "the header row names \(shown), which is not one of \(known)")
            }
            guard !columns.contains(field) else {
                throw HeaderError(description: "the header row names \(field.rawValue) twice")
            }
            columns.append(field)
        }
        guard columns.contains(.email) else { throw HeaderError(description: "the header row has no email column") }
        self.columns = columns
    }

    public func parse(_ line: InputLine) -> ParsedLine {
        guard case .complete(let number, let bytes) = line else {
            return .rejected(ImportReject(.lineTooLong, "longer than \(ImportLimits.maximumLineBytes) bytes"))
        }
        if isBlank(bytes) { return .blank }
        guard let text = lineText(bytes, number: number) else {
            return .rejected(ImportReject(.invalidUTF8, "not valid UTF-8"))
        }
        let values: [String]
        switch Self.split(text) {
        case .success(let split): values = split
        case .failure(let reject): return .rejected(reject)
        }
        guard values.count == columns.count else {
            return .rejected(
                ImportReject(.wrongFieldCount, "\(values.count) fields where the header has \(columns.count)"))
        }
        var record = RawImportRecord()
        for (field, value) in zip(columns, values) where !value.isEmpty {
            record[field] = value
        }
        return .record(record)
    }

    /// The comma-separated values of one row, unquoted.
    static func split(_ text: String) -> Result<[String], ImportReject> {
        var values: [String] = []
        var current: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        var fieldStart = true
        while index < bytes.count {
            let byte = bytes[index]
            if fieldStart, byte == UInt8(ascii: "\"") {
                fieldStart = false
                index += 1
                var closed = false
                while index < bytes.count {
                    if bytes[index] == UInt8(ascii: "\"") {
                        if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\"") {
                            current.append(UInt8(ascii: "\""))
                            index += 2
                            continue
                        }
                        closed = true
                        index += 1
                        break
                    }
                    current.append(bytes[index])
                    index += 1
                }
                guard closed else { return .failure(ImportReject(.malformedCSV, "a quoted value is not closed")) }
                guard index == bytes.count || bytes[index] == UInt8(ascii: ",") else {
                    return .failure(ImportReject(.malformedCSV, "text after a closing quote"))
                }
                continue
            }
            fieldStart = false
            if byte == UInt8(ascii: ",") {
                values.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
                fieldStart = true
            } else if byte == UInt8(ascii: "\"") {
                return .failure(ImportReject(.malformedCSV, "a quote inside an unquoted value"))
            } else {
                current.append(byte)
            }
            index += 1
        }
        values.append(String(decoding: current, as: UTF8.self))
        return .success(values)
    }
}
