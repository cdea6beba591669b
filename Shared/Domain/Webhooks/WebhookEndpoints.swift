import Crypto
import Foundation

/// A registered receiver of audit events.
public struct WebhookEndpoint: Sendable, Equatable {
    /// The most endpoints one deployment may register.
    public static let countLimit = 100
    /// The most event types one endpoint names.
    public static let eventTypeLimit = 64
    public static let descriptionLimit = 256
    /// Subscribes to every event type.
    public static let everyEvent = "*"

    public var id: UUID
    public var url: String
    public var eventTypes: [String]
    public var description: String
    public var createdAt: Date
    public var createdBy: String
    public var disabledAt: Date?
    public var disabledReason: String?
    /// Since when every attempt has failed; nil while deliveries succeed.
    public var failingSince: Date?
    /// Deliveries waiting for this endpoint.
    public var pending: Int

    public init(
        id: UUID, url: String, eventTypes: [String], description: String, createdAt: Date, createdBy: String,
        disabledAt: Date? = nil, disabledReason: String? = nil, failingSince: Date? = nil, pending: Int = 0
    ) {
        self.id = id
        self.url = url
        self.eventTypes = eventTypes
        self.description = description
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
        self.failingSince = failingSince
        self.pending = pending
    }
}

/// One event on its way to one endpoint: the payload stored when the event was, signed afresh on each attempt.
public struct WebhookDelivery: Sendable, Equatable {
    /// `webhook-id`: the same on every attempt, so a receiver drops a repeat.
    public var id: UUID
    public var endpointID: UUID
    public var eventType: String
    public var payload: [UInt8]
    /// Attempts made before this one.
    public var attempts: Int

    public init(id: UUID, endpointID: UUID, eventType: String, payload: [UInt8], attempts: Int) {
        self.id = id
        self.endpointID = endpointID
        self.eventType = eventType
        self.payload = payload
        self.attempts = attempts
    }

    public var messageID: String { "msg_" + id.uuidString.lowercased() }
}

/// An endpoint leased to one worker, with its oldest waiting deliveries in order. While the lease holds, no other
/// worker (or replica) delivers to the endpoint; it lapses by itself if the worker dies.
public struct WebhookBatch: Sendable, Equatable {
    public var endpointID: UUID
    public var url: String
    /// The signing secret as stored; the worker opens it to sign.
    public var secret: StoredWebhookSecret
    /// Identifies this lease: only its holder records the endpoint's outcome.
    public var lease: UUID
    /// Failed attempts in a row so far.
    public var failures: Int
    public var deliveries: [WebhookDelivery]

    public init(
        endpointID: UUID, url: String, secret: StoredWebhookSecret, lease: UUID, failures: Int,
        deliveries: [WebhookDelivery]
    ) {
        self.endpointID = endpointID
        self.url = url
        self.secret = secret
        self.lease = lease
        self.failures = failures
        self.deliveries = deliveries
    }
}

/// When an endpoint whose delivery failed is tried again: exponential backoff from one second, capped; the endpoint
/// is disabled once it has failed for `disableAfter` without a success.
public struct WebhookRetry: Sendable, Equatable {
    public var maximumDelay: TimeInterval
    public var disableAfter: TimeInterval

    public init(maximumDelay: TimeInterval, disableAfter: TimeInterval) {
        self.maximumDelay = maximumDelay
        self.disableAfter = disableAfter
    }

    /// The wait after the `failures`-th failure in a row (1-based).
    public func delay(afterFailures failures: Int) -> TimeInterval {
        min(maximumDelay, pow(2, Double(max(0, min(failures, 30) - 1))))
    }
}

/// The endpoints' storage and the deliveries' outbox. Deliveries are made by the database in the transaction that
/// stores an audit event, one for each enabled endpoint that takes the event's type, so a delivery exists exactly
/// when its event committed.
public protocol WebhookRepository: Sendable {
    /// Registers the endpoint `id` with its secret sealed for it (its `audit.webhook.created` event in the same
    /// transaction); nil when the limit of endpoints is reached.
    func createEndpoint(id: UUID, url: String, eventTypes: [String], description: String, secret: SealedSecret)
        async throws -> WebhookEndpoint?
    func endpoints() async throws -> [WebhookEndpoint]
    func endpoint(_ id: UUID) async throws -> WebhookEndpoint?
    /// Deletes an endpoint and its waiting deliveries; false when there is none.
    func deleteEndpoint(_ id: UUID) async throws -> Bool
    /// Enables a disabled endpoint, clearing its failures; nil when there is none, false when it was enabled.
    func enableEndpoint(_ id: UUID) async throws -> Bool?

    /// Leases up to `endpoints` enabled endpoints that have deliveries due and no other holder, each with up to
    /// `batch` of its oldest deliveries, for `lease` seconds.
    func lease(endpoints: Int, batch: Int, lease: TimeInterval) async throws -> [WebhookBatch]
    /// Marks a delivery acknowledged and extends the lease by `lease` seconds.
    func recordDelivered(_ delivery: WebhookDelivery, lease: UUID, extendingBy: TimeInterval) async throws
    /// Records a failed attempt: the endpoint waits `retryAfter` seconds, or is disabled (and that audited) when it
    /// has failed for `disableAfter` seconds. The lease ends. Returns whether the endpoint was disabled.
    func recordFailure(
        _ delivery: WebhookDelivery, lease: UUID, error: String, retryAfter: TimeInterval, disableAfter: TimeInterval
    ) async throws -> Bool
    /// Ends a lease without an attempt (a worker stopping).
    func release(endpoint: UUID, lease: UUID) async throws

    /// Up to `limit` endpoints whose secret is not sealed under the key `keyID` names (in clear, or under another
    /// key), with the secret as stored.
    func secrets(notSealedUnder keyID: String, limit: Int) async throws
        -> [(endpointID: UUID, secret: StoredWebhookSecret)]
    /// Replaces the endpoint's secret with `sealed` only while it is still stored as `current` (another replica may
    /// have sealed it meanwhile); whether it did.
    func replaceSecret(of endpointID: UUID, stored current: StoredWebhookSecret, with sealed: SealedSecret) async throws
        -> Bool
}
