import HTTPMessages
import Observability

/// The server span of each request: a trace is started here, or continued from the request's `traceparent`, and every
/// call to the services and every log line inside it names the trace; the response's `traceresponse` names the span.
struct RequestTracing<Route: RouteDeclaration>: RouteMiddleware {
    let tracer: Tracer
    /// Whose sampled `traceparent` is taken as given: a trusted proxy's.
    let addressResolver: ClientAddressResolver

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        let request = context.request
        let parent = request.headers[TraceContext.headerName].flatMap {
            $0.utf8.count <= 128 ? TraceContext.parse(traceparent: $0) : nil
        }
        // A sampled traceparent is taken as given only from a trusted proxy; anyone else's trace is continued, and
        // sampled at the configured ratio.
        let span = tracer.startSpan(
            context.pattern == nil ? request.method : context.routeName, kind: .server, continuing: parent,
            trustingSampling: parent == nil || addressResolver.isTrustedPeer(request.remoteAddress))
        var response = try await ActiveSpan.$current.withValue(span.active) { try await next(context) }
        if span.isRecording {
            span.set("http.request.method", request.method)
            span.set("http.response.status_code", response.status)
            if let pattern = context.pattern { span.set("http.route", pattern) }
            if response.status >= 500 { span.fail("HTTP \(response.status)") }
        }
        span.end()
        response.headers.set("traceresponse", span.context.traceparent)
        return response
    }
}
