import AdminAccess
import Crypto
import Domain
import Foundation
import InMemoryStorage
import Observability
import Synchronization
import UseCaseTestSupport
import Webhooks
import XCTest

@testable import SessionServiceCore

/// `WebhookAdministration`: registering an endpoint (its secret sealed for it and shown once; event types,
/// description, destination and count checked), reading, deleting and enabling one, each as an admin token with the
/// scope it needs.
final class WebhookAdministrationTests: WebhookTestCase {
    func testARegisteredEndpointKeepsItsSecretSealedAndShowsItOnce() async throws {
        let (endpoint, secret) = try await create(types: ["audit.account.created", "audit.session.revoked"])
        XCTAssertEqual(endpoint.url, "https://hooks.example.com/in")
        XCTAssertEqual(endpoint.eventTypes, ["audit.account.created", "audit.session.revoked"])
        XCTAssertEqual(endpoint.createdBy, "admin:\(AdminTokenSecret(presented: writeToken)!.id)", "made as the token")
        let stored = try XCTUnwrap(webhooks.row(endpoint.id)?.secret)
        guard case .sealed = stored else { return XCTFail("the secret is stored sealed") }
        XCTAssertEqual(stored.open(for: endpoint.id, with: Self.keys), secret, "and opens to the secret shown")
        XCTAssertNil(stored.open(for: UUID(), with: Self.keys), "sealed for this endpoint only")
        XCTAssertTrue(audited(.webhookCreated).first?.contains(endpoint.id.uuidString.lowercased()) ?? false)
        let listed = try await administration.list(token: readToken)
        XCTAssertEqual(listed.map(\.id), [endpoint.id])
    }

    func testEventTypesAndDescriptionsAreChecked() async throws {
        for (types, why) in [
            ([], "none"), (["*", "*"], "a repeat"), (["audit.nothing"], "not an audit event"),
            (Array(repeating: "*", count: WebhookEndpoint.eventTypeLimit + 1), "too many"),
        ] as [([String], String)] {
            await assertThrowsDomainError(.invalidRequest, why) { _ = try await self.create(types: types) }
        }
        for description in [String(repeating: "a", count: WebhookEndpoint.descriptionLimit + 1), "line\nbreak"] {
            await assertThrowsDomainError(.invalidRequest) {
                _ = try await self.administration.create(
                    token: self.writeToken, url: "https://hooks.example.com/in", eventTypes: ["*"],
                    description: description)
            }
        }
        XCTAssertEqual(webhooks.state.withLock { $0.rows.count }, 0)
    }

    func testARefusedDestinationIsAnInvalidRequestNamingWhy() async throws {
        transport.refusals.withLock { $0["https://internal.example/in"] = "10.0.0.1 is an internal address" }
        let error = await assertThrowsDomainError(.invalidRequest) {
            _ = try await self.create("https://internal.example/in")
        }
        XCTAssertEqual(error?.message, "url: 10.0.0.1 is an internal address")
        XCTAssertEqual(webhooks.state.withLock { $0.calls }, [], "nothing was stored")
    }

    func testTheEndpointLimitIsAnInvalidRequest() async throws {
        for index in 0..<WebhookEndpoint.countLimit { _ = try await create("https://hooks.example.com/\(index)") }
        let error = await assertThrowsDomainError(.invalidRequest) { _ = try await self.create() }
        XCTAssertEqual(error?.message, "at most \(WebhookEndpoint.countLimit) webhook endpoints may be registered")
    }

    func testReadingNeedsReadAndChangingNeedsWrite() async throws {
        let (endpoint, _) = try await create()
        await assertThrowsDomainError(.forbidden) { _ = try await self.administration.list(token: self.writeToken) }
        await assertThrowsDomainError(.forbidden) {
            try await self.administration.delete(token: self.readToken, id: endpoint.id)
        }
        await assertThrowsDomainError(.forbidden) {
            _ = try await self.administration.create(
                token: self.readToken, url: "https://hooks.example.com/x", eventTypes: ["*"], description: "")
        }
        await assertThrowsDomainError(.unauthenticated) {
            _ = try await self.administration.endpoint(token: "", id: endpoint.id)
        }
        XCTAssertNotNil(webhooks.row(endpoint.id))
    }

    func testDeletingAndEnablingAnEndpoint() async throws {
        let (endpoint, _) = try await create()
        let enabledAlready = try await administration.enable(token: writeToken, id: endpoint.id)
        XCTAssertFalse(enabledAlready)
        XCTAssertEqual(audited(.webhookEnabled), [], "nothing changed, nothing audited")
        webhooks.state.withLock { $0.rows[endpoint.id]?.endpoint.disabledAt = clock.now }
        let enabled = try await administration.enable(token: writeToken, id: endpoint.id)
        XCTAssertTrue(enabled)
        XCTAssertEqual(audited(.webhookEnabled).count, 1)
        XCTAssertNil(webhooks.row(endpoint.id)?.endpoint.disabledAt)
        webhooks.enqueue(to: endpoint.id)
        try await administration.delete(token: writeToken, id: endpoint.id)
        XCTAssertEqual(webhooks.state.withLock { $0.deliveries }, [], "its waiting deliveries go with it")
        XCTAssertEqual(audited(.webhookDeleted).count, 1)
        for operation in ["read", "delete", "enable"] {
            await assertThrowsDomainError(.notFound, operation) {
                switch operation {
                case "read": _ = try await self.administration.endpoint(token: self.readToken, id: endpoint.id)
                case "delete": try await self.administration.delete(token: self.writeToken, id: endpoint.id)
                default: _ = try await self.administration.enable(token: self.writeToken, id: endpoint.id)
                }
            }
        }
    }
}
