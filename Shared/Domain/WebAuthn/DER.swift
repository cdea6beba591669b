/// A minimal DER reader for the few ASN.1 structures attestation needs (Android key descriptions, Apple nonces,
/// TPM names, extended key usage). Definite lengths only; every length is checked against the input.
struct DERReader {
    /// One TLV element.
    struct Element {
        /// Tag class bits (0x00 universal, 0x40 application, 0x80 context-specific, 0xC0 private).
        let tagClass: UInt8
        let constructed: Bool
        let tagNumber: UInt64
        let content: ArraySlice<UInt8>

        var isSequence: Bool { tagClass == 0 && constructed && tagNumber == 16 }
        var isSet: Bool { tagClass == 0 && constructed && tagNumber == 17 }
        var isOctetString: Bool { tagClass == 0 && !constructed && tagNumber == 4 }
        var isInteger: Bool { tagClass == 0 && !constructed && tagNumber == 2 }
        var isEnumerated: Bool { tagClass == 0 && !constructed && tagNumber == 10 }
        var isObjectIdentifier: Bool { tagClass == 0 && !constructed && tagNumber == 6 }

        func isContextSpecific(_ number: UInt64) -> Bool { tagClass == 0x80 && tagNumber == number }

        /// The children of a constructed element.
        func children() -> [Element]? {
            guard constructed else { return nil }
            var reader = DERReader(content)
            var items: [Element] = []
            while !reader.isAtEnd {
                guard let item = reader.read(), items.count < 1024 else { return nil }
                items.append(item)
            }
            return items
        }

        /// A small non-negative INTEGER or ENUMERATED value.
        var smallInteger: Int? {
            guard isInteger || isEnumerated, let first = content.first, content.count <= 8, first & 0x80 == 0 else {
                return nil
            }
            return content.reduce(0) { $0 << 8 | Int($1) }
        }
    }

    private let bytes: ArraySlice<UInt8>
    private var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.position = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var isAtEnd: Bool { position >= bytes.endIndex }

    /// Reads the next element, or nil on malformed or truncated input.
    mutating func read() -> Element? {
        guard position < bytes.endIndex else { return nil }
        let first = bytes[position]
        position += 1
        var number = UInt64(first & 0x1F)
        if number == 0x1F {
            number = 0
            var digits = 0
            while true {
                guard position < bytes.endIndex, digits < 8 else { return nil }
                let byte = bytes[position]
                position += 1
                digits += 1
                number = number << 7 | UInt64(byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
        }
        guard position < bytes.endIndex else { return nil }
        let lengthByte = bytes[position]
        position += 1
        var length = 0
        if lengthByte < 0x80 {
            length = Int(lengthByte)
        } else {
            let count = Int(lengthByte & 0x7F)
            guard count >= 1, count <= 4, bytes.endIndex - position >= count else { return nil }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[position])
                position += 1
            }
        }
        guard length <= bytes.endIndex - position else { return nil }
        let content = bytes[position..<position + length]
        position += length
        return Element(tagClass: first & 0xC0, constructed: first & 0x20 != 0, tagNumber: number, content: content)
    }
}
