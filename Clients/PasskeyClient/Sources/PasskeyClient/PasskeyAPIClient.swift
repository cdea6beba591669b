import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Executes ``PasskeyAPIOperation``s against the gateway, the talk's `apiClient`:
///
/// ```swift
/// let client = PasskeyAPIClient(baseURL: URL(string: "https://example.com")!)
/// let start = try await client.execute(PasskeyAuthenticationStartOperation())
/// ```
///
/// - Tokens: a sign-in's tokens go to the ``AccessTokenStore``; the access token is sent with every route that needs
///   it; sign-out removes them.
/// - Refresh: an access token that expires within ``Configuration/refreshLeeway`` is refreshed before it is used,
///   once for all the calls that need it meanwhile; an `unauthenticated` answer to it leads to one refresh and one
///   retry. A refresh the gateway refuses (401: the session is over) removes the tokens and tells
///   ``sessionEvents()`` ``SessionEvent/signedOut(reason:)``; a refresh that fails otherwise (no answer, 503) keeps
///   them and its failure is thrown, unless the old access token has not expired yet and the call can use it.
///   Without a refresh token (opaque access tokens), an `unauthenticated` answer removes the token.
/// - Errors: everything thrown is a ``PasskeyClientError``; problem documents keep their `code`, `reason` and status.
/// - Timeouts and cancellation: each attempt has ``Configuration/timeout``; cancelling the calling task cancels the
///   request at once.
/// - Retries: only GETs and the ceremony start routes are retried, and only after transient failures.
public final class PasskeyAPIClient: Sendable {
    /// How the client behaves.
    public struct Configuration: Sendable {
        /// The longest one attempt may take, response body included.
        public var timeout: Duration
        /// When to try a retryable route again.
        public var retryPolicy: RetryPolicy
        /// The `User-Agent` header field, if the app sets one.
        public var userAgent: String?
        /// Waits between attempts; tests may pass one that returns at once.
        public var sleep: @Sendable (Duration) async throws -> Void
        /// How long before the access token expires the client refreshes it (at most half the token's lifetime).
        public var refreshLeeway: Duration
        /// This device's wall clock, which the access token's expiry is counted on; tests may pass one they move.
        public var clock: @Sendable () -> Date

        /// The defaults: 15 s per attempt, ``RetryPolicy/standard``, refresh 60 s before expiry.
        public init(
            timeout: Duration = .seconds(15), retryPolicy: RetryPolicy = .standard, userAgent: String? = nil,
            sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
            refreshLeeway: Duration = .seconds(60), clock: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.timeout = timeout
            self.retryPolicy = retryPolicy
            self.userAgent = userAgent
            self.sleep = sleep
            self.refreshLeeway = refreshLeeway
            self.clock = clock
        }
    }

    /// How often and how soon a retryable route is tried again after a transient failure (no response, a timeout,
    /// or 502/503/504). `Retry-After` is honoured when it is within ``maximumBackoff``; a longer one ends the retries.
    public struct RetryPolicy: Sendable, Equatable {
        /// Attempts in all, the first included.
        public var maximumAttempts: Int
        /// The wait before the second attempt; it doubles for each later one.
        public var initialBackoff: Duration
        /// The longest wait.
        public var maximumBackoff: Duration
        /// Whether each wait is shortened by a random part of up to half, so clients do not retry in step.
        public var jitter: Bool

        /// Creates a policy.
        public init(maximumAttempts: Int, initialBackoff: Duration, maximumBackoff: Duration, jitter: Bool = true) {
            self.maximumAttempts = max(1, maximumAttempts)
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.jitter = jitter
        }

        /// Three attempts, 250 ms then 500 ms apart (with jitter), waits capped at 2 s.
        public static let standard = RetryPolicy(
            maximumAttempts: 3, initialBackoff: .milliseconds(250), maximumBackoff: .seconds(2))
        /// One attempt only.
        public static let none = RetryPolicy(maximumAttempts: 1, initialBackoff: .zero, maximumBackoff: .zero)

        /// The wait before the attempt after `attempt` (1 for the first), or nil when there is none.
        public func delay(afterAttempt attempt: Int, retryAfterSeconds: Int? = nil) -> Duration? {
            guard attempt < maximumAttempts else { return nil }
            var delay = min(initialBackoff * (1 << min(attempt - 1, 20)), maximumBackoff)
            if jitter { delay = delay * Double.random(in: 0.5...1.0) }
            if let retryAfterSeconds {
                let asked = Duration.seconds(max(0, retryAfterSeconds))
                guard asked <= maximumBackoff else { return nil }
                delay = max(delay, asked)
            }
            return delay
        }
    }

    /// The gateway's URL, e.g. `https://example.com` (a path prefix such as `https://example.com/auth` is kept).
    public let baseURL: URL
    /// The client's behaviour.
    public let configuration: Configuration
    /// Where the session's tokens are kept.
    public let tokenStore: any AccessTokenStore
    private let transport: any PasskeyHTTPTransport
    private let events = SessionEventBroadcaster()
    private let refreshes = SingleFlightRefresh()

    /// A client for the gateway at `baseURL`.
    public init(
        baseURL: URL, configuration: Configuration = Configuration(),
        tokenStore: any AccessTokenStore = InMemoryAccessTokenStore(),
        transport: any PasskeyHTTPTransport = URLSessionTransport()
    ) {
        self.baseURL = baseURL
        self.configuration = configuration
        self.tokenStore = tokenStore
        self.transport = transport
    }

    /// Executes `operation` and returns its response value.
    @discardableResult
    public func execute<Operation: PasskeyAPIOperation>(_ operation: Operation) async throws -> Operation.Response {
        try await send(operation).value
    }

    /// Executes `operation` and returns its response value with the status and header fields.
    public func send<Operation: PasskeyAPIOperation>(_ operation: Operation) async throws
        -> PasskeyAPIResponse<Operation.Response>
    {
        let route = operation.route
        let name = route.description
        let url = try url(for: route, parameters: operation.pathParameters)
        let body: (data: Data, contentType: String)?
        do {
            body = try operation.body.encoded()
        } catch var error as PasskeyClientError {
            error.operation = name
            throw error
        }
        var attempt = 1
        var refreshedAfterRefusal = false
        while true {
            if Task.isCancelled { throw PasskeyClientError(code: .cancelled, operation: name) }
            let token = route.requiresAccessToken ? try await currentToken(operation: name) : nil
            var headers: [String: String] = [:]
            if let body { headers["content-type"] = body.contentType }
            if let token { headers["authorization"] = "Bearer \(token.value)" }
            if let userAgent = configuration.userAgent { headers["user-agent"] = userAgent }
            let request = PasskeyHTTPRequest(
                method: route.method, url: url, headers: headers, body: body?.data, timeout: configuration.timeout)

            let failure: PasskeyClientError
            var refused: AccessToken?
            do {
                let response = try await exchange(request, operation: name)
                let arrival = configuration.clock()
                let isProblem = response.status >= 400 && MediaType.isProblemJSON(response.contentType)
                if operation.accepts(status: response.status) && !isProblem {
                    let value = try decode(response, with: operation)
                    if let change = operation.accessTokenChange(for: value) {
                        try await apply(change.anchored(at: arrival), operation: name)
                        if change == .remove { events.yield(.signedOut(reason: .signedOut)) }
                    }
                    return PasskeyAPIResponse(value: value, status: response.status, headers: response.headers)
                }
                failure = PasskeyClientError(response: response, operation: name)
                if failure.code == .unauthenticated { refused = token }
            } catch let error as PasskeyClientError {
                failure = error
            }
            if let refused {
                // One refresh and one retry for a refused access token; a refresh that fails ends the call (and, when
                // the gateway refused it, the session) without a retry.
                guard refused.refreshToken != nil, !refreshedAfterRefusal else {
                    await forget(refused)
                    throw failure
                }
                refreshedAfterRefusal = true
                try await refresh(afterRefusalOf: refused, failure: failure)
                continue
            }
            guard route.isRetryable, failure.isTransient,
                let delay = configuration.retryPolicy.delay(
                    afterAttempt: attempt, retryAfterSeconds: failure.retryAfterSeconds)
            else { throw failure }
            do {
                try await configuration.sleep(delay)
            } catch {
                throw PasskeyClientError(code: .cancelled, operation: name)
            }
            attempt += 1
        }
    }

    /// The stored tokens, if any.
    public func accessToken() async throws -> AccessToken? { try await loadToken(operation: nil) }

    /// Replaces the stored tokens (nil removes them), e.g. with ones restored from elsewhere; their
    /// ``AccessToken/expiresAt`` is taken as it is.
    public func setAccessToken(_ token: AccessToken?) async throws {
        try await apply(token.map(AccessTokenChange.store) ?? .remove, operation: nil)
    }

    /// Refreshes the access token now, sharing a refresh already under way, and returns the stored tokens: the new
    /// ones, or the stored ones unchanged when they have no refresh token; nil when there are none. Throws
    /// ``PasskeyClientError/Code/unauthenticated`` when the gateway refuses the refresh (the tokens are removed and
    /// ``sessionEvents()`` says ``SessionEvent/signedOut(reason:)``), and the failure of a refresh that got no
    /// answer (the tokens are kept).
    @discardableResult
    public func refreshSession() async throws -> AccessToken? {
        guard let token = try await loadToken(operation: SessionRefreshOperation.route.description) else { return nil }
        return try await refreshes.refreshed(from: token) { [self] seen in try await refresh(seen) }
    }

    /// The session's events from now on: refreshes the client made by itself, and the end of the session (a refresh
    /// the gateway refused, a refused access token that could not be refreshed, or sign-out). Each call returns a
    /// stream of its own; it ends when the client is released.
    public func sessionEvents() -> AsyncStream<SessionEvent> { events.stream() }

    // MARK: - One attempt

    /// Sends `request` within its timeout; every failure becomes a ``PasskeyClientError``.
    private func exchange(_ request: PasskeyHTTPRequest, operation: String) async throws -> PasskeyHTTPResponse {
        let transport = self.transport
        do {
            return try await withThrowingTaskGroup(of: PasskeyHTTPResponse?.self) { group in
                group.addTask { try await transport.send(request) }
                group.addTask {
                    try await Task.sleep(for: request.timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else { throw DeadlinePassed() }
                return response
            }
        } catch is DeadlinePassed {
            throw PasskeyClientError(
                code: .timedOut, detail: "No response within \(request.timeout).", operation: operation)
        } catch {
            throw Self.transportFailure(error, operation: operation)
        }
    }

    private struct DeadlinePassed: Error {}

    /// A transport's error as the client reports it.
    static func transportFailure(_ error: any Error, operation: String) -> PasskeyClientError {
        if Task.isCancelled || error is CancellationError {
            return PasskeyClientError(code: .cancelled, operation: operation)
        }
        if var error = error as? PasskeyClientError {
            error.operation = operation
            return error
        }
        if let error = error as? URLError {
            switch error.code {
            case .timedOut:
                return PasskeyClientError(code: .timedOut, detail: "The request timed out.", operation: operation)
            default:
                return PasskeyClientError(
                    code: .networkFailure, detail: "URLError \(error.code.rawValue): \(error.localizedDescription)",
                    operation: operation)
            }
        }
        return PasskeyClientError(code: .networkFailure, detail: String(describing: error), operation: operation)
    }

    private func decode<Operation: PasskeyAPIOperation>(_ response: PasskeyHTTPResponse, with operation: Operation)
        throws -> Operation.Response
    {
        do {
            return try operation.decodeResponse(response)
        } catch let error as PasskeyClientError {
            throw error
        } catch {
            throw PasskeyClientError.malformed(error, response: response, operation: operation.route.description)
        }
    }

    private func url(for route: APIRoute, parameters: [String: String]) throws -> URL {
        let path = try route.path(parameters)
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + path) else {
            throw PasskeyClientError(
                code: .invalidArgument, detail: "No URL for \(path) under \(base).", operation: route.description)
        }
        return url
    }

    // MARK: - The tokens

    /// The stored tokens for a call that needs them, refreshed first when the access token is about to expire. A
    /// refresh that gets no answer leaves the access token in use while it has not expired.
    private func currentToken(operation: String) async throws -> AccessToken? {
        guard let token = try await loadToken(operation: operation) else { return nil }
        let now = configuration.clock()
        guard token.needsRefresh(at: now, leeway: configuration.refreshLeeway) else { return token }
        do {
            return try await refreshes.refreshed(from: token) { [self] seen in try await refresh(seen) }
        } catch let error as PasskeyClientError where Self.endsSession(error) {
            throw error
        } catch {
            guard token.isUsable(at: now) else { throw error }
            return token
        }
    }

    /// After the gateway refused `token`: its refresh (shared with others under way), or the call's own failure when
    /// the session turned out to be over.
    private func refresh(afterRefusalOf token: AccessToken, failure: PasskeyClientError) async throws {
        do {
            guard try await refreshes.refreshed(from: token, by: { [self] seen in try await refresh(seen) }) != nil
            else { throw failure }
        } catch let error as PasskeyClientError where Self.endsSession(error) {
            throw failure
        }
    }

    /// One refresh of `seen`'s refresh token, unless the store holds other tokens by now (an earlier refresh's, a
    /// new sign-in's, or none): then those, as they are.
    private func refresh(_ seen: AccessToken) async throws -> AccessToken? {
        let name = SessionRefreshOperation.route.description
        guard let stored = try await loadToken(operation: name) else { return nil }
        guard let refreshToken = stored.refreshToken, stored.refreshToken == seen.refreshToken else { return stored }
        do {
            _ = try await send(SessionRefreshOperation(refreshToken: refreshToken))
        } catch let error as PasskeyClientError where Self.endsSession(error) {
            if (try? await tokenStore.load())?.refreshToken == refreshToken, (try? await tokenStore.remove()) != nil {
                events.yield(.signedOut(reason: SignedOutReason(refreshFailure: error)))
            }
            throw error
        }
        events.yield(.refreshed)
        return try await loadToken(operation: name)
    }

    /// Whether a refresh's failure means the session is over: the gateway answered 401.
    private static func endsSession(_ error: PasskeyClientError) -> Bool {
        error.status == 401 && error.code == .unauthenticated
    }

    private func loadToken(operation: String?) async throws -> AccessToken? {
        do {
            return try await tokenStore.load()
        } catch {
            throw PasskeyClientError(
                code: .tokenStorageFailed, detail: "Loading the access token failed: \(error)", operation: operation)
        }
    }

    private func apply(_ change: AccessTokenChange, operation: String?) async throws {
        do {
            switch change {
            case .store(let token): try await tokenStore.save(token)
            case .remove: try await tokenStore.remove()
            }
        } catch {
            throw PasskeyClientError(
                code: .tokenStorageFailed, detail: "Updating the access token failed: \(error)", operation: operation)
        }
    }

    /// Forgets `token` after the gateway refused it, unless a newer sign-in or a refresh replaced it meanwhile. The
    /// refusal is what the caller hears about; a store that fails here keeps the token until the next refusal.
    private func forget(_ token: AccessToken) async {
        guard (try? await tokenStore.load()) == token, (try? await tokenStore.remove()) != nil else { return }
        events.yield(.signedOut(reason: .accessTokenRefused))
    }
}
