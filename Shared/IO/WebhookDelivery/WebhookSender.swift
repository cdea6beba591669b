import Configuration
import CurlTransport
import Foundation
import IPAddresses
import NameResolution
import NetworkIO
import Webhooks
import WorkerThreads

/// How webhooks are sent: which URLs and addresses are allowed, and how long an attempt may take.
public struct WebhookSenderSettings: Sendable {
    /// Whether `http://` endpoints are allowed (`PASSKEY_WEBHOOK_ALLOW_HTTP`); `https://` otherwise.
    public var allowHTTP: Bool
    public var policy: DestinationPolicy
    public var connectTimeout: TimeInterval
    /// The budget of one attempt, connecting included.
    public var timeout: TimeInterval
    public var caFile: String?

    public init(
        allowHTTP: Bool, policy: DestinationPolicy, connectTimeout: TimeInterval, timeout: TimeInterval,
        caFile: String? = nil
    ) {
        self.allowHTTP = allowHTTP
        self.policy = policy
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.caFile = caFile
    }
}

/// Checks webhook URLs and sends deliveries, on threads of its own (name resolution and libcurl block). A name is
/// resolved once per check; every address must pass the destination policy, and the POST then connects to those
/// addresses only, so a name that changes its answer between the check and the connection cannot reach inside.
public final class WebhookSender: WebhookTransport {
    public let settings: WebhookSenderSettings
    private let threads: BlockingWorkerPool<HTTPClient>

    public init(settings: WebhookSenderSettings, threadCount: Int) {
        self.settings = settings
        threads = BlockingWorkerPool(name: "webhooks", threadCount: threadCount, makeState: { HTTPClient() })
    }

    /// The URL parsed and its host resolved and checked; the reason when it may not be used.
    public func destination(for text: String) async -> Result<WebhookDestination, WebhookURLError> {
        let settings = settings
        do {
            return try await threads.run { _ in
                do {
                    let url = try WebhookURL(parsing: text, allowHTTP: settings.allowHTTP)
                    let resolved: [SocketAddress]
                    do {
                        resolved = try AddressResolution.lookUpAll(ServiceAddress(host: url.host, port: url.port))
                    } catch {
                        return .failure(WebhookURLError("\(url.host.prefix(253)) cannot be resolved now"))
                    }
                    let addresses = resolved.compactMap { IPAddress(parsing: $0.host) }
                    try settings.policy.check(host: url.host, addresses: addresses)
                    return .success(WebhookDestination(url: url, addresses: addresses))
                } catch let error as WebhookURLError {
                    return .failure(error)
                }
            }
        } catch {
            return .failure(WebhookURLError("the webhook threads are stopped"))
        }
    }

    /// POSTs the delivery, signed now with `secret`, to the checked destination; the response's status, or why
    /// there was none.
    public func send(
        _ delivery: WebhookDelivery, secret: WebhookSecret, to destination: WebhookDestination, at now: Date
    )
        async -> Result<Int, WebhookSendError>
    {
        let post = HTTPPost(
            url: destination.url.text, host: destination.url.host, port: destination.url.port,
            addresses: IPAddress(parsing: destination.url.host) == nil ? destination.addresses.map(\.description) : [],
            headers: WebhookSignature.headers(
                messageID: delivery.messageID, timestamp: Int64(now.timeIntervalSince1970), payload: delivery.payload,
                secret: secret),
            body: delivery.payload, connectTimeout: settings.connectTimeout, timeout: settings.timeout,
            caFile: settings.caFile)
        do {
            return try await threads.run { client in
                do {
                    return .success(try client.send(post))
                } catch {
                    return .failure(WebhookSendError(String(describing: error)))
                }
            }
        } catch {
            return .failure(WebhookSendError("the webhook threads are stopped"))
        }
    }

    public func shutdown() { threads.shutdown() }
}
