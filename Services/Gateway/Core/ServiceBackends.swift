import Configuration
import GRPC
import GRPCHealth
import NameResolution
import NetworkIO
import Observability
import Protobuf
import ServiceContracts
import ServiceTransport

/// The three services the gateway calls.
public enum BackendService: String, Sendable, CaseIterable {
    case challenge = "challenge-service"
    case verification = "verification-service"
    case session = "session-service"
}

/// How the gateway reaches the services: one unary call at a time, and a health check per service. The real
/// implementation is ``GRPCServiceBackends``; tests may give any other.
public protocol ServiceBackends: Sendable {
    /// Calls `method` on `service` with `metadata`; throws ``RPCError`` when the call does not end with OK.
    /// - Parameter idempotent: whether the call may be retried on another replica after it may have run.
    func call<Request, Response>(
        _ service: BackendService, _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request,
        idempotent: Bool, metadata: Metadata
    ) async throws -> Response

    /// Whether `service` answers a `grpc.health.v1.Health/Check` with SERVING.
    func isServing(_ service: BackendService) async -> Bool
}

/// Settings for the gateway's gRPC clients.
public struct BackendCallSettings: Sendable {
    /// The budget of every call, retries included.
    public var deadline: Duration = .seconds(3)
    /// The budget of a readiness check.
    public var healthDeadline: Duration = .seconds(1)
    /// The first reconnect delay after a service could not be reached.
    public var initialBackoff: Duration = .milliseconds(50)
    /// The longest reconnect delay: low, so that a service that is back is used again within about a second.
    public var maximumBackoff: Duration = .seconds(1)
    /// While backing off, a call probes the address again when the last attempt is this old, so that a service
    /// that has just come back is used by the next call rather than after the rest of the backoff.
    public var reconnectOnDemandAfter: Duration = .milliseconds(10)
    /// Event-loop threads per service client.
    public var threadsPerService: Int = 1

    /// The defaults.
    public init() {}
}

/// The services over gRPC: one ``GRPCClient`` per service over its replica addresses, used in turn.
public final class GRPCServiceBackends: ServiceBackends {
    private let clients: [BackendService: GRPCClient]
    private let settings: BackendCallSettings

    /// Creates the clients for fixed numeric addresses and starts connecting.
    public convenience init(
        challenge: [SocketAddress], verification: [SocketAddress], session: [SocketAddress],
        settings: BackendCallSettings = BackendCallSettings(), logger: Logger = .disabled
    ) throws {
        try self.init(
            challenge: .fixed(challenge), verification: .fixed(verification), session: .fixed(session),
            settings: settings, logger: logger)
    }

    /// Creates the clients for each service's address source and starts connecting.
    /// With `transport`, every connection is mutual TLS and the server must present the identity of the service
    /// it stands for; without, plaintext.
    public init(
        challenge: GRPCAddressSource, verification: GRPCAddressSource, session: GRPCAddressSource,
        settings: BackendCallSettings = BackendCallSettings(), logger: Logger = .disabled,
        transport: GRPCTransportSecurity? = nil
    ) throws {
        var configuration = GRPCClientConfiguration()
        configuration.threadCount = settings.threadsPerService
        configuration.initialBackoffNanoseconds = settings.initialBackoff.wholeNanoseconds
        configuration.maxBackoffNanoseconds = settings.maximumBackoff.wholeNanoseconds
        configuration.reconnectOnDemandAfterNanoseconds = settings.reconnectOnDemandAfter.wholeNanoseconds
        configuration.logger = logger
        func client(_ service: BackendService, _ source: GRPCAddressSource) throws -> GRPCClient {
            var secured = configuration
            secured.tls = transport?.clientTLS(to: service.rawValue)
            return try GRPCClient(source: source, configuration: secured)
        }
        clients = [
            .challenge: try client(.challenge, challenge),
            .verification: try client(.verification, verification),
            .session: try client(.session, session),
        ]
        self.settings = settings
    }

    /// Creates the clients for the replica targets of a configuration: names are looked up again every
    /// `SERVICE_DISCOVERY_INTERVAL` and after a connection fails.
    public convenience init(
        configuration: GatewayConfiguration, settings: BackendCallSettings = BackendCallSettings(),
        logger: Logger = .disabled, transport: GRPCTransportSecurity? = nil
    ) throws {
        let interval = Duration.milliseconds(Int64(configuration.serviceDiscoveryInterval * 1000))
        try self.init(
            challenge: ServiceDiscovery.addressSource(for: configuration.challengeServiceAddresses, interval: interval),
            verification: ServiceDiscovery.addressSource(
                for: configuration.verificationServiceAddresses, interval: interval),
            session: ServiceDiscovery.addressSource(for: configuration.sessionServiceAddresses, interval: interval),
            settings: settings, logger: logger, transport: transport)
    }

    /// Closes every connection.
    public func close() {
        for client in clients.values { client.close() }
    }

    public func call<Request, Response>(
        _ service: BackendService, _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request,
        idempotent: Bool, metadata: Metadata
    ) async throws -> Response {
        guard let client = clients[service] else { throw RPCError(code: .unavailable, message: "no client") }
        return try await client.unary(
            method, request: request, deadline: settings.deadline,
            idempotent: idempotent, metadata: metadata)
    }

    public func isServing(_ service: BackendService) async -> Bool {
        guard let client = clients[service] else { return false }
        let response = try? await client.unary(
            HealthService.check, request: HealthCheckRequest(),
            deadline: settings.healthDeadline, idempotent: true)
        return response?.status == .serving
    }
}
