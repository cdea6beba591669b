import Encoding

/// gRPC custom metadata: ordered key/value pairs with lower-case keys; keys ending in `-bin` carry bytes
/// (base64 on the wire), all others carry printable ASCII text.
public struct Metadata: Sendable, Equatable, Sequence {
    /// One metadata value.
    public enum Value: Sendable, Equatable {
        case string(String)
        case binary([UInt8])
    }

    private var entries: [(key: String, value: Value)] = []

    /// Creates empty metadata.
    public init() {}

    /// The number of entries.
    public var count: Int { entries.count }

    /// Adds a text entry; the key is lower-cased.
    public mutating func add(_ key: String, _ value: String) {
        entries.append((key.lowercased(), .string(value)))
    }

    /// Adds a binary entry; `key` must end in `-bin`.
    public mutating func add(_ key: String, bytes: [UInt8]) {
        entries.append((key.lowercased(), .binary(bytes)))
    }

    /// The first text value for `key`.
    public subscript(_ key: String) -> String? {
        for entry in entries where entry.key == key {
            if case .string(let text) = entry.value { return text }
        }
        return nil
    }

    /// The first binary value for `key` (a `-bin` key).
    public func bytes(_ key: String) -> [UInt8]? {
        for entry in entries where entry.key == key {
            if case .binary(let bytes) = entry.value { return bytes }
        }
        return nil
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: Value)]> {
        entries.makeIterator()
    }

    public static func == (lhs: Metadata, rhs: Metadata) -> Bool {
        lhs.entries.count == rhs.entries.count
            && zip(lhs.entries, rhs.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// Header names that belong to HTTP/2 or gRPC itself and never appear as custom metadata.
    static func isReserved(_ name: String) -> Bool {
        if name.hasPrefix(":") || name.hasPrefix("grpc-") { return true }
        switch name {
        case "content-type", "te", "user-agent", "content-length", "accept-encoding", "host", "connection": return true
        default: return false
        }
    }

    /// Collects custom metadata from received header fields; an undecodable `-bin` value is dropped.
    init(headers: some Sequence<(name: String, value: String)>) {
        for (name, value) in headers where !Self.isReserved(name) {
            if name.hasSuffix("-bin") {
                // Several values may be joined with commas in one field.
                var values: [[UInt8]] = []
                for part in value.split(separator: ",") {
                    guard let bytes = Base64URL.decode(part.trimmingSpaces()) else {
                        values = []
                        break
                    }
                    values.append(bytes)
                }
                for bytes in values { add(name, bytes: bytes) }
            } else {
                add(name, value)
            }
        }
    }

    /// The header fields for this metadata, binary values base64-encoded without padding.
    func headerFields() -> [(name: String, value: String)] {
        entries.compactMap { entry in
            switch entry.value {
            case .string(let text):
                guard !entry.key.hasSuffix("-bin") else { return nil }
                return (entry.key, text)
            case .binary(let bytes):
                guard entry.key.hasSuffix("-bin") else { return nil }
                return (entry.key, String(Base64URL.encodeStandard(bytes).prefix { $0 != "=" }))
            }
        }
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var text = self
        while text.first == " " { text.removeFirst() }
        while text.last == " " { text.removeLast() }
        return text
    }
}
