import BuildInfo
import Configuration
import Foundation
import GRPC
import GRPCHealth
import HTTPServer
import NameResolution
import NetworkIO
import Observability
import PostgresStorage
import RuntimeMetrics
import ServiceContracts
import ServiceIdentity
import ServiceTransport
import TraceExport

/// The composition root every gRPC service shares: answer `--version`, read configuration, open the database
/// (failing fast), serve gRPC with health, watch the database for readiness, sweep the tables the service owns, run
/// until SIGTERM or SIGINT, drain, exit.
public enum ServiceMain {
    /// Runs the service `Configuration` names and exits the process: 0 after a clean shutdown, 1 when the listener cannot be opened (or
    /// the database does not answer within `DATABASE_WAIT_TIMEOUT`), 2 for a bad configuration value. The service
    /// reads its own variables only, as its `Configuration` says.
    ///
    /// `callers` says which services may call which of its methods (health is open to every caller); a
    /// registered method without a rule stops the service at start, and with mutual TLS every call is checked.
    /// `register` adds the service's methods to the server, with the repositories and background work they use
    /// (``ServiceContext/sweep(_:settings:)`` for the tables whose ended rows the service deletes).
    public static func run<Configuration: ServiceConfiguration>(
        configuration: Configuration.Type, callers: [CallerPolicy.Rule],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        register: @Sendable (GRPCServer, ServiceContext, Configuration) throws -> Void
    ) async -> Never {
        let name = Configuration.service.rawValue
        BuildInfo.answerVersionRequest(program: name)
        let logger = Observability.Logger(service: name)
        // Handlers first: a SIGTERM that arrives while the service starts (right after it listens) is kept and
        // answered with a drain and status 0, not the default action's death.
        let signals = try? SignalWaiter(signals: [SIGTERM, SIGINT])
        let serviceConfiguration: Configuration
        let databaseURL: String
        do {
            serviceConfiguration = try Configuration(EnvironmentReader(environment))
            databaseURL = try serviceConfiguration.process.requireDatabaseURL()
            do {
                try PostgresStorage.checkURL(databaseURL)
            } catch {
                throw ConfigurationError(variable: "DATABASE_URL", problem: error.description)
            }
        } catch {
            logger.error("configuration.invalid", ["detail": String(describing: error)])
            exitWithMessage(name, "\(error)", status: 2)
        }
        let configuration = serviceConfiguration.process

        let transport: GRPCTransportSecurity
        do {
            transport = try GRPCTransportSecurity(transport: configuration.grpcTransport, logger: logger)
        } catch {
            logger.error("configuration.invalid", ["detail": String(describing: error)])
            exitWithMessage(name, "\(error)", status: 2)
        }

        let metrics = MetricsRegistry()
        BuildInfo.current.record(in: metrics)
        let storage = PostgresStorage(
            url: databaseURL, poolSize: configuration.databasePoolSize, applicationName: name, metrics: metrics)

        RuntimeProbe(service: name, metrics: metrics).start()
        let exporter = OTLPExporter(
            configuration: configuration.tracing, service: name, metrics: metrics, logger: logger)
        exporter?.start()
        let tracer = exporter?.tracer(sampleRatio: configuration.tracing.sampleRatio) ?? .off
        let context = ServiceContext(
            name: name, logger: logger, metrics: metrics, database: storage, tracer: tracer)
        let address = configuration.listen
        let socketAddress: SocketAddress
        do {
            socketAddress = try AddressResolution.resolve(address, variable: configuration.listenVariable)
        } catch {
            exitWithMessage(name, "\(error)", status: 2)
        }
        let policy = CallerPolicy(
            trustDomain: transport.trustDomain, rules: callers, openPaths: HealthService.paths)
        var serverConfiguration = GRPCServerConfiguration(address: socketAddress)
        serverConfiguration.logger = logger
        serverConfiguration.tls = transport.serverTLS
        serverConfiguration.authorizer = ServiceCallAuthorizer(
            policy: policy, service: name, logger: logger, metrics: metrics)
        if let threads = configuration.eventLoopThreads { serverConfiguration.threadCount = threads }
        let server = GRPCServer(configuration: serverConfiguration)
        let health = HealthService()
        // Not ready until the database has answered (watchDatabase); liveness is SERVING from the start.
        health.setDependency("database", available: false)
        health.register(on: server)
        do {
            try register(server, context, serviceConfiguration)
        } catch let error as ConfigurationError {
            // A value only the service can judge (a policy the verifier cannot apply): a bad configuration.
            logger.error("configuration.invalid", ["detail": String(describing: error)])
            exitWithMessage(name, "\(error)", status: 2)
        } catch {
            exitWithMessage(name, "startup failed: \(error)", status: 1)
        }
        let uncovered = server.registeredPaths.subtracting(policy.coveredPaths)
        guard uncovered.isEmpty else {
            exitWithMessage(name, "no caller rule for \(uncovered.sorted().joined(separator: ", "))", status: 1)
        }
        let healthServer = configuration.grpcHealthListen.map { address in
            plaintextHealthServer(address, name: name, health: health, logger: logger)
        }

        let watcher = Task.detached {
            await watchDatabase(
                storage: storage, health: health, logger: logger, metrics: metrics, service: name,
                startLimit: configuration.databaseWaitTimeout)
        }
        do {
            let bound = try server.start()
            logger.info("service.started", ["listen": "\(bound)"])
        } catch {
            exitWithMessage(name, "cannot listen on \(address): \(error)", status: 1)
        }
        if let healthServer {
            do {
                let bound = try healthServer.start()
                logger.info("health.started", ["listen": "\(bound)", "tls": "off"])
            } catch {
                exitWithMessage(name, "GRPC_HEALTH_LISTEN: cannot listen: \(error)", status: 1)
            }
        }
        var operations: HTTPServer?
        if let metricsAddress = configuration.metricsListen {
            let metricsSocketAddress: SocketAddress
            do {
                metricsSocketAddress = try AddressResolution.resolve(metricsAddress, variable: "METRICS_LISTEN")
            } catch {
                exitWithMessage(name, "\(error)", status: 2)
            }
            var httpConfiguration = HTTPServerConfiguration(address: metricsSocketAddress)
            httpConfiguration.threadCount = 1
            let endpoint = HTTPServer(
                configuration: httpConfiguration, responder: OperationsEndpoint(metrics: metrics, health: health))
            do {
                let bound = try endpoint.start()
                logger.info("metrics.started", ["listen": "\(bound)"])
            } catch {
                exitWithMessage(name, "METRICS_LISTEN: cannot listen on \(metricsAddress): \(error)", status: 1)
            }
            operations = endpoint
        }
        context.background { await transport.watchForRotation(metrics: metrics, service: name) }
        await waitForTerminationSignal(signals)
        logger.info("service.stopping")
        // Shutdown blocks while calls drain; it runs on a thread of its own, not a cooperative one.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread { [operations] in
                server.shutdown()
                healthServer?.shutdown()
                operations?.shutdown()
                done.resume()
            }.start()
        }
        // Background work (a sweep batch, the last last-use batch) finishes before the pool goes.
        await context.backgroundTasks.cancelAndWait()
        watcher.cancel()
        storage.shutdown()
        // The last calls' spans go out before the process ends.
        exporter?.stop()
        logger.info("service.stopped")
        endProcess(0)
    }

    /// A plaintext gRPC server that serves `grpc.health.v1` and nothing else, for probes that cannot speak TLS
    /// (Kubernetes' native gRPC probe). It reports what the main server's health reports.
    static func plaintextHealthServer(
        _ address: ServiceAddress, name: String, health: HealthService, logger: Observability.Logger
    ) -> GRPCServer {
        let socketAddress: SocketAddress
        do {
            socketAddress = try AddressResolution.resolve(address, variable: "GRPC_HEALTH_LISTEN")
        } catch {
            exitWithMessage(name, "\(error)", status: 2)
        }
        var configuration = GRPCServerConfiguration(address: socketAddress)
        configuration.threadCount = 1
        configuration.logger = logger
        configuration.drainTimeoutNanoseconds = 1_000_000_000
        let server = GRPCServer(configuration: configuration)
        health.register(on: server)
        return server
    }

    /// Ends the process without running its exit handlers. exit() would run them on this thread while the
    /// client's and the pool's loop threads are still winding down: OpenSSL's OPENSSL_cleanup (registered with
    /// atexit) then races the exiting threads' OpenSSL thread-local cleanup and crashed a drained replica now and
    /// then (SIGSEGV inside OPENSSL_cleanup from exit, exit status 139 instead of 0). Nothing is left to flush: the
    /// logger writes each line with write(2).
    static func endProcess(_ status: Int32) -> Never {
        _exit(status)
    }

    /// Checks the database and reports it as a health dependency, so a replica whose database is gone (or
    /// answers only as a standby) reports NOT_SERVING and load balancers stop sending it work; the check after a
    /// failover also drops connections to a node that no longer takes writes.
    ///
    /// While the database answers it is checked every two seconds. Until it first answers, and after it was lost,
    /// it is tried again with a backoff from 100 ms to 2 s. A service that has not reached it `startLimit` seconds
    /// after start exits with status 1, naming `DATABASE_URL` (password masked); with no limit it keeps waiting.
    static func watchDatabase(
        storage: PostgresStorage, health: HealthService, logger: Observability.Logger, metrics: MetricsRegistry,
        service: String, startLimit: Double?
    ) async {
        let started = ContinuousClock.now
        var available = false
        var everAvailable = false
        var backoff = Duration.milliseconds(100)
        var lastFailure = ""
        while !Task.isCancelled {
            let now: Bool
            do {
                try await storage.checkConnectivity()
                now = true
            } catch {
                now = false
                if error.description != lastFailure {
                    logger.warning("database.unreachable", ["detail": error.description])
                }
                lastFailure = error.description
            }
            if now != available {
                available = now
                health.setDependency("database", available: now)
                if now {
                    let waited = ContinuousClock.now - started
                    logger.info(
                        "database.available",
                        everAvailable
                            ? [:]
                            : ["waited_seconds": "\(waited.components.seconds)"])
                    lastFailure = ""
                } else {
                    logger.error("database.unavailable")
                }
            }
            everAvailable = everAvailable || now
            if !everAvailable, let startLimit, ContinuousClock.now - started >= .milliseconds(Int64(startLimit * 1000))
            {
                exitWithMessage(
                    service,
                    "DATABASE_URL: the database at \(storage.redactedURL) did not answer within DATABASE_WAIT_TIMEOUT "
                        + "(\(startLimit) s): \(lastFailure)", status: 1)
            }
            let statistics = storage.load
            metrics.set(
                "db_pool_busy_connections", help: "Connections running a statement.", labels: ["service": service],
                to: Double(statistics.busy))
            metrics.set(
                "db_pool_waiting_jobs", help: "Statements waiting for a connection.", labels: ["service": service],
                to: Double(statistics.waiting))
            metrics.setCounter(
                "db_connections_opened_total", help: "Database connections opened, replacements included.",
                labels: ["service": service], to: Double(statistics.opened))
            metrics.set(
                "database_up", help: "1 while the database answers this replica, else 0.", labels: ["service": service],
                to: now ? 1 : 0)
            metrics.set(
                "service_ready", help: "1 while this replica reports SERVING (ready for calls), else 0.",
                labels: ["service": service], to: health.status(of: "") == .serving ? 1 : 0)
            if now {
                backoff = .milliseconds(100)
                try? await Task.sleep(for: .seconds(2))
            } else {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }

    static func exitWithMessage(_ name: String, _ message: String, status: Int32) -> Never {
        FileHandle.standardError.write(Data("\(name): \(message)\n".utf8))
        // The pool's threads may be running here too (a database that could not be reached).
        endProcess(status)
    }

    /// Suspends until SIGTERM or SIGINT arrives.
    static func waitForTerminationSignal(_ signals: SignalWaiter?) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                guard let signals else {
                    // Without a signal handler the process still ends on SIGTERM by default.
                    while true { sleep(3600) }
                }
                _ = signals.wait()
                done.resume()
            }.start()
        }
    }
}
