import Domain
import GRPC
import Observability
import Protobuf
import RateLimiting
import ServiceContracts

/// Where a backend call comes from: the request it serves, as the services' audit events and the gateway's logs
/// name it.
struct BackendCallOrigin: Sendable {
    let requestID: String
    let clientAddress: String
    /// The route, as logs name it.
    let routeName: String
}

extension RequestContext {
    /// Where this request's calls to the services come from.
    var origin: BackendCallOrigin {
        BackendCallOrigin(requestID: requestID, clientAddress: clientAddress, routeName: routeName)
    }
}

/// The gateway's client interceptor: every call a request makes to a service passes through it on its way to
/// ``ServiceBackends``. It sends the request's ID, client address and trace; starts the call's client span; counts and
/// times the call by service, method and outcome (`gateway_backend_calls_total`,
/// `gateway_backend_call_duration_seconds`); counts failed WebAuthn checks (`gateway_verification_failures_total`);
/// logs a failure (at most one line per service and status a second); and maps it to the problem apps see.
final class BackendCallInterceptor: Sendable {
    let backends: any ServiceBackends
    private let metrics: MetricsRegistry
    private let logger: Logger
    /// During an outage every request fails the same way: one line per service and status per second is enough.
    private let failureLog = LogThrottle(interval: 1)

    init(backends: any ServiceBackends, metrics: MetricsRegistry, logger: Logger) {
        self.backends = backends
        self.metrics = metrics
        self.logger = logger
    }

    /// Calls `descriptor` on `service` for a request from `origin`; `ceremony` says how a failed WebAuthn check reads.
    func intercept<Request, Response>(
        _ service: BackendService, _ descriptor: GRPCMethodDescriptor<Request, Response>, _ request: Request,
        origin: BackendCallOrigin, idempotent: Bool, ceremony: Ceremony?
    ) async throws -> Response {
        let method = descriptor.name
        try Task.checkCancellation()
        let started = TokenBucketLimiter.monotonicSeconds()
        func record(_ outcome: String) {
            metrics.increment(
                "gateway_backend_calls_total", help: "Calls to the services by service, method and outcome.",
                labels: ["service": service.rawValue, "method": method, "outcome": outcome])
            metrics.observe(
                "gateway_backend_call_duration_seconds", help: "Latency of calls to the services.",
                labels: ["service": service.rawValue, "method": method],
                TokenBucketLimiter.monotonicSeconds() - started)
        }
        do {
            // The services log the audit events they decide, with where the request came from.
            var metadata = Metadata()
            metadata.add(AuditContext.requestIDKey, origin.requestID)
            metadata.add(AuditContext.clientAddressKey, origin.clientAddress)
            // The service's span is a child of this call's span when the trace is sampled, else of the request's.
            let span = ActiveSpan.startChild(String(descriptor.path.dropFirst()), kind: .client)
            if let traced = span?.context ?? ActiveSpan.current?.context {
                metadata.add(TraceContext.headerName, traced.traceparent)
            }
            span?.set("rpc.system", "grpc")
            span?.set("rpc.method", method)
            span?.set("peer.service", service.rawValue)
            defer { span?.end() }
            do {
                let response = try await backends.call(
                    service, descriptor, request, idempotent: idempotent, metadata: metadata)
                record("ok")
                return response
            } catch let error as RPCError {
                span?.set("rpc.grpc.status_code", error.code.rawValue)
                span?.fail(String(describing: error.code))
                throw error
            }
        } catch let error as RPCError {
            let domain = ServiceErrors.domainError(from: error)
            record(domain?.code.rawValue ?? String(describing: error.code).lowercased())
            let problem = ProblemMapping.problem(for: error, ceremony: ceremony)
            if let ceremony, problem.code == "verification_failed" || problem.code == "invalid_credentials" {
                metrics.increment(
                    "gateway_verification_failures_total", help: "WebAuthn verification failures by reason.",
                    labels: [
                        "ceremony": ceremony == .registration ? "registration" : "authentication",
                        "reason": problem.reason ?? "unspecified",
                    ])
            }
            if domain == nil,
                let suppressed = failureLog.admit(
                    "\(service.rawValue) \(error.code)", at: TokenBucketLimiter.monotonicSeconds())
            {
                logger.log(
                    .warning, "backend.call_failed",
                    fields: [
                        ("request.id", origin.requestID), ("route", origin.routeName),
                        ("backend.service", service.rawValue), ("backend.method", method),
                        ("grpc.status", String(describing: error.code)), ("message", error.message),
                        ("suppressed", String(suppressed)),
                    ])
            }
            throw problem
        } catch {
            record("error")
            throw APIProblem.internalError
        }
    }

    /// A typed client of challenge-service for one request's calls.
    func challengeService(for origin: BackendCallOrigin) -> ChallengeServiceClient<BackendClient> {
        ChallengeServiceClient(BackendClient(interceptor: self, service: .challenge, origin: origin))
    }

    /// A typed client of verification-service for one request's calls; `ceremony` says how a failed check reads.
    func verificationService(
        for origin: BackendCallOrigin, ceremony: Ceremony? = nil
    ) -> VerificationServiceClient<BackendClient> {
        VerificationServiceClient(
            BackendClient(interceptor: self, service: .verification, origin: origin, ceremony: ceremony))
    }

    /// A typed client of session-service for one request's calls.
    func sessionService(for origin: BackendCallOrigin) -> SessionServiceClient<BackendClient> {
        SessionServiceClient(BackendClient(interceptor: self, service: .session, origin: origin))
    }

    /// A typed client of session-service's admin API for one admin call.
    func adminService(for origin: BackendCallOrigin) -> AdminServiceClient<BackendClient> {
        AdminServiceClient(BackendClient(interceptor: self, service: .session, origin: origin))
    }
}

/// One request's calls to one service, each through the ``BackendCallInterceptor``: what the generated typed
/// clients (`ChallengeServiceClient`, …) call through.
struct BackendClient: GRPCUnaryCaller {
    let interceptor: BackendCallInterceptor
    let service: BackendService
    let origin: BackendCallOrigin
    var ceremony: Ceremony? = nil

    func call<Request, Response>(
        _ method: GRPCMethodDescriptor<Request, Response>, _ request: Request, idempotent: Bool
    ) async throws -> Response {
        try await interceptor.intercept(
            service, method, request, origin: origin, idempotent: idempotent, ceremony: ceremony)
    }
}
