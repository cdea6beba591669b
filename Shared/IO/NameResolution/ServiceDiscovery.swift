import Configuration
import GRPC
import NetworkIO

/// The address source for a service's configured targets (`*_SERVICE_ADDRESSES`): fixed when every target is
/// numeric, else a lookup of every target, merged, run again every `interval` and after a connection fails.
public enum ServiceDiscovery {
    public static func addressSource(for targets: [ServiceTarget], interval: Duration) -> GRPCAddressSource {
        if targets.allSatisfy(\.isNumeric) {
            return .fixed(targets.map { SocketAddress(host: $0.address.host, port: UInt16($0.address.port)) })
        }
        let name = targets.map(\.description).joined(separator: ",")
        return .lookup(name, every: interval) {
            // A target whose lookup fails fails the whole lookup, so the last set stays rather than losing that
            // target's replicas to a passing DNS error.
            try targets.flatMap { try addresses(of: $0) }
        }
    }

    /// The addresses of one target now.
    public static func addresses(of target: ServiceTarget) throws(DNSError) -> [SocketAddress] {
        guard let server = target.nameServer, !target.isNumeric else {
            return try AddressResolution.lookUpAll(target.address)
        }
        let client = DNSClient(server: SocketAddress(host: server.host, port: UInt16(server.port)))
        return try client.addresses(of: target.address.host).map {
            SocketAddress(host: $0, port: UInt16(target.address.port))
        }
    }
}
