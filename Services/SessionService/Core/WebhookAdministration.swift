import AdminAccess
import Crypto
import Domain
import Encoding
import Foundation
import Observability
import Webhooks

/// The admin API's webhook operations: register an endpoint (its URL checked, names resolved and every address
/// allowed by the destination policy; the secret shown once), list, read, delete and enable one. Each runs as the
/// admin token that asked (scope read to look, write to change), and each change is an audit event.
public struct WebhookAdministration: Sendable {
    let admin: AdminUseCases
    let webhooks: any WebhookRepository
    let transport: any WebhookTransport
    /// Seals each new endpoint's secret before it is stored.
    let keys: SecretKeyRing
    let random: any RandomSource

    public init(
        admin: AdminUseCases, webhooks: any WebhookRepository, transport: any WebhookTransport, keys: SecretKeyRing,
        random: any RandomSource = SecureRandom()
    ) {
        self.admin = admin
        self.webhooks = webhooks
        self.transport = transport
        self.keys = keys
        self.random = random
    }

    /// The event types an endpoint may name: every audit event, or `*`.
    public static func checkedEventTypes(_ types: [String]) throws -> [String] {
        guard (1...WebhookEndpoint.eventTypeLimit).contains(types.count) else {
            throw DomainError(
                .invalidRequest, "eventTypes must name 1 to \(WebhookEndpoint.eventTypeLimit) event types")
        }
        guard Set(types).count == types.count else { throw DomainError(.invalidRequest, "eventTypes has a repeat") }
        if let unknown = types.first(where: { $0 != WebhookEndpoint.everyEvent && AuditEvent(rawValue: $0) == nil }) {
            throw DomainError(.invalidRequest, "eventTypes: \(unknown.prefix(64)) is not an audit event type")
        }
        return types
    }

    public func create(token: String, url: String, eventTypes: [String], description: String) async throws
        -> (endpoint: WebhookEndpoint, secret: WebhookSecret)
    {
        try await admin.authorized(token, .write) {
            let types = try Self.checkedEventTypes(eventTypes)
            guard description.count <= WebhookEndpoint.descriptionLimit,
                !description.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw DomainError(
                    .invalidRequest,
                    "description must be at most \(WebhookEndpoint.descriptionLimit) characters, no controls")
            }
            if case .failure(let refusal) = await transport.destination(for: url) {
                throw DomainError(.invalidRequest, "url: \(refusal.description)")
            }
            let secret = WebhookSecret(random: random)
            let id = UUID.randomV4()
            guard
                let endpoint = try await webhooks.createEndpoint(
                    id: id, url: url, eventTypes: types, description: description,
                    secret: try secret.sealed(for: id, with: keys))
            else {
                throw DomainError(
                    .invalidRequest, "at most \(WebhookEndpoint.countLimit) webhook endpoints may be registered")
            }
            admin.logger.audit(.webhookCreated, ["webhook.id": endpoint.id.uuidString.lowercased()])
            return (endpoint, secret)
        }
    }

    public func list(token: String) async throws -> [WebhookEndpoint] {
        try await admin.authorized(token, .read) { try await webhooks.endpoints() }
    }

    public func endpoint(token: String, id: UUID) async throws -> WebhookEndpoint {
        try await admin.authorized(token, .read) {
            guard let endpoint = try await webhooks.endpoint(id) else {
                throw DomainError(.notFound, "no such webhook endpoint")
            }
            return endpoint
        }
    }

    public func delete(token: String, id: UUID) async throws {
        try await admin.authorized(token, .write) {
            guard try await webhooks.deleteEndpoint(id) else {
                throw DomainError(.notFound, "no such webhook endpoint")
            }
            admin.logger.audit(.webhookDeleted, ["webhook.id": id.uuidString.lowercased()])
        }
    }

    /// Enables a disabled endpoint; false when it was enabled already.
    public func enable(token: String, id: UUID) async throws -> Bool {
        try await admin.authorized(token, .write) {
            guard let changed = try await webhooks.enableEndpoint(id) else {
                throw DomainError(.notFound, "no such webhook endpoint")
            }
            if changed { admin.logger.audit(.webhookEnabled, ["webhook.id": id.uuidString.lowercased()]) }
            return changed
        }
    }
}
