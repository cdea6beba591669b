import ServiceContracts
import Observability
import Configuration
import GRPC
import GRPCHealth
import NetworkIO
import Protobuf

/// The three services the gateway calls.
public enum BackendService: String, Sendable, CaseIterable {
    case challenge = "challenge-service"
    case verification = "verification-service"
    case session = "session-service"
}

/// How the gateway reaches the services: one unary call at a time, and a health check per service. The real
/// implementation is ``GRPCServiceBackends``; tests may give any other.
public protocol ServiceBackends: Sendable {
    /// Calls `path` on `service`; throws ``RPCError`` when the call does not end with OK.
    /// - Parameter idempotent: whether the call may be retried on another replica after it may have run.
    func call<Request: ProtobufMessage, Response: ProtobufMessage>(
        _ service: BackendService, path: String, request: Request, responseType: Response.Type, idempotent: Bool
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

    /// Creates the clients and starts connecting; addresses must be numeric or resolvable host names.
    public init(
        challenge: [SocketAddress], verification: [SocketAddress], session: [SocketAddress],
        settings: BackendCallSettings = BackendCallSettings(), logger: Logger = .disabled
    ) throws {
        var configuration = GRPCClientConfiguration()
        configuration.threadCount = settings.threadsPerService
        configuration.initialBackoffNanoseconds = settings.initialBackoff.wholeNanoseconds
        configuration.maxBackoffNanoseconds = settings.maximumBackoff.wholeNanoseconds
        configuration.reconnectOnDemandAfterNanoseconds = settings.reconnectOnDemandAfter.wholeNanoseconds
        configuration.logger = logger
        clients = [
            .challenge: try GRPCClient(addresses: challenge, configuration: configuration),
            .verification: try GRPCClient(addresses: verification, configuration: configuration),
            .session: try GRPCClient(addresses: session, configuration: configuration),
        ]
        self.settings = settings
    }

    /// Creates the clients for the replica addresses of a configuration, resolving host names once.
    public convenience init(
        configuration: ServerConfiguration, settings: BackendCallSettings = BackendCallSettings(),
        logger: Logger = .disabled
    ) throws {
        try self.init(
            challenge: try configuration.challengeServiceAddresses.map {
                try AddressResolution.resolve($0, variable: "CHALLENGE_SERVICE_ADDRESSES")
            },
            verification: try configuration.verificationServiceAddresses.map {
                try AddressResolution.resolve($0, variable: "VERIFICATION_SERVICE_ADDRESSES")
            },
            session: try configuration.sessionServiceAddresses.map {
                try AddressResolution.resolve($0, variable: "SESSION_SERVICE_ADDRESSES")
            },
            settings: settings, logger: logger)
    }

    /// Closes every connection.
    public func close() {
        for client in clients.values { client.close() }
    }

    public func call<Request: ProtobufMessage, Response: ProtobufMessage>(
        _ service: BackendService, path: String, request: Request, responseType: Response.Type, idempotent: Bool
    ) async throws -> Response {
        guard let client = clients[service] else { throw RPCError(code: .unavailable, message: "no client") }
        return try await client.unary(
            path: path, request: request, responseType: responseType, deadline: settings.deadline,
            idempotent: idempotent)
    }

    public func isServing(_ service: BackendService) async -> Bool {
        guard let client = clients[service] else { return false }
        let response = try? await client.unary(
            path: HealthService.checkPath, request: HealthCheckRequest(), responseType: HealthCheckResponse.self,
            deadline: settings.healthDeadline, idempotent: true)
        return response?.status == .serving
    }
}
