import HTTPMessages
import JSON
import ServiceContracts

/// The admin API's webhook endpoints: register one (its secret shown once), list, read, delete and enable them.
extension AdminApplication {
    func createWebhook(_ context: AdminContext) async throws -> HTTPResponse {
        let body = context.body
        if let unknown = body.object.keys.first(where: { !["url", "eventTypes", "description"].contains($0) }) {
            throw APIProblem.invalidRequest("Unknown member \(unknown.prefix(32)).")
        }
        var request = CreateWebhookRequest()
        request.adminToken = context.adminToken
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
        let created = try await adminService(context).createWebhook(request)
        return GatewayApplication.json(201, Self.webhook(created.webhook ?? WebhookEntry(), secret: created.secret))
    }

    func listWebhooks(_ context: AdminContext) async throws -> HTTPResponse {
        var request = ListWebhooksRequest()
        request.adminToken = context.adminToken
        let listed = try await adminService(context).listWebhooks(request)
        return GatewayApplication.json(200, .object(["webhooks": .array(listed.webhooks.map { Self.webhook($0) })]))
    }

    /// The webhook the path names.
    static func webhookRequest(_ context: AdminContext) -> WebhookRequest {
        var request = WebhookRequest()
        request.adminToken = context.adminToken
        request.webhookID = context.parameter("webhookID")
        return request
    }

    func webhook(_ context: AdminContext) async throws -> HTTPResponse {
        GatewayApplication.json(
            200, Self.webhook(try await adminService(context).getWebhook(Self.webhookRequest(context))))
    }

    func deleteWebhook(_ context: AdminContext) async throws -> HTTPResponse {
        _ = try await adminService(context).deleteWebhook(Self.webhookRequest(context))
        return GatewayApplication.noContent
    }

    func enableWebhook(_ context: AdminContext) async throws -> HTTPResponse {
        let enabled = try await adminService(context).enableWebhook(Self.webhookRequest(context))
        return GatewayApplication.json(200, .object(["changed": .boolean(enabled.changed)]))
    }
}
