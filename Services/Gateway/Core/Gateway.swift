import BuildInfo
import Configuration
import HTTPServer
import NameResolution
import NetworkIO
import Observability
import PasskeyPolicy
import PasskeyProviders
import RuntimeMetrics
import ServiceContracts
import ServiceTransport
import Synchronization
import TraceExport

#if canImport(Glibc)
    import Glibc
#endif

/// The whole gateway, ready to start in-process (tests) or from `main`: the HTTP server on the configured
/// address (or any given one), the routes, and gRPC clients for the three services.
public final class Gateway: Sendable {
    /// The routes; its ``GatewayApplication/metrics`` is what `/metrics` serves.
    public let application: GatewayApplication
    private let server: HTTPServer
    /// The admin API's server, on `ADMIN_LISTEN` when it is set.
    private let adminServer: HTTPServer?
    /// `/metrics`, on `GATEWAY_METRICS_LISTEN` when it is set.
    private let metricsServer: HTTPServer?
    private let backends: GRPCServiceBackends?
    /// The services' connections' TLS, when the gateway made its own clients.
    private let transport: GRPCTransportSecurity?
    private let rotationWatcher = Mutex<Task<Void, Never>?>(nil)
    private let logger: Observability.Logger
    /// The event loops' lag and the process's CPU and memory, in the gateway's metrics.
    private let probe: RuntimeProbe
    /// Sends the sampled spans to `OTEL_EXPORTER_OTLP_ENDPOINT`, when it is set.
    private let exporter: OTLPExporter?

    /// Builds the gateway for `configuration`. `listenAddress` overrides `GATEWAY_LISTEN` (port 0 for any free
    /// port); `backends` replaces the gRPC clients (tests).
    public init(
        configuration: GatewayConfiguration, logger: Observability.Logger,
        listenAddress: SocketAddress? = nil, backends: (any ServiceBackends)? = nil,
        backendSettings: BackendCallSettings = BackendCallSettings(),
        serverSettings: (inout HTTPServerConfiguration) -> Void = { _ in },
        settings: GatewaySettings = GatewaySettings()
    ) throws {
        if case .failure(let failure) = PasskeyProviderCatalog.shipped {
            throw GatewayStartError(failure.description)
        }
        guard !OpenAPIDocument.bytes.isEmpty else {
            throw GatewayStartError("the openapi.json resource is missing from the GatewayCore bundle")
        }
        let address =
            try listenAddress ?? AddressResolution.resolve(configuration.gatewayListen, variable: "GATEWAY_LISTEN")
        var serverConfiguration = HTTPServerConfiguration(address: address)
        if let threads = configuration.eventLoopThreads { serverConfiguration.threadCount = threads }
        if let certificate = configuration.gatewayTLSCertificate, let key = configuration.gatewayTLSKey {
            do {
                serverConfiguration.tls = try HTTPServerConfiguration.tls(certificatePath: certificate, keyPath: key)
            } catch {
                throw ConfigurationError(
                    variable: "GATEWAY_TLS_CERTIFICATE", problem: "the certificate and key cannot be loaded: \(error)")
            }
        }
        serverSettings(&serverConfiguration)
        let grpcBackends: GRPCServiceBackends?
        if backends == nil {
            let transport = try GRPCTransportSecurity(transport: configuration.grpcTransport, logger: logger)
            grpcBackends = try GRPCServiceBackends(
                configuration: configuration, settings: backendSettings, logger: logger, transport: transport)
            self.transport = transport
        } else {
            grpcBackends = nil
            self.transport = nil
        }
        self.backends = grpcBackends
        guard let chosen: any ServiceBackends = backends ?? grpcBackends else {
            throw ConfigurationError(variable: "CHALLENGE_SERVICE_ADDRESSES", problem: "no backends")
        }
        // The policy the options offer must be one verification can apply (PASSKEY_ALGORITHMS names supported ones).
        _ = try PasskeyPolicy(configuration.passkeyPolicy)
        // Origins that no device would accept stop the gateway; an RP ID no device outside this machine can use is
        // said loudly, here and in /readyz.
        try configuration.checkOrigins()
        if let warning = configuration.relyingPartyIDWarning {
            logger.log(
                .warning, "gateway.relying_party_id_localhost",
                fields: [("listen", configuration.gatewayListen.description), ("problem", warning)])
        }
        let metrics = MetricsRegistry()
        BuildInfo.current.record(in: metrics)
        exporter = OTLPExporter(
            configuration: configuration.tracing, service: "gateway", metrics: metrics, logger: logger)
        application = GatewayApplication(
            configuration: configuration, backends: chosen, logger: logger, metrics: metrics,
            tracer: exporter?.tracer(sampleRatio: configuration.tracing.sampleRatio) ?? .off, settings: settings)
        server = HTTPServer(configuration: serverConfiguration, responder: application)
        if let adminListen = configuration.adminListen {
            guard !AdminOpenAPIDocument.bytes.isEmpty else {
                throw GatewayStartError("the openapi-admin.json resource is missing from the GatewayCore bundle")
            }
            // Plain HTTP on its own address (keep it on a private network or loopback); the public listener's TLS
            // settings do not apply to it.
            adminServer = try Self.sideListener(
                adminListen, variable: "ADMIN_LISTEN", responder: AdminApplication(gateway: application))
        } else {
            adminServer = nil
        }
        metricsServer = try configuration.gatewayMetricsListen.map {
            try Self.sideListener($0, variable: "GATEWAY_METRICS_LISTEN", responder: MetricsEndpoint(metrics: metrics))
        }
        probe = RuntimeProbe(service: "gateway", metrics: metrics)
        self.logger = logger
    }

    /// A listener beside the public one (the admin API, the metrics): plain HTTP on `listen`, one thread.
    private static func sideListener(_ listen: ServiceAddress, variable: String, responder: any HTTPResponder) throws
        -> HTTPServer
    {
        var configuration = HTTPServerConfiguration(
            address: try AddressResolution.resolve(listen, variable: variable))
        configuration.threadCount = 1
        return HTTPServer(configuration: configuration, responder: responder)
    }

    /// Starts listening; returns the bound address.
    @discardableResult
    public func start() throws -> SocketAddress {
        let address = try server.start()
        if let adminServer {
            let adminAddress = try adminServer.start()
            logger.log(.info, "gateway.admin_started", fields: [("address", adminAddress.description)])
        }
        if let metricsServer {
            let metricsAddress = try metricsServer.start()
            logger.log(.info, "gateway.metrics_started", fields: [("address", metricsAddress.description)])
        }
        probe.start()
        exporter?.start()
        if let transport {
            let metrics = application.metrics
            rotationWatcher.withLock {
                $0 = Task.detached { await transport.watchForRotation(metrics: metrics, service: "gateway") }
            }
        }
        logger.log(
            .info, "gateway.started",
            fields: [("address", address.description), ("tls", server.configuration.tls == nil ? "off" : "on")])
        return address
    }

    /// Drains and stops the server, then closes the service connections. Blocks the calling thread.
    public func shutdown() {
        logger.info("gateway.draining")
        server.shutdown()
        adminServer?.shutdown()
        metricsServer?.shutdown()
        backends?.close()
        rotationWatcher.withLock { $0?.cancel() }
        probe.stop()
        exporter?.stop()
        logger.info("gateway.stopped")
    }

    /// Starts, serves until SIGTERM or SIGINT, then drains and returns. Blocks the calling thread.
    public func run() throws {
        let signals = try SignalWaiter(signals: [SIGTERM, SIGINT])
        try start()
        let signal = signals.wait()
        logger.log(.info, "gateway.signal", fields: [("signal", String(signal))])
        shutdown()
    }
}

/// A reason the gateway cannot start that is not a configuration value: a file of its own installation is missing.
public struct GatewayStartError: Error, CustomStringConvertible {
    /// What is missing.
    public let description: String

    init(_ description: String) { self.description = description }
}
