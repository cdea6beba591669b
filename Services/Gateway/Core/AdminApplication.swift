import AdminAccess
import Configuration
import Domain
import Encoding
import HTTPMessages
import HTTPServer
import JSON
import Observability
import RateLimiting
import ServiceContracts

/// The admin API, served only on `ADMIN_LISTEN` (never on the public listener): operators find accounts, read
/// them and the audit trail, and revoke sessions and passkeys, each call authenticated by an admin token that
/// session-service checks. Its document is `GET /admin/v1/openapi.json` on the same listener.
public final class AdminApplication: HTTPResponder {
    /// The gateway's bookkeeping: its calls to the services, metrics, logs and client addresses.
    let gateway: GatewayApplication
    /// Admin calls per client address; unknown and bad tokens count alike.
    let perAddress: TokenBucketLimiter?
    /// The operators' page at `/admin/`.
    let page = AdminPage()

    public init(gateway: GatewayApplication) {
        self.gateway = gateway
        perAddress = gateway.configuration.adminRateLimitPerAddress.map {
            TokenBucketLimiter(
                ratePerSecond: $0.perSecond, burst: $0.burst, maximumKeys: 10_000, clock: gateway.settings.limiterClock)
        }
    }

    /// The largest body an admin call takes (a webhook's registration).
    static let bodyLimit = 8192

    static let router: Router<AdminRoute> = {
        var router = Router<AdminRoute>()
        for route in routes { router.add(route.method, route.path, route) }
        return router
    }()

    /// Every admin route as `METHOD pattern`.
    public static var routeNames: [String] { router.routeNames }

    public func respond(to request: HTTPRequest) async -> HTTPResponse {
        let started = TokenBucketLimiter.monotonicSeconds()
        let requestID = GatewayApplication.requestID(from: request.headers["x-request-id"])
        let client = gateway.client(of: request)
        var routeName = "unmatched"
        var response: HTTPResponse
        switch Self.router.match(method: request.method, path: request.path) {
        case .notFound:
            if let page = page.response(method: request.method, path: request.path) {
                routeName = "page"
                response = page
                break
            }
            response =
                request.path == AdminPage.path
                ? APIProblem.methodNotAllowed(allowed: ["GET", "HEAD"]).response : APIProblem.notFound.response
        case .methodNotAllowed(let allowed):
            response = APIProblem.methodNotAllowed(allowed: allowed).response
        case .found(let route, let name, let parameters):
            routeName = name
            let context = RequestContext(
                request: request, route: name, parameters: parameters, requestID: requestID, client: client)
            response = await gateway.answer(context, failureEvent: "admin.request_failed") {
                try await dispatch(route, context)
            }
        }
        response.headers.set("x-request-id", requestID)
        response.headers.set("x-content-type-options", "nosniff")
        response.headers.set("cache-control", "no-store")
        let status = String(response.status)
        gateway.metrics.increment(
            "gateway_admin_requests_total", help: "Admin API requests by route and status.",
            labels: ["route": routeName, "status": status])
        gateway.metrics.observe(
            "gateway_admin_request_duration_seconds", help: "Admin API request latency by route and status.",
            labels: ["route": routeName, "status": status], TokenBucketLimiter.monotonicSeconds() - started)
        return response
    }

    public func refusal(status: Int, detail: String) -> HTTPResponse {
        gateway.refusal(status: status, detail: detail)
    }

    /// The middleware every authenticated route's value asks for, in order: the per-address limit, the admin token,
    /// the body (a JSON object of at most ``bodyLimit`` bytes, or none) and the query's names; then the route's
    /// handler.
    func dispatch(_ route: AdminRoute, _ context: RequestContext) async throws -> HTTPResponse {
        let admin = AdminServiceClient(
            BackendCaller(application: gateway, service: .session, context: context, ceremony: nil))
        // The open route (the document) takes whatever it is sent.
        guard route.authenticated else {
            return try await route.handle(self, AdminCall(context: context, token: "", query: AdminQuery(nil), admin: admin))
        }
        try gateway.limit(perAddress, key: context.clientLimitKey, name: "admin_per_address", context)
        let token = try Self.adminToken(context)
        switch route.body {
        case .json:
            guard context.request.headers["content-type"]?.lowercased().hasPrefix("application/json") == true else {
                throw APIProblem.unsupportedMediaType
            }
            guard context.request.body.count <= Self.bodyLimit else {
                throw APIProblem.invalidRequest("The body is over \(Self.bodyLimit) bytes.")
            }
        case .none:
            guard context.request.body.isEmpty else { throw APIProblem.invalidRequest("Admin calls here take no body.") }
        }
        let query = try AdminQuery(context.request.query)
        try query.allowOnly(route.query)
        return try await route.handle(self, AdminCall(context: context, token: token, query: query, admin: admin))
    }

    // MARK: - Handlers

    func findAccounts(_ call: AdminCall) async throws -> HTTPResponse {
        let query = call.query
        let lookups: Set<String> = ["email", "accountID", "credentialID", "externalID"]
        if query.pairs.contains(where: { lookups.contains($0.0) }) {
            // A lookup names one account; the listing's filters do not go with it.
            try query.allowOnly(lookups)
            var request = FindAccountsRequest()
            request.adminToken = call.token
            request.email = try query.text("email", limit: 254) ?? ""
            request.accountID = try query.text("accountID", limit: 36) ?? ""
            request.externalID = try query.text("externalID", limit: 256) ?? ""
            if let credential = try query.text("credentialID", limit: 1400) {
                guard let bytes = Base64URL.decode(credential), !bytes.isEmpty else {
                    throw APIProblem.invalidRequest("credentialID must be base64url.")
                }
                request.credentialID = bytes
            }
            let found = try await call.admin.findAccounts(request)
            return GatewayApplication.json(200, .object(["accounts": .array(found.accounts.map(Self.summary))]))
        }
        var request = ListAccountsRequest()
        request.adminToken = call.token
        request.hasPassword = try query.filter("hasPassword")
        request.hasPasskey = try query.filter("hasPasskey")
        request.disabled = try query.filter("disabled")
        request.createdSinceUnixMilliseconds = try query.integer("createdSince", in: 0...253_402_300_799_999) ?? 0
        request.createdUntilUnixMilliseconds = try query.integer("createdUntil", in: 0...253_402_300_799_999) ?? 0
        request.after = try query.text("after", limit: 60) ?? ""
        request.limit = Int32(try query.integer("limit", in: 1...Int64(AccountListing.pageLimit)) ?? 50)
        let listed = try await call.admin.listAccounts(request).accounts
        var page: [(String, JSONValue)] = [("accounts", .array(listed.map(Self.summary)))]
        if listed.count == Int(request.limit), let last = listed.last { page.append(("nextAfter", .string(last.cursor))) }
        return GatewayApplication.json(200, .object(JSONObject(page)))
    }

    func accountDetail(_ call: AdminCall) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        return GatewayApplication.json(
            200, Self.detail(try await call.admin.getAccountDetail(request), providers: gateway.providers))
    }

    func eraseAccount(_ call: AdminCall) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        _ = try await call.admin.eraseAccount(request)
        return GatewayApplication.noContent
    }

    func setAccountDisabled(_ call: AdminCall, disabled: Bool) async throws -> HTTPResponse {
        var request = SetAccountDisabledRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        request.disabled = disabled
        let outcome = try await call.admin.setAccountDisabled(request)
        return GatewayApplication.json(
            200,
            .object([
                "disabled": .boolean(request.disabled), "changed": .boolean(outcome.changed),
                "sessionsRevoked": .number(Double(outcome.sessionsRevoked)),
            ]))
    }

    /// A forced password reset: the password voided, every session ended and a recovery code sent.
    func resetAccountPassword(_ call: AdminCall) async throws -> HTTPResponse {
        var request = AdminAccountRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        let outcome = try await call.admin.resetAccountPassword(request)
        return GatewayApplication.json(
            200,
            .object([
                "passwordVoided": .boolean(outcome.passwordVoided),
                "sessionsRevoked": .number(Double(outcome.sessionsRevoked)), "sentTo": .string(outcome.sentTo),
            ]))
    }

    /// Every session of the account, or the one `sessionID` names.
    func revokeSessions(_ call: AdminCall) async throws -> HTTPResponse {
        var request = RevokeAccountSessionsRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        if call.context.parameters["sessionID"] != nil { request.sessionID = try call.context.parameter("sessionID") }
        let revoked = try await call.admin.revokeAccountSessions(request)
        return GatewayApplication.json(200, .object(["revoked": .number(Double(revoked.revoked))]))
    }

    /// A recovery code (`recovery`) or a verification code (`verification`) to one of the account's addresses.
    func sendAccountEmail(_ call: AdminCall, purpose: String) async throws -> HTTPResponse {
        var request = SendAccountEmailRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        request.purpose = purpose
        request.email = try call.query.text("email", limit: 254) ?? ""
        let sent = try await call.admin.sendAccountEmail(request)
        return GatewayApplication.json(202, .object(["sentTo": .string(sent.sentTo)]))
    }

    func removePasskey(_ call: AdminCall) async throws -> HTTPResponse {
        var request = RemoveAccountPasskeyRequest()
        request.adminToken = call.token
        request.accountID = try call.context.parameter("accountID")
        guard let bytes = Base64URL.decode(try call.context.parameter("credentialID")), !bytes.isEmpty else {
            throw APIProblem.invalidRequest("credentialID must be base64url.")
        }
        request.credentialID = bytes
        switch try call.query.text("override", limit: 32) {
        case nil: break
        case "lastSignInMethod": request.overrideLastMethod = true
        default: throw APIProblem.invalidRequest("override may only be lastSignInMethod.")
        }
        switch try call.query.text("recoveryEmail", limit: 8) {
        case nil, "true": break
        case "false": request.skipRecoveryEmail = true
        default: throw APIProblem.invalidRequest("recoveryEmail is true or false.")
        }
        _ = try await call.admin.removeAccountPasskey(request)
        return GatewayApplication.noContent
    }

    func auditEvents(_ call: AdminCall) async throws -> HTTPResponse {
        let query = call.query
        var request = ListAuditEventsRequest()
        request.adminToken = call.token
        request.accountID = try query.text("accountID", limit: 36) ?? ""
        request.types = try query.all("type", limit: 64, count: 32)
        request.sinceUnixMilliseconds = try query.integer("since", in: 0...253_402_300_799_999) ?? 0
        request.untilUnixMilliseconds = try query.integer("until", in: 0...253_402_300_799_999) ?? 0
        request.beforeID = try query.integer("before", in: 1...Int64.max) ?? 0
        request.limit = Int32(try query.integer("limit", in: 1...Int64(AuditEventQuery.pageLimit)) ?? 100)
        let events = try await call.admin.listAuditEvents(request).events
        var page: [(String, JSONValue)] = [("events", .array(events.map(Self.event)))]
        if events.count == Int(request.limit), let last = events.last { page.append(("nextBefore", .number(Double(last.id)))) }
        return GatewayApplication.json(200, .object(JSONObject(page)))
    }

    func createWebhook(_ call: AdminCall) async throws -> HTTPResponse {
        let body = try JSONBody(bytes: call.context.request.body)
        if let unknown = body.object.keys.first(where: { !["url", "eventTypes", "description"].contains($0) }) {
            throw APIProblem.invalidRequest("Unknown member \(unknown.prefix(32)).")
        }
        var request = CreateWebhookRequest()
        request.adminToken = call.token
        request.url = try body.string("url")
        guard case .array(let types)? = body.object["eventTypes"] else {
            throw APIProblem.invalidRequest("eventTypes must be an array of event types.")
        }
        request.eventTypes = try types.map { type in
            guard case .string(let text) = type, (1...64).contains(text.utf8.count) else {
                throw APIProblem.invalidRequest("eventTypes must hold strings of 1 to 64 bytes.")
            }
            return text
        }
        request.description = try body.optionalString("description") ?? ""
        let created = try await call.admin.createWebhook(request)
        return GatewayApplication.json(201, Self.webhook(created.webhook ?? WebhookEntry(), secret: created.secret))
    }

    func listWebhooks(_ call: AdminCall) async throws -> HTTPResponse {
        var request = ListWebhooksRequest()
        request.adminToken = call.token
        let listed = try await call.admin.listWebhooks(request)
        return GatewayApplication.json(200, .object(["webhooks": .array(listed.webhooks.map { Self.webhook($0) })]))
    }

    /// The webhook the path names.
    static func webhookRequest(_ call: AdminCall) throws -> WebhookRequest {
        var request = WebhookRequest()
        request.adminToken = call.token
        request.webhookID = try call.context.parameter("webhookID")
        return request
    }

    func webhook(_ call: AdminCall) async throws -> HTTPResponse {
        GatewayApplication.json(200, Self.webhook(try await call.admin.getWebhook(Self.webhookRequest(call))))
    }

    func deleteWebhook(_ call: AdminCall) async throws -> HTTPResponse {
        _ = try await call.admin.deleteWebhook(Self.webhookRequest(call))
        return GatewayApplication.noContent
    }

    func enableWebhook(_ call: AdminCall) async throws -> HTTPResponse {
        let enabled = try await call.admin.enableWebhook(Self.webhookRequest(call))
        return GatewayApplication.json(200, .object(["changed": .boolean(enabled.changed)]))
    }

    /// An endpoint as the admin API shows it; `secret` only in the answer to its registration.
    static func webhook(_ entry: WebhookEntry, secret: String? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("webhookID", .string(entry.webhookID)), ("url", .string(entry.url)),
            ("eventTypes", .array(entry.eventTypes.map { .string($0) })), ("description", .string(entry.description)),
            ("createdAt", time(entry.createdAtUnixMilliseconds)), ("createdBy", .string(entry.createdBy)),
            ("disabledAt", time(entry.disabledAtUnixMilliseconds)),
            ("disabledReason", entry.disabledReason.isEmpty ? .null : .string(entry.disabledReason)),
            ("failingSince", time(entry.failingSinceUnixMilliseconds)),
            ("pendingDeliveries", .number(Double(entry.pendingDeliveries))),
        ]
        if let secret { members.append(("secret", .string(secret))) }
        return .object(JSONObject(members))
    }

    /// The admin token of `Authorization: Bearer`: 401 without one, or with text that cannot be one (no call is
    /// made for it).
    static func adminToken(_ context: RequestContext) throws -> String {
        guard let bearer = GatewayApplication.bearerToken(context.request.headers["authorization"]),
            AdminTokenSecret(presented: bearer) != nil
        else { throw APIProblem.unauthenticated("A valid admin token is required.") }
        return bearer
    }

    static func time(_ milliseconds: Int64) -> JSONValue {
        milliseconds == 0 ? .null : .string(ResponseDocuments.timestamp(unixMilliseconds: milliseconds))
    }

    static func summary(_ account: AdminAccountSummary) -> JSONValue {
        .object([
            "accountID": .string(account.accountID), "displayName": .string(account.displayName),
            "emails": .array(account.emails.map { .string($0) }), "createdAt": time(account.createdAtUnixMilliseconds),
            "hasPassword": .boolean(account.hasPassword), "passkeyCount": .number(Double(account.passkeyCount)),
            "disabledAt": time(account.disabledAtUnixMilliseconds),
            "externalID": account.externalID.isEmpty ? .null : .string(account.externalID),
        ])
    }

    static func detail(_ detail: AdminAccountDetail, providers: ProviderDirectory) -> JSONValue {
        var methods: [JSONValue] = []
        if detail.hasPassword { methods.append(.string("password")) }
        if !detail.passkeys.isEmpty { methods.append(.string("passkey")) }
        return .object([
            "accountID": .string(detail.accountID), "displayName": .string(detail.displayName),
            "createdAt": time(detail.createdAtUnixMilliseconds),
            "emails": .array(detail.emails.map { .object(["address": .string($0.address), "verified": .boolean($0.verified)]) }),
            "signInMethods": .array(methods),
            "passkeys": .array(detail.passkeys.map { passkey in
                .object([
                    "credentialID": .string(Base64URL.encode(passkey.credentialID)), "name": .string(passkey.name),
                    "aaguid": .string(passkey.aaguid),
                    "providerName": providers.name(aaguid: passkey.aaguid).map { .string($0) } ?? .null,
                    "createdAt": time(passkey.createdAtUnixMilliseconds),
                    "lastUsedAt": time(passkey.lastUsedAtUnixMilliseconds), "backupEligible": .boolean(passkey.backupEligible),
                    "backedUp": .boolean(passkey.backedUp), "cloneWarning": .boolean(passkey.cloneWarning),
                ])
            }),
            "sessions": .array(detail.sessions.map { session in
                .object([
                    "sessionID": .string(session.sessionID),
                    "method": .string(session.authenticationMethod?.rawValue ?? "unknown"),
                    "createdAt": time(session.createdAtUnixMilliseconds), "expiresAt": time(session.expiresAtUnixMilliseconds),
                ])
            }),
            "recoveryCodesRemaining": .number(Double(detail.recoveryCodesRemaining)),
            "disabledAt": time(detail.disabledAtUnixMilliseconds),
            "importOrigin": detail.imported
                ? .object(["externalID": detail.externalID.isEmpty ? .null : .string(detail.externalID)]) : .null,
        ])
    }

    static func event(_ event: AuditEventEntry) -> JSONValue {
        var detail = JSONObject()
        for (key, value) in zip(event.detailKeys, event.detailValues) { detail[key] = .string(value) }
        func optional(_ text: String) -> JSONValue { text.isEmpty ? .null : .string(text) }
        return .object([
            "id": .number(Double(event.id)), "occurredAt": time(event.occurredAtUnixMilliseconds),
            "type": .string(event.type), "accountID": optional(event.accountID), "actor": .string(event.actor),
            "actorID": optional(event.actorID), "requestID": optional(event.requestID),
            "clientAddress": optional(event.clientAddress), "detail": .object(detail),
        ])
    }
}

/// An admin call's query string: `name=value` pairs, percent-decoded, each name known to the route.
struct AdminQuery: Sendable {
    static let byteLimit = 4096
    var pairs: [(String, String)] = []

    init(_ query: String?) throws {
        guard let query, !query.isEmpty else { return }
        guard query.utf8.count <= Self.byteLimit else { throw APIProblem.invalidRequest("The query is too long.") }
        for part in query.split(separator: "&") {
            let halves = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard halves.count == 2, let name = percentDecoded(halves[0]),
                let value = percentDecoded(Substring(String(halves[1].map { $0 == "+" ? " " : $0 })))
            else { throw APIProblem.invalidRequest("The query is malformed.") }
            pairs.append((name, value))
        }
    }

    func allowOnly(_ names: Set<String>) throws {
        if let unknown = pairs.first(where: { !names.contains($0.0) }) {
            throw APIProblem.invalidRequest("Unknown query parameter \(unknown.0.prefix(32)).")
        }
    }

    /// The one value of `name`, at most `limit` bytes.
    func text(_ name: String, limit: Int) throws -> String? {
        let values = pairs.filter { $0.0 == name }.map(\.1)
        guard values.count <= 1 else { throw APIProblem.invalidRequest("\(name) is given twice.") }
        guard let value = values.first else { return nil }
        guard !value.isEmpty, value.utf8.count <= limit else {
            throw APIProblem.invalidRequest("\(name) must be 1 to \(limit) bytes.")
        }
        return value
    }

    func all(_ name: String, limit: Int, count: Int) throws -> [String] {
        let values = pairs.filter { $0.0 == name }.map(\.1)
        guard values.count <= count, values.allSatisfy({ !$0.isEmpty && $0.utf8.count <= limit }) else {
            throw APIProblem.invalidRequest("\(name): at most \(count) values of 1 to \(limit) bytes.")
        }
        return values
    }

    /// A `true`/`false` filter as the services take it: 0 absent, 1 true, 2 false.
    func filter(_ name: String) throws -> Int32 {
        switch try text(name, limit: 5) {
        case nil: return 0
        case "true": return 1
        case "false": return 2
        default: throw APIProblem.invalidRequest("\(name) is true or false.")
        }
    }

    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try text(name, limit: 20) else { return nil }
        guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(text), range.contains(value) else {
            throw APIProblem.invalidRequest("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }
}

extension RequestContext {
    /// A path parameter the route has.
    func parameter(_ name: String) throws -> String {
        guard let value = parameters[name], !value.isEmpty, value.utf8.count <= 1400 else {
            throw APIProblem.invalidRequest("\(name) is missing or too long.")
        }
        return value
    }
}
