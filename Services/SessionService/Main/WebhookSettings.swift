import Configuration
import Foundation
import IPAddresses
import WebhookDelivery
import Webhooks

/// session-service's webhook settings, from its environment (read by session-service alone).
struct WebhookSettings: Sendable {
    var sender: WebhookSenderSettings
    var retry: WebhookRetry
    /// Endpoints delivered to at once; a slow one holds one lane.
    var lanes: Int
    /// How long delivered rows are kept.
    var retention: TimeInterval

    init(environment: [String: String]) throws {
        let env = EnvironmentReader(environment)
        let allowHTTP = try env.flag("PASSKEY_WEBHOOK_ALLOW_HTTP", default: false)
        var allowed: [IPNetwork] = []
        for text in env.list("PASSKEY_WEBHOOK_ALLOWED_NETWORKS") {
            guard let network = IPNetwork(parsing: text) else {
                throw ConfigurationError(
                    variable: "PASSKEY_WEBHOOK_ALLOWED_NETWORKS",
                    problem: "expected address blocks like 10.1.0.0/16 or fd00::/8, got \(text.prefix(60))")
            }
            allowed.append(network)
        }
        let timeout = try env.duration("PASSKEY_WEBHOOK_TIMEOUT", default: "10s")
        guard timeout <= 60 else {
            throw ConfigurationError(variable: "PASSKEY_WEBHOOK_TIMEOUT", problem: "at most 60s")
        }
        sender = WebhookSenderSettings(
            allowHTTP: allowHTTP, policy: DestinationPolicy(allowed: allowed), connectTimeout: min(5, timeout),
            timeout: timeout, caFile: env.raw("PASSKEY_WEBHOOK_CA_FILE"))
        retry = WebhookRetry(
            maximumDelay: try env.duration("PASSKEY_WEBHOOK_MAX_RETRY_DELAY", default: "1h"),
            disableAfter: try env.duration("PASSKEY_WEBHOOK_DISABLE_AFTER", default: "3d"))
        lanes = try env.integer("PASSKEY_WEBHOOK_CONCURRENCY", default: 4, range: 1...64)
        retention = try env.duration("PASSKEY_WEBHOOK_RETENTION", default: "7d")
    }
}
