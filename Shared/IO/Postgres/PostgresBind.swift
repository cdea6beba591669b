import Encoding
import Foundation

/// One bound parameter as libpq sends it: text or binary bytes with an optional type OID.
public struct PostgresBind: Sendable, Hashable {
    /// The parameter bytes; nil is SQL NULL.
    public var bytes: [UInt8]?
    /// Whether `bytes` is in Postgres's binary format (used for `bytea`, sent verbatim).
    public var isBinary: Bool
    /// The parameter type OID, or 0 to let the server infer it from the statement.
    public var typeOID: UInt32

    public init(bytes: [UInt8]?, isBinary: Bool, typeOID: UInt32) {
        self.bytes = bytes
        self.isBinary = isBinary
        self.typeOID = typeOID
    }

    /// SQL NULL.
    public static let null = PostgresBind(bytes: nil, isBinary: false, typeOID: 0)

    /// A text-format parameter.
    public static func text(_ value: String, typeOID: UInt32 = 0) -> PostgresBind {
        PostgresBind(bytes: Array(value.utf8), isBinary: false, typeOID: typeOID)
    }
}

/// A Swift value that can be bound as a statement parameter.
public protocol PostgresEncodable: Sendable {
    var postgresBind: PostgresBind { get }
}

/// A Swift value that can be read from a column in text format.
public protocol PostgresDecodable {
    /// Decodes the column's text. Throws `PostgresError` with code `.decoding` on a value of the wrong shape.
    init(postgresText text: String) throws
}

/// Type OIDs used for explicit parameter types.
enum PostgresTypeOID {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int4: UInt32 = 23
    static let text: UInt32 = 25
    static let float8: UInt32 = 701
    static let textArray: UInt32 = 1009
    static let timestamptz: UInt32 = 1184
    static let uuid: UInt32 = 2950
}

func decodingError(_ type: Any.Type, _ text: String) -> PostgresError {
    PostgresError(.decoding, "cannot decode \(type) from a \(text.utf8.count)-byte column value")
}

extension String: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(self, typeOID: PostgresTypeOID.text) }
    public init(postgresText text: String) throws { self = text }
}

extension Int: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(String(self), typeOID: PostgresTypeOID.int8) }
    public init(postgresText text: String) throws {
        guard let value = Int(text) else { throw decodingError(Int.self, text) }
        self = value
    }
}

extension Int32: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(String(self), typeOID: PostgresTypeOID.int4) }
    public init(postgresText text: String) throws {
        guard let value = Int32(text) else { throw decodingError(Int32.self, text) }
        self = value
    }
}

extension Int64: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(String(self), typeOID: PostgresTypeOID.int8) }
    public init(postgresText text: String) throws {
        guard let value = Int64(text) else { throw decodingError(Int64.self, text) }
        self = value
    }
}

extension UInt32: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(String(self), typeOID: PostgresTypeOID.int8) }
    public init(postgresText text: String) throws {
        guard let value = UInt32(text) else { throw decodingError(UInt32.self, text) }
        self = value
    }
}

extension Double: PostgresEncodable, PostgresDecodable {
    /// `float8` text: Swift's shortest round-tripping digits, and `Infinity`, `-Infinity` and `NaN` as Postgres
    /// spells them.
    public var postgresBind: PostgresBind {
        let text = isNaN ? "NaN" : isInfinite ? (self < 0 ? "-Infinity" : "Infinity") : String(self)
        return .text(text, typeOID: PostgresTypeOID.float8)
    }
    public init(postgresText text: String) throws {
        guard text.utf8.count <= 64, let value = Double(text) else { throw decodingError(Double.self, text) }
        self = value
    }
}

extension Bool: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(self ? "t" : "f", typeOID: PostgresTypeOID.bool) }
    public init(postgresText text: String) throws {
        switch text {
        case "t": self = true
        case "f": self = false
        default: throw decodingError(Bool.self, text)
        }
    }
}

extension UUID: PostgresEncodable, PostgresDecodable {
    public var postgresBind: PostgresBind { .text(lowercaseText, typeOID: PostgresTypeOID.uuid) }
    public init(postgresText text: String) throws {
        guard let value = UUID(text: text) else { throw decodingError(UUID.self, text) }
        self = value
    }
}

/// A `bytea` value. Sent in binary format (no escaping); read from the text format's `\x` hex form.
public struct PostgresBytes: PostgresEncodable, PostgresDecodable, Hashable {
    public var bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public var postgresBind: PostgresBind { PostgresBind(bytes: bytes, isBinary: true, typeOID: PostgresTypeOID.bytea) }

    public init(postgresText text: String) throws {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x"), utf8.count % 2 == 0
        else { throw decodingError(PostgresBytes.self, text) }
        var bytes = [UInt8]()
        bytes.reserveCapacity((utf8.count - 2) / 2)
        var index = 2
        while index < utf8.count {
            guard let high = Hex.value(of: utf8[index]), let low = Hex.value(of: utf8[index + 1]) else {
                throw decodingError(PostgresBytes.self, text)
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }
}

extension Date: PostgresEncodable, PostgresDecodable {
    /// Sent as an ISO 8601 UTC timestamp with microseconds, Postgres's own precision.
    public var postgresBind: PostgresBind {
        .text(PostgresTimestamp.format(self), typeOID: PostgresTypeOID.timestamptz)
    }
    public init(postgresText text: String) throws {
        guard let date = PostgresTimestamp.parse(text) else { throw decodingError(Date.self, text) }
        self = date
    }
}

/// A one-dimensional `text[]` value, with Postgres's array literal quoting.
public struct PostgresTextArray: PostgresEncodable, PostgresDecodable, Hashable {
    public var elements: [String]
    public init(_ elements: [String]) { self.elements = elements }

    public var postgresBind: PostgresBind {
        let quoted = elements.map { element -> String in
            var escaped = "\""
            for character in element {
                if character == "\"" || character == "\\" { escaped.append("\\") }
                escaped.append(character)
            }
            return escaped + "\""
        }
        return .text("{" + quoted.joined(separator: ",") + "}", typeOID: PostgresTypeOID.textArray)
    }

    public init(postgresText text: String) throws {
        var characters = Array(text)
        guard characters.first == "{", characters.last == "}" else { throw decodingError(PostgresTextArray.self, text) }
        characters = Array(characters.dropFirst().dropLast())
        var elements: [String] = []
        var index = 0
        while index < characters.count {
            var element = ""
            if characters[index] == "\"" {
                index += 1
                var closed = false
                while index < characters.count {
                    let character = characters[index]
                    if character == "\\", index + 1 < characters.count {
                        element.append(characters[index + 1])
                        index += 2
                    } else if character == "\"" {
                        index += 1
                        closed = true
                        break
                    } else {
                        element.append(character)
                        index += 1
                    }
                }
                guard closed else { throw decodingError(PostgresTextArray.self, text) }
            } else {
                while index < characters.count, characters[index] != "," {
                    element.append(characters[index])
                    index += 1
                }
                // Unquoted NULL has no place in the arrays this program writes.
                guard element != "NULL" else { throw decodingError(PostgresTextArray.self, text) }
            }
            elements.append(element)
            if index < characters.count {
                guard characters[index] == "," else { throw decodingError(PostgresTextArray.self, text) }
                index += 1
            }
        }
        self.elements = elements
    }
}
