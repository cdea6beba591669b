import Glibc

/// An IPv4 or IPv6 address as 16 bytes (IPv4 as `::ffff:a.b.c.d`), parsed from its numeric text.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]
    public let isV6: Bool
    public let description: String

    public init?(parsing text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if text.utf8.count <= 15, inet_pton(AF_INET, text, &v4) == 1 {
            let raw = withUnsafeBytes(of: &v4) { Array($0) }
            bytes = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + raw
            isV6 = false
        } else if text.utf8.count <= 45, inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            isV6 = true
        } else {
            return nil
        }
        description = text
    }

    /// The IPv4 address this one carries, if any: itself, IPv4-mapped (`::ffff:0:0/96`), NAT64 (`64:ff9b::/96`) or
    /// 6to4 (`2002::/16`).
    var embeddedV4: [UInt8]? {
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        if bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return Array(bytes[12...]) }
        if bytes[0] == 0x20 && bytes[1] == 0x02 { return Array(bytes[2..<6]) }
        return nil
    }
}

/// A block of addresses, `10.0.0.0/8` or `fc00::/7` (an address alone is itself as one block).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    let base: [UInt8]
    /// The prefix length over the 16-byte form (an IPv4 /8 is /104).
    let prefixLength: Int
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
        description = text
    }

    public func contains(_ address: IPAddress) -> Bool {
        for bit in 0..<prefixLength {
            let mask = UInt8(0x80) >> UInt8(bit % 8)
            if base[bit / 8] & mask != address.bytes[bit / 8] & mask { return false }
        }
        return true
    }
}

/// Which addresses a webhook may be delivered to. By default only public ones: loopback, private, link-local
/// (cloud metadata services live at 169.254.169.254), shared, multicast, documentation and reserved blocks are
/// refused, including IPv6 forms that carry such an IPv4 address, so a registered URL cannot reach inside the
/// network (SSRF). Operators allow specific blocks (`PASSKEY_WEBHOOK_ALLOWED_NETWORKS`). It is checked on every
/// resolved address, at registration and again before each delivery, and the delivery connects to the checked
/// address only.
public struct DestinationPolicy: Sendable, Equatable {
    /// The blocks refused unless allowed, each with the reason given.
    static let refused: [(network: IPNetwork, reason: String)] = [
        ("0.0.0.0/8", "this-network"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol"), ("192.0.2.0/24", "documentation"), ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"), ("198.51.100.0/24", "documentation"), ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("::/96", "IPv4-compatible"), ("100::/64", "discard"), ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique local"), ("fe80::/10", "link-local"), ("fec0::/10", "site-local"), ("ff00::/8", "multicast"),
    ].map { (IPNetwork(parsing: $0.0)!, $0.1) }

    public let allowed: [IPNetwork]

    public init(allowed: [IPNetwork] = []) { self.allowed = allowed }

    /// Nil when `address` may be a destination; otherwise why not ("loopback", "private", …).
    public func refusal(of address: IPAddress) -> String? {
        if allowed.contains(where: { $0.contains(address) }) { return nil }
        if let match = Self.refused.first(where: { $0.network.contains(address) }) { return match.reason }
        if let v4 = address.embeddedV4, address.isV6,
            let inner = IPAddress(parsing: v4.map(String.init).joined(separator: ".")), let reason = refusal(of: inner)
        {
            return reason
        }
        return nil
    }

    /// Every address must be allowed: a name with one internal address among public ones is refused.
    public func check(host: String, addresses: [IPAddress]) throws(WebhookURLError) {
        guard !addresses.isEmpty else { throw WebhookURLError("\(host.prefix(253)) does not resolve") }
        for address in addresses {
            if let reason = refusal(of: address) {
                throw WebhookURLError(
                    "\(host.prefix(253)) resolves to \(address), a \(reason) address; webhooks go to public addresses only")
            }
        }
    }
}
