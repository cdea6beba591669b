import IPAddresses

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
        ("::/128", "unspecified"), ("::1/128", "loopback"), ("::/96", "IPv4-compatible"), ("100::/64", "discard"),
        ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique local"), ("fe80::/10", "link-local"), ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
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
                    "\(host.prefix(253)) resolves to \(address), a \(reason) address; webhooks go to public addresses only"
                )
            }
        }
    }
}
