import HTTPMessages
import Observability

/// The rest of a chain after one middleware: the next middleware, and after the last one the route's handler.
typealias MiddlewareNext<Route: RouteDeclaration> = @Sendable (RequestContext<Route>) async throws -> HTTPResponse

/// One step around a route's handler, in the shape of Hummingbird's `RouterMiddleware.handle(request, context,
/// next)` (the request travels inside the context): it reads what the route value declares, refuses by throwing the
/// ``APIProblem`` the client sees, adds what it learned to the context, or calls `next` and works on the response.
/// Both listeners build their chains from these (``GatewayApplication/middleware``,
/// ``AdminApplication/middleware``).
protocol RouteMiddleware<Declaration>: Sendable {
    /// The listener's route type, whose declarations the middleware reads.
    associatedtype Declaration: RouteDeclaration
    func handle(
        _ context: RequestContext<Declaration>, next: MiddlewareNext<Declaration>
    ) async throws -> HTTPResponse
}

/// Middleware in order, outermost first, ending in a route's handler: what a listener runs for every request.
///
/// The chain is composed once, when the listener is made: each middleware's `next` is the composed rest of the
/// chain, and the last `next` is the route's handler (``RequestContext/route``, called with
/// ``RequestContext/application``). A request makes no closure and looks nothing up on its way through, and each
/// middleware is called as its own type.
struct MiddlewareChain<Route: RouteDeclaration>: Sendable {
    /// One middleware around the rest of the chain.
    typealias Step = @Sendable (@escaping MiddlewareNext<Route>) -> MiddlewareNext<Route>

    /// The whole chain: the outermost middleware's call.
    let run: MiddlewareNext<Route>

    /// The chain of `steps`, outermost first (``step(_:)`` makes each, keeping its middleware's own type).
    init(_ steps: [Step]) {
        run = Self.composed(steps)
    }

    /// The chain of middleware known only as values of the protocol (tests that assemble chains of their own).
    init(_ middleware: [any RouteMiddleware<Route>]) {
        self.init(middleware.map { Self.step($0) })
    }

    /// `middleware` around the rest of a chain.
    static func step<Middleware: RouteMiddleware>(_ middleware: Middleware) -> Step
    where Middleware.Declaration == Route {
        { next in { context in try await middleware.handle(context, next: next) } }
    }

    private static func composed(_ steps: [Step]) -> MiddlewareNext<Route> {
        let handler: MiddlewareNext<Route> = { context in try await context.route.handle(context.application, context) }
        return steps.reversed().reduce(handler) { next, step in step(next) }
    }
}

/// Turns whatever the middleware inside it and the handler throw into the response a client sees: the problem's own
/// document, 499 when the client went away, a logged 500 for anything else. Where it sits in a chain divides the
/// middleware that only ever sees responses (outside) from the middleware that may refuse (inside).
struct ProblemResponses<Route: RouteDeclaration>: RouteMiddleware {
    let logger: Logger
    /// The log event of an unexpected failure (`request.failed`, `admin.request_failed`).
    let failureEvent: String

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        do {
            return try await next(context)
        } catch let problem as APIProblem {
            return problem.response
        } catch is CancellationError {
            // Nobody reads this: the client reset the stream. 499 (as nginx logs it) keeps it apart in metrics.
            return HTTPResponse(status: 499)
        } catch {
            logger.log(
                .error, failureEvent,
                fields: [
                    ("request.id", context.requestID), ("route", context.routeName),
                    ("error", String(describing: error)),
                ])
            return APIProblem.internalError.response
        }
    }
}
