import Glibc

/// An IP address or a CIDR block (`10.0.0.0/8`, `fd00::/8`) naming trusted proxies.
public struct AddressBlock: Sendable, Equatable {
    let bytes: [UInt8]
    let prefixLength: Int

    /// Parses an address (a block of one) or `address/prefix`; nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = IPAddressBytes.parse(String(parts[0])) else { return nil }
        let maximum = bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        self.bytes = bytes
    }

    /// Whether `address` (raw bytes) lies in the block.
    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == bytes.count else { return false }
        var remaining = prefixLength
        for index in 0..<bytes.count where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            if address[index] & mask != bytes[index] & mask { return false }
            remaining -= bits
        }
        return true
    }
}

/// Numeric IP addresses as bytes (4 or 16), with IPv4-mapped IPv6 read as IPv4.
enum IPAddressBytes {
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return Array(bytes[12...])
        }
        return bytes
    }

    /// The canonical text of an address (IPv4-mapped IPv6 as IPv4); nil when not an address.
    static func canonical(_ text: String) -> String? {
        guard var bytes = parse(text) else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let ok = bytes.withUnsafeMutableBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Decides the client address of a request: the socket peer, unless the peer is a trusted proxy, in which case
/// `X-Forwarded-For` is read from the right and the first hop that is not a trusted proxy is the client.
public struct ClientAddressResolver: Sendable {
    private let trusted: [AddressBlock]

    /// Reads `PASSKEY_TRUSTED_PROXIES` entries; an entry that is neither an address nor a CIDR block is skipped.
    public init(trustedProxies: [String]) {
        trusted = trustedProxies.compactMap(AddressBlock.init)
    }

    private func isTrusted(_ address: [UInt8]) -> Bool { trusted.contains { $0.contains(address) } }

    /// The client address for a request from `peer` (host text, without port) carrying `forwardedFor` values
    /// (every `X-Forwarded-For` field, in order).
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        let peerText = IPAddressBytes.canonical(peer) ?? peer
        guard let peerBytes = IPAddressBytes.parse(peer), isTrusted(peerBytes), !forwardedFor.isEmpty else {
            return peerText
        }
        let hops = forwardedFor.joined(separator: ",").split(separator: ",").map { Self.hostOfHop(String($0)) }
        var client = peerText
        for hop in hops.reversed() {
            // A hop that is not an address cannot be judged: the last address believed so far is the client.
            guard let bytes = IPAddressBytes.parse(hop), let canonical = IPAddressBytes.canonical(hop) else {
                return client
            }
            client = canonical
            if !isTrusted(bytes) { return client }
        }
        return client
    }

    /// The address part of one hop: trims spaces and strips a port (`1.2.3.4:80`, `[::1]:80`) or quotes.
    static func hostOfHop(_ hop: String) -> String {
        var text = hop.trimmingCharacters(in: " \t\"")
        if text.hasPrefix("[") {
            if let close = text.firstIndex(of: "]") { text = String(text[text.index(after: text.startIndex)..<close]) }
            return text
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        return text
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars = scalars.dropFirst() }
        while let last = scalars.last, set.contains(last) { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
