import Crypto
import Encoding
import Foundation
import Observability
import Webhooks

/// Keeps every webhook secret sealed under the key ring's current key: an endpoint registered before secrets were
/// sealed, or sealed under a key a rotation is retiring, is sealed again under the current key. It runs as
/// session-service starts and then every `interval`; every replica may run it at once, as each replacement
/// applies only while the secret is still stored as it was read.
///
/// Once no secret is left under a previous key (`webhooks.secrets_sealed` logs `remaining=0`, or
/// `SELECT count(*) FROM webhook_endpoints WHERE secret_key_id IS DISTINCT FROM '<current>'` is 0), that key can
/// leave the ring (docs/operations.md).
public struct WebhookSecretSealing: Sendable {
    /// Endpoints read at a time; there are at most `WebhookEndpoint.countLimit`.
    static let batch = 100

    let webhooks: any WebhookRepository
    let keys: SecretKeyRing
    let interval: Duration
    let logger: Logger

    public init(
        webhooks: any WebhookRepository, keys: SecretKeyRing, interval: Duration = .seconds(600), logger: Logger
    ) {
        self.webhooks = webhooks
        self.keys = keys
        self.interval = interval
        self.logger = logger
    }

    /// Seals at once, then every `interval`, until cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await sealOnce()
            } catch {
                logger.warning("webhooks.sealing_failed", ["error": String(describing: error)])
            }
            do { try await Task.sleep(for: interval) } catch { return }
        }
    }

    /// What one pass did: the secrets it sealed under the current key, and those left under another (a key the
    /// ring does not hold, or a box that does not open; each is logged).
    public struct Outcome: Sendable, Equatable {
        public var sealed: Int
        public var remaining: Int
    }

    /// One pass over the endpoints whose secret is not under the current key.
    @discardableResult
    public func sealOnce() async throws -> Outcome {
        var outcome = Outcome(sealed: 0, remaining: 0)
        for (endpointID, stored) in try await webhooks.secrets(notSealedUnder: keys.currentKeyID, limit: Self.batch) {
            guard let secret = stored.open(for: endpointID, with: keys) else {
                outcome.remaining += 1
                logger.secretUnreadable(endpointID: endpointID, stored: stored)
                continue
            }
            if try await webhooks.replaceSecret(
                of: endpointID, stored: stored, with: try secret.sealed(for: endpointID, with: keys))
            {
                outcome.sealed += 1
            }
        }
        if outcome.sealed > 0 || outcome.remaining > 0 {
            logger.info(
                "webhooks.secrets_sealed",
                ["key.id": keys.currentKeyID, "sealed": String(outcome.sealed), "remaining": String(outcome.remaining)])
        }
        return outcome
    }
}

extension Logger {
    /// Logs `webhook.secret_unreadable`: the stored secret of endpoint `endpointID` does not open with this
    /// process's key ring.
    func secretUnreadable(endpointID: UUID, stored: StoredWebhookSecret) {
        error(
            "webhook.secret_unreadable",
            [
                "webhook.id": endpointID.lowercaseText, "key.id": stored.keyID ?? "none",
                "detail": "the secret is sealed under a key this process does not hold, or does not open",
            ])
    }
}
