import Glibc

/// An IPv4 or IPv6 address as 16 bytes, IPv4 as `::ffff:a.b.c.d`, parsed from its numeric text. An IPv4-mapped IPv6
/// address (`::ffff:10.0.0.1`) is the IPv4 address it maps: the same bytes, the same family.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]
    /// Whether the text was written in IPv6 form (`::ffff:10.0.0.1` was; `10.0.0.1` was not).
    public let isV6: Bool
    /// The text it was parsed from.
    public let description: String

    public init?(parsing text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if text.utf8.count <= 15, inet_pton(AF_INET, text, &v4) == 1 {
            let raw = withUnsafeBytes(of: &v4) { Array($0) }
            bytes = Self.mappedPrefix + raw
            isV6 = false
        } else if text.utf8.count <= 45, inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            isV6 = true
        } else {
            return nil
        }
        description = text
    }

    private init(bytes: [UInt8], isV6: Bool, description: String) {
        self.bytes = bytes
        self.isV6 = isV6
        self.description = description
    }

    static let mappedPrefix: [UInt8] = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]

    /// The first address of its `/length` block: every bit past the first `length` of the 128 cleared (an IPv4
    /// address's prefix counts within the mapped form, so an IPv4 /24 is /120). Its text is its canonical form.
    public func masked(toPrefixLength length: Int) -> IPAddress {
        let kept = min(max(length, 0), 128)
        var masked = bytes
        for index in 0..<16 {
            let bits = min(max(kept - index * 8, 0), 8)
            masked[index] &= bits == 8 ? 0xFF : ~(UInt8(0xFF) >> UInt8(bits))
        }
        return IPAddress(bytes: masked, isV6: isV6, description: Self.canonicalText(of: masked) ?? "")
    }

    /// Whether it is an IPv4 address, written as one or IPv4-mapped.
    public var isV4: Bool { bytes[0..<12].elementsEqual(Self.mappedPrefix) }

    /// The IPv4 address this one carries, if any: itself, IPv4-mapped (`::ffff:0:0/96`), NAT64 (`64:ff9b::/96`) or
    /// 6to4 (`2002::/16`).
    public var embeddedV4: [UInt8]? {
        if isV4 { return Array(bytes[12...]) }
        if bytes[0..<12].elementsEqual([0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]) { return Array(bytes[12...]) }
        if bytes[0] == 0x20 && bytes[1] == 0x02 { return Array(bytes[2..<6]) }
        return nil
    }

    /// The canonical text: an IPv4 address (mapped ones too) in dotted form, an IPv6 address as `inet_ntop` writes it.
    public var canonical: String { Self.canonicalText(of: bytes) ?? description }

    /// The canonical text of 16 address bytes (see ``canonical``); nil if `inet_ntop` refuses them.
    private static func canonicalText(of bytes: [UInt8]) -> String? {
        let isV4 = bytes[0..<12].elementsEqual(mappedPrefix)
        var raw = isV4 ? Array(bytes[12...]) : bytes
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let written = raw.withUnsafeMutableBytes { pointer in
            inet_ntop(isV4 ? AF_INET : AF_INET6, pointer.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard written else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A block of addresses, `10.0.0.0/8` or `fc00::/7` (an address alone is itself as one block). A block of IPv4
/// addresses (`10.0.0.0/8`, or `::ffff:10.0.0.0/104` written IPv4-mapped) holds IPv4 addresses, mapped ones too; any
/// other block holds IPv6 addresses only, so `::/0` is every IPv6 address and no IPv4 one.
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    let base: [UInt8]
    /// The prefix length over the 16-byte form (an IPv4 /8 is /104).
    let prefixLength: Int
    let holdsV4: Bool
    public let description: String

    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parsing: String(parts[0])) else { return nil }
        let width = address.isV6 ? 128 : 32
        var length = width
        if parts.count == 2 {
            guard parts[1].count <= 3, parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let parsed = Int(parts[1]), parsed <= width
            else { return nil }
            length = parsed
        }
        base = address.bytes
        prefixLength = length + (address.isV6 ? 0 : 96)
        holdsV4 = address.isV4
        description = text
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.isV4 == holdsV4 else { return false }
        for bit in 0..<prefixLength {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if base[bit / 8] & mask != address.bytes[bit / 8] & mask { return false }
        }
        return true
    }
}
