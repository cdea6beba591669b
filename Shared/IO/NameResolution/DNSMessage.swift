/// Why a DNS lookup gave no answer.
public struct DNSError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What went wrong, as a small stable set.
    public enum Code: Sendable, Equatable {
        /// The name cannot be asked for: empty, too long, or with a label that is empty, too long or not ASCII.
        case invalidName
        /// The response is cut short, overruns itself, or is not an answer to the query.
        case malformedResponse
        /// The server answered with an error code other than "no such name".
        case serverFailure
        /// The answer did not fit the datagram.
        case truncated
        /// No answer within the timeout.
        case timedOut
        /// The socket could not be used.
        case system
    }

    /// The stable code tests and callers compare.
    public let code: Code
    /// A human-readable reason, safe to log.
    public let reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }
}

/// The DNS wire format (RFC 1035) for address queries: building a query and reading the addresses out of its
/// response. Pure functions over bytes; every read is bounds-checked.
public enum DNSMessage {
    /// The record types asked for.
    public enum RecordType: UInt16, Sendable {
        case a = 1
        case aaaa = 28

        var addressLength: Int { self == .a ? 4 : 16 }
    }

    /// The largest UDP answer the query says it accepts (EDNS0), so that a name with many replicas fits.
    public static let maximumUDPPayload: UInt16 = 4096
    /// Response records read at most.
    static let maximumRecords = 512

    /// A recursive query for `name`'s records of `type`, with an EDNS0 OPT record.
    public static func query(id: UInt16, name: String, type: RecordType) throws(DNSError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count + 40)
        append16(id, to: &bytes)
        append16(0x0100, to: &bytes)  // a standard query, recursion desired
        append16(1, to: &bytes)  // one question
        append16(0, to: &bytes)
        append16(0, to: &bytes)
        append16(1, to: &bytes)  // one additional record: OPT
        bytes.append(contentsOf: try encodeName(name))
        append16(type.rawValue, to: &bytes)
        append16(1, to: &bytes)  // class IN
        bytes.append(0)  // OPT: root name
        append16(41, to: &bytes)
        append16(maximumUDPPayload, to: &bytes)
        bytes.append(contentsOf: [0, 0, 0, 0, 0, 0])  // extended rcode, version, flags, no options
        return bytes
    }

    /// The name in wire form: length-prefixed labels ending with the root label.
    static func encodeName(_ name: String) throws(DNSError) -> [UInt8] {
        var text = Array(name.utf8)
        if text.last == UInt8(ascii: ".") { text.removeLast() }
        guard !text.isEmpty, text.count <= 253 else { throw DNSError(.invalidName, "a name has 1 to 253 characters") }
        var wire: [UInt8] = []
        for label in text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard (1...63).contains(label.count),
                label.allSatisfy({ byte in
                    (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                        || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                })
            else { throw DNSError(.invalidName, "a label has 1 to 63 letters, digits, hyphens or underscores") }
            wire.append(UInt8(label.count))
            wire.append(contentsOf: label)
        }
        wire.append(0)
        return wire
    }

    /// Whether `bytes` is a response to query `id` at all (a datagram that is not is ignored, not an error).
    public static func isResponse(_ bytes: [UInt8], to id: UInt16) -> Bool {
        bytes.count >= 12 && read16(bytes, 0) == id && bytes[2] & 0x80 != 0
    }

    /// The addresses of `type` in the answer section of a response to query `id`, as raw bytes (4 or 16 each).
    /// "No such name" is an empty answer; other server errors and truncation throw.
    public static func addresses(inResponse bytes: [UInt8], id: UInt16, type: RecordType) throws(DNSError)
        -> [[UInt8]]
    {
        guard isResponse(bytes, to: id) else { throw DNSError(.malformedResponse, "not a response to the query") }
        guard bytes[2] & 0x02 == 0 else { throw DNSError(.truncated, "the answer was truncated") }
        switch bytes[3] & 0x0F {
        case 0: break
        case 3: return []
        case let rcode: throw DNSError(.serverFailure, "the server answered with rcode \(rcode)")
        }
        let questions = Int(read16(bytes, 4))
        let answers = Int(read16(bytes, 6))
        guard questions <= 1, answers <= maximumRecords else {
            throw DNSError(.malformedResponse, "unexpected section counts")
        }
        var offset = 12
        for _ in 0..<questions {
            offset = try skipName(bytes, from: offset)
            guard offset + 4 <= bytes.count else { throw DNSError(.malformedResponse, "the question is cut short") }
            offset += 4
        }
        var found: [[UInt8]] = []
        for _ in 0..<answers {
            offset = try skipName(bytes, from: offset)
            guard offset + 10 <= bytes.count else { throw DNSError(.malformedResponse, "a record is cut short") }
            let recordType = read16(bytes, offset)
            let recordClass = read16(bytes, offset + 2)
            let length = Int(read16(bytes, offset + 8))
            offset += 10
            guard offset + length <= bytes.count else { throw DNSError(.malformedResponse, "record data overruns") }
            if recordType == type.rawValue && recordClass == 1 {
                guard length == type.addressLength else {
                    throw DNSError(.malformedResponse, "an address record of \(length) bytes")
                }
                found.append(Array(bytes[offset..<offset + length]))
            }
            offset += length
        }
        return found
    }

    /// The offset just past a (possibly compressed) name starting at `offset`.
    static func skipName(_ bytes: [UInt8], from start: Int) throws(DNSError) -> Int {
        var offset = start
        for _ in 0..<128 {
            guard offset < bytes.count else { throw DNSError(.malformedResponse, "a name is cut short") }
            let length = bytes[offset]
            switch length & 0xC0 {
            case 0xC0:
                guard offset + 2 <= bytes.count else { throw DNSError(.malformedResponse, "a name is cut short") }
                return offset + 2
            case 0:
                if length == 0 { return offset + 1 }
                offset += 1 + Int(length)
            default:
                throw DNSError(.malformedResponse, "a label of an unknown kind")
            }
        }
        throw DNSError(.malformedResponse, "a name has too many labels")
    }

    private static func append16(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    private static func read16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
}
