import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One answer to a key set request.
public struct KeySetResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body.
    public var body: [UInt8]

    /// An answer; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }
}

/// GETs the key set for ``PasskeySessionVerifier``: ``URLSessionKeySetFetcher`` in a server, anything else in
/// tests. A fetcher bounds what it reads and how long it waits, and throws when no answer arrived.
public protocol KeySetFetcher: Sendable {
    /// GETs `url` and returns the answer, whatever its status.
    func get(_ url: URL) async throws -> KeySetResponse
}

/// Why ``URLSessionKeySetFetcher`` gave up on an answer.
public struct KeySetFetchError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The answer was not HTTP.
    public static let notHTTP = KeySetFetchError(description: "The answer is not an HTTP response.")

    /// What happened.
    public let description: String

    /// The body was longer than `limit` bytes.
    public static func bodyTooLarge(limit: Int) -> KeySetFetchError {
        KeySetFetchError(description: "The body is over \(limit) bytes.")
    }

    /// The whole answer had not arrived within `timeout`.
    public static func timedOut(after timeout: Duration) -> KeySetFetchError {
        KeySetFetchError(description: "No whole answer within \(timeout).")
    }
}

/// The fetcher over `URLSession` (FoundationNetworking on Linux): an ephemeral session of its own with no cache
/// and no cookies, a whole-request timeout of its own (FoundationNetworking's session timeouts count whole seconds
/// only and its request timeout is overridden by the session's), and a body limit enforced while the body arrives,
/// so a huge answer is cut off rather than held in memory.
public final class URLSessionKeySetFetcher: KeySetFetcher {
    /// The default body limit: a key set of the most keys kept, with room to spare, is about 20 KiB.
    public static let defaultMaximumBodySize = 64 * 1024

    /// How long one request may take in all.
    public let timeout: Duration
    /// The most body bytes read; a longer answer fails.
    public let maximumBodySize: Int
    private let timeoutSeconds: TimeInterval
    private let session: URLSession
    private let downloads: BoundedDownloads

    /// A fetcher with its own session.
    public init(
        timeout: Duration = .seconds(5), maximumBodySize: Int = URLSessionKeySetFetcher.defaultMaximumBodySize
    ) {
        self.timeout = timeout
        self.maximumBodySize = maximumBodySize
        timeoutSeconds = max(0.001, Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        downloads = BoundedDownloads(limit: maximumBodySize)
        session = URLSession(configuration: configuration, delegate: downloads, delegateQueue: nil)
    }

    deinit {
        // A session keeps its delegate until it is invalidated.
        session.invalidateAndCancel()
    }

    public func get(_ url: URL) async throws -> KeySetResponse {
        var request = URLRequest(url: url)
        request.setValue("application/jwk-set+json, application/json", forHTTPHeaderField: "Accept")
        let task = session.dataTask(with: request)
        let (downloads, timeout, timeoutSeconds) = (self.downloads, self.timeout, self.timeoutSeconds)
        return try await withCheckedThrowingContinuation { continuation in
            downloads.start(task, continuation)
            DispatchQueue.global().asyncAfter(deadline: .now() + timeoutSeconds) {
                downloads.expire(task, failure: .timedOut(after: timeout))
            }
        }
    }
}

/// The session's delegate: collects each task's body up to the limit and resumes its caller when it ends.
private final class BoundedDownloads: NSObject, URLSessionDataDelegate, Sendable {
    private struct Download: Sendable {
        let continuation: CheckedContinuation<KeySetResponse, any Error>
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var failure: KeySetFetchError?
    }

    private let limit: Int
    private let running = Mutex<[Int: Download]>([:])

    init(limit: Int) { self.limit = limit }

    /// Registers the caller of `task` and starts it; nothing of the task arrives before it is registered.
    func start(_ task: URLSessionDataTask, _ continuation: CheckedContinuation<KeySetResponse, any Error>) {
        running.withLock { $0[task.taskIdentifier] = Download(continuation: continuation) }
        task.resume()
    }

    /// Ends `task` with `failure` unless it has ended already.
    func expire(_ task: URLSessionDataTask, failure: KeySetFetchError) {
        let running = running.withLock { running -> Bool in
            guard var download = running[task.taskIdentifier], download.failure == nil else { return false }
            download.failure = failure
            running[task.taskIdentifier] = download
            return true
        }
        if running { task.cancel() }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let limit = self.limit
        let allowed = running.withLock { running -> Bool in
            guard var download = running[dataTask.taskIdentifier] else { return false }
            if let http = response as? HTTPURLResponse {
                download.status = http.statusCode
                for (name, value) in http.allHeaderFields {
                    download.headers[String(describing: name).lowercased()] = String(describing: value)
                }
            } else {
                download.failure = .notHTTP
            }
            // A declared length over the limit ends the request before any of the body is read.
            if response.expectedContentLength > Int64(limit) { download.failure = .bodyTooLarge(limit: limit) }
            running[dataTask.taskIdentifier] = download
            return download.failure == nil
        }
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let limit = self.limit
        // The body grows in place: a copy taken out of the dictionary and written back would copy it whole per
        // chunk, under the lock.
        let overLimit = running.withLock { running -> Bool in
            let id = dataTask.taskIdentifier
            // Read without keeping a copy of the entry, which would make the append below copy the body.
            guard let received = running[id]?.body.count, running[id]?.failure == nil else { return false }
            guard received + data.count <= limit else {
                running[id]?.failure = .bodyTooLarge(limit: limit)
                running[id]?.body = []
                return true
            }
            running[id]?.body.append(contentsOf: data)
            return false
        }
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let download = running.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = download.failure {
            download.continuation.resume(throwing: failure)
        } else if let error {
            download.continuation.resume(throwing: error)
        } else {
            download.continuation.resume(
                returning: KeySetResponse(status: download.status, headers: download.headers, body: download.body))
        }
    }
}
