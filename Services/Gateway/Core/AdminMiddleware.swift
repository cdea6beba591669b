import AdminAccess
import HTTPMessages

/// Reads the admin token an admin route declares it takes (``AdminRoute/authenticated``): 401 without one, or with
/// text that cannot be one (no call is made for it). session-service checks the token and its scopes on each call.
struct AdminTokenAdmission: RouteMiddleware {
    func handle(_ context: RequestContext<AdminRoute>, next: MiddlewareNext<AdminRoute>) async throws -> HTTPResponse {
        guard context.route.authenticated else { return try await next(context) }
        guard let bearer = BearerToken.read(context.request.headers["authorization"]),
            AdminTokenSecret(presented: bearer) != nil
        else { throw APIProblem.unauthenticated("A valid admin token is required.") }
        context.adminToken = bearer
        return try await next(context)
    }
}

/// Reads an admin route's query into ``RequestContext/query``, refusing a name the route does not declare
/// (``AdminRoute/query``); the open route takes whatever it is sent.
struct AdminQueryPolicy: RouteMiddleware {
    func handle(_ context: RequestContext<AdminRoute>, next: MiddlewareNext<AdminRoute>) async throws -> HTTPResponse {
        guard context.route.authenticated else { return try await next(context) }
        context.query = try AdminQuery(context.request.query)
        try context.query.allowOnly(context.route.query)
        return try await next(context)
    }
}

/// Refuses a path parameter longer than `byteLimit` bytes, in the order the route's pattern names them: 400
/// `invalid_request` naming the parameter.
struct PathParameterLimit<Route: RouteDeclaration>: RouteMiddleware {
    let byteLimit: Int

    func handle(_ context: RequestContext<Route>, next: MiddlewareNext<Route>) async throws -> HTTPResponse {
        if let pattern = context.pattern {
            for name in RoutePattern(pattern).parameterNames where context.parameter(name).utf8.count > byteLimit {
                throw APIProblem.invalidRequest("\(name) is missing or too long.")
            }
        }
        return try await next(context)
    }
}
