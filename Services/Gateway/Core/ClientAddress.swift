import IPAddresses

/// Decides the client address of a request: the socket peer, unless the peer is a trusted proxy, in which case
/// `X-Forwarded-For` is read from the right and the first hop that is not a trusted proxy is the client. Also says
/// which per-address rate-limit bucket a client counts against.
public struct ClientAddressResolver: Sendable {
    private let trusted: [IPNetwork]
    /// The prefix an IPv6 client's rate limits are keyed by (`PASSKEY_RATE_LIMIT_IPV6_PREFIX`).
    public let ipv6LimitPrefixLength: Int

    /// Reads `PASSKEY_TRUSTED_PROXIES` entries; an entry that is neither an address nor a CIDR block is skipped.
    public init(trustedProxies: [String], ipv6LimitPrefixLength: Int = 64) {
        trusted = trustedProxies.compactMap { IPNetwork(parsing: $0) }
        self.ipv6LimitPrefixLength = ipv6LimitPrefixLength
    }

    /// A request's client as the resolver decided it: its address, and the key the per-address rate limits count it
    /// by, worked out from the address already parsed and only when a limit asks for it.
    public struct Client: Sendable {
        /// The client address: canonical text, or the peer as given when it is not an IP address.
        public let address: String
        let parsed: IPAddress?
        let ipv6LimitPrefixLength: Int

        /// The key of the client in the per-address rate limits: an IPv4 address itself, and an IPv6 address its
        /// `/ipv6LimitPrefixLength` block (`2001:db8:1:2::/64`). One subscriber holds a whole /64 (often a /56 or a
        /// /48), so a bucket per IPv6 address would give one client 2^64 of them. Anything else (a Unix socket
        /// peer) is its own key.
        public var limitKey: String {
            guard let parsed, !parsed.isV4 else { return address }
            // The masked address's text is already its canonical form.
            return parsed.masked(toPrefixLength: ipv6LimitPrefixLength).description + "/\(ipv6LimitPrefixLength)"
        }
    }

    /// The key of `clientAddress` in the per-address rate limits (``Client/limitKey``).
    public func limitKey(of clientAddress: String) -> String {
        let parsed = IPAddress(parsing: clientAddress)
        return Client(address: clientAddress, parsed: parsed, ipv6LimitPrefixLength: ipv6LimitPrefixLength).limitKey
    }

    private func isTrusted(_ address: IPAddress) -> Bool { trusted.contains { $0.contains(address) } }

    /// Whether the peer is one of the trusted proxies (`PASSKEY_TRUSTED_PROXIES`): what it says of the request (its
    /// `X-Forwarded-For`, its trace's sampling decision) is taken as given.
    public func isTrustedPeer(_ peer: String) -> Bool { IPAddress(parsing: peer).map(isTrusted) ?? false }

    /// The client address for a request from `peer` (host text, without port) carrying `forwardedFor` values
    /// (every `X-Forwarded-For` field, in order).
    public func clientAddress(peer: String, forwardedFor: [String]) -> String {
        client(peer: peer, forwardedFor: forwardedFor).address
    }

    /// The client of a request from `peer` (host text, without port) carrying `forwardedFor` values (every
    /// `X-Forwarded-For` field, in order).
    public func client(peer: String, forwardedFor: [String]) -> Client {
        guard let peerAddress = IPAddress(parsing: peer) else {
            return Client(address: peer, parsed: nil, ipv6LimitPrefixLength: ipv6LimitPrefixLength)
        }
        var client = peerAddress
        if isTrusted(peerAddress), !forwardedFor.isEmpty {
            let hops = forwardedFor.joined(separator: ",").split(separator: ",").map { Self.hostOfHop(String($0)) }
            for hop in hops.reversed() {
                // A hop that is not an address cannot be judged: the last address believed so far is the client.
                guard let address = IPAddress(parsing: hop) else { break }
                client = address
                if !isTrusted(address) { break }
            }
        }
        return Client(address: client.canonical, parsed: client, ipv6LimitPrefixLength: ipv6LimitPrefixLength)
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
