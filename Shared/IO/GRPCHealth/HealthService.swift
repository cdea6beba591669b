import GRPC
import Synchronization

/// `grpc.health.v1.Health` (Check and Watch). The status reported follows readiness: a service reports what was
/// set for it, except that everything is NOT_SERVING while the server drains or a required dependency is down.
/// The one exception is ``livenessService``, which is SERVING for as long as the server answers at all: a liveness
/// probe asks that, so that an outage of the database makes replicas unready but does not restart them.
public final class HealthService: Sendable {
    private struct Watcher {
        let service: String
        let continuation: AsyncStream<ServingStatus>.Continuation
    }

    private struct State {
        var declared: [String: ServingStatus] = ["": .serving, HealthService.livenessService: .serving]
        var dependenciesDown: Set<String> = []
        var draining = false
        var watchers: [Int: Watcher] = [:]
        var nextWatcherID = 0

        func effective(_ service: String) -> ServingStatus? {
            guard let status = declared[service] else { return nil }
            if service == HealthService.livenessService { return status }
            if draining || !dependenciesDown.isEmpty { return .notServing }
            return status
        }
    }

    private let state = Mutex(State())

    /// The service name a liveness probe asks for (Kubernetes: `grpc: {port: …, service: liveness}`).
    public static let livenessService = "liveness"
    /// The Check method, the one a client calls.
    public static let check = GRPCMethodDescriptor<HealthCheckRequest, HealthCheckResponse>(
        service: "grpc.health.v1.Health", name: "Check")
    /// The Watch method path.
    public static let watchPath = "/grpc.health.v1.Health/Watch"
    /// Both methods' paths.
    public static let paths: Set<String> = [check.path, watchPath]

    /// Creates the service with the whole server ("") SERVING.
    public init() {}

    /// Registers Check and Watch on `server` and turns NOT_SERVING when the server starts to drain.
    public func register(on server: GRPCServer) {
        server.register(
            GRPCUnaryMethod(Self.check) { [self] request, _ in
                guard let status = status(of: request.service) else {
                    throw RPCError(code: .notFound, message: "unknown service")
                }
                return HealthCheckResponse(status: status)
            })
        server.register(
            GRPCServerStreamingMethod(path: Self.watchPath) {
                [self] (request: HealthCheckRequest, _: ServerContext, writer: ServerStreamWriter<HealthCheckResponse>)
                in
                try await watch(request.service) { status in
                    try await writer.write(HealthCheckResponse(status: status))
                }
            })
        server.onShutdown { [self] in enterDraining() }
    }

    /// The status reported for `service` now; nil when the service is unknown.
    public func status(of service: String) -> ServingStatus? {
        state.withLock { $0.effective(service) }
    }

    /// Declares the status of a service ("" is the whole server).
    public func setStatus(_ status: ServingStatus, forService service: String = "") {
        update { $0.declared[service] = status }
    }

    /// Marks a required dependency (a database, a downstream service) as up or down.
    public func setDependency(_ name: String, available: Bool) {
        update { state in
            if available {
                state.dependenciesDown.remove(name)
            } else {
                state.dependenciesDown.insert(name)
            }
        }
    }

    /// Reports NOT_SERVING for everything from now on (called when shutdown starts).
    public func enterDraining() {
        update { $0.draining = true }
    }

    private func update(_ change: (inout State) -> Void) {
        let (notifications, draining) = state.withLock { state -> ([(Watcher, ServingStatus)], Bool) in
            change(&state)
            return (state.watchers.values.map { ($0, state.effective($0.service) ?? .serviceUnknown) }, state.draining)
        }
        for (watcher, status) in notifications {
            watcher.continuation.yield(status)
            // Watches end once the server drains, so that they do not hold the shutdown up.
            if draining { watcher.continuation.finish() }
        }
    }

    /// Sends the current status, then every change, until the caller goes away.
    private func watch(_ service: String, send: (ServingStatus) async throws -> Void) async throws {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ServingStatus.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> Int in
            let id = state.nextWatcherID
            state.nextWatcherID += 1
            state.watchers[id] = Watcher(service: service, continuation: continuation)
            continuation.yield(state.effective(service) ?? .serviceUnknown)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
        }
        defer {
            continuation.finish()
        }
        var last: ServingStatus?
        for await status in stream {
            try Task.checkCancellation()
            if status != last {
                try await send(status)
                last = status
            }
        }
    }
}
