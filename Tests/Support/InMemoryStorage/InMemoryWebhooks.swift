import Crypto
import Foundation
import IPAddresses
import Observability
import Synchronization
import Webhooks

/// `webhook_endpoints` and `webhook_deliveries` in memory, with the rules of `PostgresWebhookRepository`: at most
/// `WebhookEndpoint.countLimit` endpoints, a lease held by one worker at a time and honoured only from its holder,
/// deliveries handed out oldest first, and an endpoint disabled once it has failed for `disableAfter` seconds.
/// Deliveries are queued by the test (`enqueue`), as the audit trigger would. Any operation can be made to fail.
public final class InMemoryWebhooks: WebhookRepository, Sendable {
    /// One repository method each, for `calls` and `failing`.
    public enum Operation: Hashable, Sendable, CaseIterable {
        case createEndpoint, endpoints, endpoint, deleteEndpoint, enableEndpoint, lease, recordDelivered
        case recordFailure, release, secrets, replaceSecret
    }

    /// An endpoint's row beyond what `WebhookEndpoint` shows.
    public struct Row: Sendable, Equatable {
        public var endpoint: WebhookEndpoint
        public var secret: StoredWebhookSecret
        /// Failed attempts in a row.
        public var failures = 0
        /// Not leased before then (the backoff).
        public var retryAt: Date?
        public var lease: UUID?
        public var leaseExpiresAt: Date?
        public var lastError: String?
    }

    /// The tables, and what the store was asked.
    public struct State: Sendable {
        public var rows: [UUID: Row] = [:]
        /// Waiting deliveries, oldest first.
        public var deliveries: [WebhookDelivery] = []
        /// Deliveries acknowledged, in order.
        public var delivered: [WebhookDelivery] = []
        public var calls: [Operation] = []
        /// Operations that throw `failure`, before reading or writing anything, until removed.
        public var failing: Set<Operation> = []
    }

    public let state = Mutex(State())
    public let failure: any Error
    let clock: @Sendable () -> Date

    public init(
        clock: @escaping @Sendable () -> Date,
        failure: any Error = WebhookSendError("the database cannot be reached")
    ) {
        self.clock = clock
        self.failure = failure
    }

    /// Queues a delivery of `eventType` for the endpoint, as a committed audit event does.
    @discardableResult
    public func enqueue(to endpointID: UUID, eventType: String = "audit.account.created", payload: String = "{}")
        -> WebhookDelivery
    {
        let delivery = WebhookDelivery(
            id: UUID(), endpointID: endpointID, eventType: eventType, payload: Array(payload.utf8), attempts: 0)
        state.withLock { $0.deliveries.append(delivery) }
        return delivery
    }

    /// The endpoint's row.
    public func row(_ id: UUID) -> Row? { state.withLock { $0.rows[id] } }

    private func perform<Result>(_ operation: Operation, _ body: (inout State) throws -> Result) throws -> Result {
        try state.withLock { state in
            state.calls.append(operation)
            if state.failing.contains(operation) { throw failure }
            return try body(&state)
        }
    }

    private static func shown(_ row: Row, in state: State) -> WebhookEndpoint {
        var endpoint = row.endpoint
        endpoint.pending = state.deliveries.filter { $0.endpointID == row.endpoint.id }.count
        return endpoint
    }

    public func createEndpoint(id: UUID, url: String, eventTypes: [String], description: String, secret: SealedSecret)
        async throws -> WebhookEndpoint?
    {
        let now = clock()
        let actor = AuditContext.current.actor
        return try perform(.createEndpoint) { state in
            guard state.rows.count < WebhookEndpoint.countLimit else { return nil }
            guard state.rows[id] == nil else { throw InMemoryConstraintViolation("webhook_endpoints_pkey") }
            let endpoint = WebhookEndpoint(
                id: id, url: url, eventTypes: eventTypes, description: description, createdAt: now,
                createdBy: actor.identifier.map { "\(actor.kind):\($0)" } ?? actor.kind)
            state.rows[id] = Row(endpoint: endpoint, secret: .sealed(secret))
            return endpoint
        }
    }

    public func endpoints() async throws -> [WebhookEndpoint] {
        try perform(.endpoints) { state in
            state.rows.values.sorted { $0.endpoint.createdAt < $1.endpoint.createdAt }.map { Self.shown($0, in: state) }
        }
    }

    public func endpoint(_ id: UUID) async throws -> WebhookEndpoint? {
        try perform(.endpoint) { state in state.rows[id].map { Self.shown($0, in: state) } }
    }

    public func deleteEndpoint(_ id: UUID) async throws -> Bool {
        try perform(.deleteEndpoint) { state in
            guard state.rows.removeValue(forKey: id) != nil else { return false }
            state.deliveries.removeAll { $0.endpointID == id }
            return true
        }
    }

    public func enableEndpoint(_ id: UUID) async throws -> Bool? {
        try perform(.enableEndpoint) { state in
            guard var row = state.rows[id] else { return nil }
            guard row.endpoint.disabledAt != nil else { return false }
            row.endpoint.disabledAt = nil
            row.endpoint.disabledReason = nil
            row.endpoint.failingSince = nil
            row.failures = 0
            row.retryAt = nil
            state.rows[id] = row
            return true
        }
    }

    public func lease(endpoints: Int, batch: Int, lease: TimeInterval) async throws -> [WebhookBatch] {
        let now = clock()
        return try perform(.lease) { state in
            var batches: [WebhookBatch] = []
            for id in state.rows.keys.sorted(by: { $0.uuidString < $1.uuidString }) where batches.count < endpoints {
                guard var row = state.rows[id], row.endpoint.disabledAt == nil, row.retryAt.map({ $0 <= now }) ?? true,
                    row.leaseExpiresAt.map({ $0 <= now }) ?? true
                else { continue }
                let due = state.deliveries.filter { $0.endpointID == id }.prefix(batch)
                guard !due.isEmpty else { continue }
                let token = UUID()
                row.lease = token
                row.leaseExpiresAt = now.addingTimeInterval(lease)
                state.rows[id] = row
                batches.append(
                    WebhookBatch(
                        endpointID: id, url: row.endpoint.url, secret: row.secret, lease: token,
                        failures: row.failures, deliveries: Array(due)))
            }
            return batches
        }
    }

    /// The row when `lease` is its live lease.
    private func held(_ endpointID: UUID, _ lease: UUID, in state: State, at now: Date) -> Row? {
        guard let row = state.rows[endpointID], row.lease == lease, let expiry = row.leaseExpiresAt, expiry > now else {
            return nil
        }
        return row
    }

    public func recordDelivered(_ delivery: WebhookDelivery, lease: UUID, extendingBy: TimeInterval) async throws {
        let now = clock()
        try perform(.recordDelivered) { state in
            guard var row = held(delivery.endpointID, lease, in: state, at: now) else { return }
            state.deliveries.removeAll { $0.id == delivery.id }
            state.delivered.append(delivery)
            row.failures = 0
            row.endpoint.failingSince = nil
            row.leaseExpiresAt = now.addingTimeInterval(extendingBy)
            state.rows[delivery.endpointID] = row
        }
    }

    public func recordFailure(
        _ delivery: WebhookDelivery, lease: UUID, error: String, retryAfter: TimeInterval, disableAfter: TimeInterval
    ) async throws -> Bool {
        let now = clock()
        return try perform(.recordFailure) { state in
            guard var row = held(delivery.endpointID, lease, in: state, at: now) else { return false }
            if let index = state.deliveries.firstIndex(where: { $0.id == delivery.id }) {
                state.deliveries[index].attempts += 1
            }
            row.failures += 1
            row.lastError = error
            let failingSince = row.endpoint.failingSince ?? now
            row.endpoint.failingSince = failingSince
            row.lease = nil
            row.leaseExpiresAt = nil
            let disabled = now.timeIntervalSince(failingSince) >= disableAfter
            if disabled {
                row.endpoint.disabledAt = now
                row.endpoint.disabledReason = error
            } else {
                row.retryAt = now.addingTimeInterval(retryAfter)
            }
            state.rows[delivery.endpointID] = row
            return disabled
        }
    }

    public func release(endpoint: UUID, lease: UUID) async throws {
        let now = clock()
        try perform(.release) { state in
            guard var row = held(endpoint, lease, in: state, at: now) else { return }
            row.lease = nil
            row.leaseExpiresAt = nil
            state.rows[endpoint] = row
        }
    }

    public func secrets(notSealedUnder keyID: String, limit: Int) async throws
        -> [(endpointID: UUID, secret: StoredWebhookSecret)]
    {
        try perform(.secrets) { state in
            state.rows.values.filter { $0.secret.keyID != keyID }.prefix(limit).map {
                (endpointID: $0.endpoint.id, secret: $0.secret)
            }
        }
    }

    public func replaceSecret(of endpointID: UUID, stored current: StoredWebhookSecret, with sealed: SealedSecret)
        async throws -> Bool
    {
        try perform(.replaceSecret) { state in
            guard var row = state.rows[endpointID], row.secret == current else { return false }
            row.secret = .sealed(sealed)
            state.rows[endpointID] = row
            return true
        }
    }
}

/// A webhook transport with no network: destinations are refused or allowed as the test says, and each send's
/// outcome is taken from a script (then 204), with what was sent recorded.
public final class ScriptedWebhookTransport: WebhookTransport, Sendable {
    /// What was sent: the delivery, the secret it was signed with, and where to.
    public struct Sent: Sendable, Equatable {
        public var delivery: WebhookDelivery
        public var secret: WebhookSecret
        public var destination: WebhookDestination
    }

    /// URLs refused with this reason; any other is allowed (parsed, resolved to 192.0.2.1).
    public let refusals = Mutex<[String: String]>([:])
    /// The outcomes of the next sends, in order; 204 once it is empty.
    public let outcomes = Mutex<[Result<Int, WebhookSendError>]>([])
    public let sent = Mutex<[Sent]>([])

    public init() {}

    public func destination(for url: String) async -> Result<WebhookDestination, WebhookURLError> {
        if let reason = refusals.withLock({ $0[url] }) { return .failure(WebhookURLError(reason)) }
        do {
            return .success(
                WebhookDestination(
                    url: try WebhookURL(parsing: url, allowHTTP: true), addresses: [IPAddress(parsing: "192.0.2.1")!]))
        } catch {
            return .failure(error)
        }
    }

    public func send(
        _ delivery: WebhookDelivery, secret: WebhookSecret, to destination: WebhookDestination, at now: Date
    )
        async -> Result<Int, WebhookSendError>
    {
        sent.withLock { $0.append(Sent(delivery: delivery, secret: secret, destination: destination)) }
        return outcomes.withLock { $0.isEmpty ? .success(204) : $0.removeFirst() }
    }
}
