import Domain
import Foundation
import GRPC
import Observability
import PostgresStorage
import Protobuf
import ServiceContracts

/// The server interceptor every service registers its methods with (`register(on: server, interceptors:
/// [ServerInstrumentation(context)])`): each call gets a server span continuing the caller's trace, the caller's
/// audit context (request ID and client address) for the events it logs, and `rpc_server_duration_seconds` by method
/// and outcome. The handler works in domain terms: a thrown `DomainError` becomes its gRPC status with the
/// `error-code` and `error-reason` trailers; a database failure the handler did not turn into a domain error is
/// logged with its SQLSTATE and answered as `PostgresStorage.domainError(forUnmapped:)` maps it (`unavailable`, to be
/// tried again); any other error is logged and answered with a bare INTERNAL, so no detail leaks.
public struct ServerInstrumentation: GRPCServerInterceptor {
    /// The service's name, for the metric's `service` label.
    let name: String
    let logger: Logger
    let metrics: MetricsRegistry
    let tracer: Tracer

    /// The instrumentation of the service `context` was built for.
    public init(_ context: ServiceContext) {
        name = context.name
        logger = context.logger
        metrics = context.metrics
        tracer = context.tracer
    }

    public func intercept<Request, Response>(
        _ request: Request, context call: ServerContext, method descriptor: GRPCMethodDescriptor<Request, Response>,
        next handler: @Sendable (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        let method = descriptor.name
        let spanName = String(descriptor.path.dropFirst())
        let rpcService = String(spanName.prefix { $0 != "/" })
        let started = ContinuousClock.now
        var outcome = "ok"
        // The caller's trace, when it sent one (bounded: a traceparent is 55 characters).
        let parent = call.metadata[TraceContext.headerName].flatMap {
            $0.utf8.count <= 128 ? TraceContext.parse(traceparent: $0) : nil
        }
        let span = tracer.startSpan(spanName, kind: .server, continuing: parent)
        defer {
            let elapsed = started.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            metrics.observe(
                "rpc_server_duration_seconds", help: "Time spent handling RPCs.",
                labels: ["service": name, "method": method, "outcome": outcome], seconds)
            if span.isRecording {
                span.set("rpc.system", "grpc")
                span.set("rpc.service", rpcService)
                span.set("rpc.method", method)
                span.set("rpc.outcome", outcome)
                if outcome != "ok" { span.fail(outcome) }
            }
            span.end()
        }
        // Bounded: the gateway sends a request ID of at most 128 characters and an address; anything longer is
        // not ours and is dropped rather than logged.
        let audit = AuditContext(
            requestID: call.metadata[AuditContext.requestIDKey].flatMap { $0.utf8.count <= 128 ? $0 : nil },
            clientAddress: call.metadata[AuditContext.clientAddressKey].flatMap { $0.utf8.count <= 64 ? $0 : nil })
        do {
            return try await ActiveSpan.$current.withValue(span.active) {
                try await AuditContext.$current.withValue(audit) { try await handler(request, call) }
            }
        } catch let error as DomainError {
            outcome = error.code.rawValue
            if error.code == .unavailable {
                logger.warning("rpc.dependency_unavailable", ["method": method, "detail": error.message])
            }
            throw ServiceErrors.rpcError(error)
        } catch let error as RPCError {
            outcome = "rpc_\(error.code)"
            throw error
        } catch {
            if let mapped = PostgresStorage.domainError(forUnmapped: error) {
                outcome = "database_failed"
                logger.error("rpc.database_failed", ["method": method, "error": String(describing: error)])
                throw ServiceErrors.rpcError(mapped)
            }
            outcome = "internal"
            logger.error("rpc.failed", ["method": method, "error": String(describing: error)])
            throw RPCError(code: .internal, message: "internal error")
        }
    }
}
