import HTTPMessages
import ServiceContracts

/// A route of the admin API as one value: its method and path, whether it takes an admin token (every operation but
/// the document), the query parameters it accepts, whether it reads a JSON body, and its handler. The middleware
/// (`AdminApplication.dispatch`) applies the limit, the token, the body and the query from the value before the
/// handler runs; the router and the check of the table against `openapi-admin.json` (every route documented with its
/// method, token, query and body, every documented operation routed) come from ``AdminApplication/routes``.
struct AdminRoute: Sendable {
    enum Body: Sendable {
        case none
        /// A JSON object, required, of at most `AdminApplication.bodyLimit` bytes.
        case json
    }

    let method: String
    let path: String
    let authenticated: Bool
    let query: Set<String>
    let body: Body
    let handle: @Sendable (AdminApplication, AdminCall) async throws -> HTTPResponse

    init(
        _ method: String, _ path: String, authenticated: Bool = true, query: Set<String> = [], body: Body = .none,
        handle: @escaping @Sendable (AdminApplication, AdminCall) async throws -> HTTPResponse
    ) {
        self.method = method
        self.path = path
        self.authenticated = authenticated
        self.query = query
        self.body = body
        self.handle = handle
    }
}

/// One admin call past the middleware: its request, the caller's admin token (empty on an open route), its query
/// (names already checked against the route's), and the client of session-service's admin API.
struct AdminCall: Sendable {
    let context: RequestContext
    let token: String
    let query: AdminQuery
    let admin: AdminServiceClient<BackendCaller>
}

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
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/disable") { try await $0.setAccountDisabled($1, disabled: true) },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/enable") { try await $0.setAccountDisabled($1, disabled: false) },
        AdminRoute("POST", "/admin/v1/accounts/{accountID}/password-reset") { try await $0.resetAccountPassword($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}/sessions") { try await $0.revokeSessions($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}/sessions/{sessionID}") { try await $0.revokeSessions($1) },
        AdminRoute("DELETE", "/admin/v1/accounts/{accountID}/passkeys/{credentialID}", query: ["override", "recoveryEmail"]) {
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
        AdminRoute("GET", "/admin/v1/openapi.json", authenticated: false) { _, _ in
            GatewayApplication.jsonResponse(200, bytes: AdminOpenAPIDocument.bytes, cacheable: false)
        },
    ]
}
