import HTTPMessages
import ServiceContracts

/// A route of the admin API as one value: its method and path, whether it takes an admin token (every operation but
/// the document), the query parameters it accepts, the body it takes, and its handler. The admin middleware
/// (``AdminApplication/middleware``) enforces the limit, the token, the body and the query from the value before the
/// handler runs; the router and the check of the table against `openapi-admin.json` (every route documented with its
/// method, token, query and body, every documented operation routed) come from ``AdminApplication/routes``.
struct AdminRoute: RouteDeclaration {
    typealias Application = AdminApplication

    let method: String
    let path: String
    /// Whether the route takes an admin token; the open route (the document) also takes any query and body.
    let authenticated: Bool
    let query: Set<String>
    let body: RouteBody
    let handle: @Sendable (AdminApplication, RequestContext<AdminRoute>) async throws -> HTTPResponse

    /// A route; `body` `.none` (the default) refuses a body, `.json` takes a JSON object of at most
    /// ``AdminApplication/bodyLimit`` bytes.
    init(
        _ method: String, _ path: String, authenticated: Bool = true, query: Set<String> = [], body: RouteBody = .none,
        handle: @escaping @Sendable (AdminApplication, RequestContext<AdminRoute>) async throws -> HTTPResponse
    ) {
        self.method = method
        self.path = path
        self.authenticated = authenticated
        self.query = query
        self.body = body
        self.handle = handle
    }

    static func fallback(_ respond: @escaping @Sendable () throws -> HTTPResponse) -> AdminRoute {
        AdminRoute("", "", authenticated: false, body: .ignored) { _, _ in try respond() }
    }
}

/// A request to an admin route, as its middleware and handler see it: its admin token in
/// ``RequestContext/adminToken``, its query in ``RequestContext/query``.
typealias AdminContext = RequestContext<AdminRoute>

extension AdminApplication {
    /// The admin API's routes (docs/admin.md).
    static let routes: [AdminRoute] = [
        AdminRoute(
            "GET", "/admin/v1/accounts",
            query: [
                "email", "accountID", "credentialID", "externalID", "hasPassword", "hasPasskey", "disabled",
                "createdSince", "createdUntil", "after", "limit",
            ]
        ) { try await $0.findAccounts($1) },
        AdminRoute("GET", "/admin/v1/accounts/{accountID}") { try await $0.accountDetail($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}") { try await $0.eraseAccount($1) },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/disable") {
            try await $0.setAccountDisabled($1, disabled: true)
        },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/enable") {
            try await $0.setAccountDisabled($1, disabled: false)
        },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/password-reset") { try await $0.resetAccountPassword($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}/sessions") { try await $0.revokeSessions($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}/sessions/{sessionID}") { try await $0.revokeSessions($1) },
        AdminRoute(
            "DELETE", "/admin/v1/accounts/{accountID}/passkeys/{credentialID}", query: ["override", "recoveryEmail"]
        ) {
            try await $0.removePasskey($1)
        },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/recovery-email", query: ["email"]) {
            try await $0.sendAccountEmail($1, purpose: "recovery")
        },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/verification-email", query: ["email"]) {
            try await $0.sendAccountEmail($1, purpose: "verification")
        },
        AdminRoute("GET", "/admin/v1/audit-events", query: ["accountID", "type", "since", "until", "before", "limit"]) {
            try await $0.auditEvents($1)
        },
        AdminRoute("POST", "/admin/v1/webhooks", body: .json) { try await $0.createWebhook($1) },
        AdminRoute("GET", "/admin/v1/webhooks") { try await $0.listWebhooks($1) },
        AdminRoute("GET", "/admin/v1/webhooks/{webhookID}") { try await $0.webhook($1) },
        AdminRoute("DELETE", "/admin/v1/webhooks/{webhookID}") { try await $0.deleteWebhook($1) },
        AdminRoute("POST", "/admin/v1/webhooks/{webhookID}/enable") { try await $0.enableWebhook($1) },
        AdminRoute("GET", "/admin/v1/signing-keys") { try await $0.listSigningKeys($1) },
        AdminRoute("POST", "/admin/v1/signing-keys") { try await $0.rotateSigningKey($1) },
        AdminRoute("POST", "/admin/v1/signing-keys/{keyID}/retire") { try await $0.retireSigningKey($1) },
        AdminRoute("GET", "/admin/v1/openapi.json", authenticated: false, body: .ignored) { _, _ in
            GatewayApplication.jsonResponse(200, bytes: AdminOpenAPIDocument.bytes, cacheable: false)
        },
    ]

    static let router = Router(routes: routes)
}
