import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP request as ``PasskeyAPIClient`` sends it. Its description and mirror leave the body and the
/// `authorization` value out.
public struct PasskeyHTTPRequest: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// `GET`, `POST`, `PATCH` or `DELETE`.
    public var method: HTTPMethod
    /// The absolute URL.
    public var url: URL
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body, if any.
    public var body: Data?
    /// How long the transport may wait for the whole response.
    public var timeout: Duration

    /// Creates a request.
    public init(method: HTTPMethod, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: Duration) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    public var description: String { "\(method) \(url.absoluteString) \(redactedHeaders) (\(body?.count ?? 0) bytes)" }

    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": url, "headers": redactedHeaders, "timeout": timeout])
    }

    private var redactedHeaders: [String: String] {
        var headers = self.headers
        if headers["authorization"] != nil { headers["authorization"] = "(redacted)" }
        return headers
    }
}

/// One HTTP response as a transport delivers it.
public struct PasskeyHTTPResponse: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// Header fields, names lowercased.
    public var headers: [String: String]
    /// The body (empty when there is none).
    public var body: Data

    /// Creates a response; header names are lowercased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        self.body = body
    }

    /// The `content-type` header field.
    public var contentType: String? { headers["content-type"] }
}

/// Sends requests and delivers responses: ``URLSessionTransport`` in apps, anything else in tests. A transport
/// throws when no response arrived and must stop promptly when its task is cancelled.
public protocol PasskeyHTTPTransport: Sendable {
    /// Sends `request` and returns the response, whatever its status.
    func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse
}

/// The transport over `URLSession`. Its own sessions keep no cookies and no cache and do not follow redirects (an
/// API response is never a redirect, and following one could carry the bearer token elsewhere); cancelling the
/// calling task cancels the `URLSessionTask`.
public final class URLSessionTransport: PasskeyHTTPTransport {
    private let session: URLSession
    private let ownsSession: Bool

    /// A configuration for API calls: ephemeral, no cookies, no cache.
    public static func apiConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        return configuration
    }

    /// A transport with a session of its own made from `configuration`.
    public init(configuration: URLSessionConfiguration = URLSessionTransport.apiConfiguration()) {
        session = URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
        ownsSession = true
    }

    /// A transport over the app's own session (its delegate decides about redirects).
    public init(session: URLSession) {
        self.session = session
        ownsSession = false
    }

    deinit {
        // A session keeps its delegate until it is invalidated.
        if ownsSession { session.finishTasksAndInvalidate() }
    }

    public func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse {
        var urlRequest = URLRequest(
            url: request.url, cachePolicy: .reloadIgnoringLocalCacheData,
            timeoutInterval: max(0.001, request.timeout.seconds))
        urlRequest.httpMethod = request.method.rawValue
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let running = RunningTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let error { return continuation.resume(throwing: error) }
                    guard let http = response as? HTTPURLResponse else {
                        return continuation.resume(throwing: URLError(.badServerResponse))
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        headers[String(describing: name).lowercased()] = String(describing: value)
                    }
                    continuation.resume(
                        returning: PasskeyHTTPResponse(status: http.statusCode, headers: headers, body: data ?? Data()))
                }
                running.start(task)
            }
        } onCancel: {
            running.cancel()
        }
    }
}

/// The data task of one call, so cancellation can reach it whichever of start and cancel comes first.
private final class RunningTask: @unchecked Sendable {
    // @unchecked: `task` and `cancelled` are only read and written while `lock` is held.
    private let lock = NSLock()
    private var task: URLSessionTask?
    private var cancelled = false

    func start(_ task: URLSessionTask) {
        lock.lock()
        self.task = task
        let cancelled = self.cancelled
        lock.unlock()
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        lock.lock()
        cancelled = true
        let task = self.task
        lock.unlock()
        task?.cancel()
    }
}

/// Answers every redirect with "do not follow": the 3xx response is the response.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
