import Foundation

// Identifiers cross the wire and the database as text many times per request. Foundation on Linux makes a new
// UUID by opening, reading and closing /dev/urandom, parses one with sscanf and formats one through CFString; these
// do the same with the standard library's random source and plain table lookups.

extension UUID {
    /// A new version 4 (random) UUID, from the system's CSPRNG (the standard library's getrandom path).
    public static func randomV4() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { IdentifierRandom.fill($0) }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: uuid)
    }

    /// A new version 7 UUID (RFC 9562): 48 bits of Unix milliseconds, then random bits. Rows keyed by it are
    /// inserted in time order, so the primary-key index grows at its right edge instead of at random pages.
    public static func timeOrderedV7(at date: Date = Date()) -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { IdentifierRandom.fill($0) }
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        uuid.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        uuid.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        uuid.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        uuid.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        uuid.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        uuid.5 = UInt8(truncatingIfNeeded: milliseconds)
        uuid.6 = (uuid.6 & 0x0F) | 0x70  // version 7
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // RFC 9562 variant
        return UUID(uuid: uuid)
    }

    /// The canonical 8-4-4-4-12 form in lowercase hex, as Postgres prints a `uuid`.
    public var lowercaseText: String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { output in
                digits.withUTF8Buffer { digits in
                    var position = 0
                    for (index, byte) in bytes.enumerated() {
                        if index == 4 || index == 6 || index == 8 || index == 10 {
                            output[position] = UInt8(ascii: "-")
                            position += 1
                        }
                        output[position] = digits[Int(byte >> 4)]
                        output[position + 1] = digits[Int(byte & 0x0F)]
                        position += 2
                    }
                }
                return 36
            }
        }
    }

    /// Parses the 8-4-4-4-12 hex form, either case, like `UUID(uuidString:)`; nil for anything else.
    public init?(text: some StringProtocol) {
        let parsed: uuid_t?? = text.utf8.withContiguousStorageIfAvailable { UUID.parse($0) }
        guard let value = parsed ?? Array(text.utf8).withUnsafeBufferPointer({ UUID.parse($0) }) else { return nil }
        self.init(uuid: value)
    }

    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> uuid_t? {
        guard text.count == 36 else { return nil }
        var bytes = (UInt64(0), UInt64(0))
        let ok = withUnsafeMutableBytes(of: &bytes) { output -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = Hex.value(of: text[position]), let low = Hex.value(of: text[position + 1]) else {
                    return false
                }
                output[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return ok ? unsafeBitCast(bytes, to: uuid_t.self) : nil
    }
}
