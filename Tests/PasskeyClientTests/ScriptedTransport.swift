import Foundation
import PasskeyClient
import Synchronization

/// A transport that answers from a script and records what was sent.
final class ScriptedTransport: PasskeyHTTPTransport {
    private let handler: @Sendable (PasskeyHTTPRequest, Int) throws -> PasskeyHTTPResponse
    private let sent = Mutex<[PasskeyHTTPRequest]>([])

    /// Answers the `n`th request (0 first) with `handler(request, n)`.
    init(_ handler: @escaping @Sendable (PasskeyHTTPRequest, Int) throws -> PasskeyHTTPResponse) {
        self.handler = handler
    }

    /// Answers every request with `response`.
    convenience init(always response: PasskeyHTTPResponse) { self.init { _, _ in response } }

    /// Answers the requests in turn; requests past the end get the last one.
    convenience init(_ responses: [PasskeyHTTPResponse]) {
        self.init { _, index in responses[min(index, responses.count - 1)] }
    }

    var requests: [PasskeyHTTPRequest] { sent.withLock { $0 } }

    func send(_ request: PasskeyHTTPRequest) async throws -> PasskeyHTTPResponse {
        let index = sent.withLock { sent in
            sent.append(request)
            return sent.count - 1
        }
        return try handler(request, index)
    }

    static func json(_ status: Int, _ text: String, headers: [String: String] = [:]) -> PasskeyHTTPResponse {
        PasskeyHTTPResponse(
            status: status, headers: headers.merging(["content-type": "application/json"]) { old, _ in old },
            body: Data(text.utf8))
    }

    static func problem(
        _ status: Int, _ code: String, reason: String? = nil, headers: [String: String] = [:]
    ) -> PasskeyHTTPResponse {
        var text = #"{"type":"https://passkey.example/problems/x","title":"T","status":\#(status),"code":"\#(code)""#
        if let reason { text += #","reason":"\#(reason)""# }
        text += #","detail":"Safe to show."}"#
        return PasskeyHTTPResponse(
            status: status, headers: headers.merging(["content-type": "application/problem+json"]) { old, _ in old },
            body: Data(text.utf8))
    }

    static let noContent = PasskeyHTTPResponse(status: 204)

    static let session = json(
        200,
        #"{"accessToken":"token-1","tokenType":"Bearer","expiresAt":"2026-11-29T18:30:00Z","expiresIn":600,"sessionID":"s1","sessionExpiresAt":"2026-12-29T18:30:00Z","accountID":"a1","displayName":"Ada"}"#
    )

    /// A session document with signed tokens: access token `access-<n>`, refresh token `prt_<n>`, living `expiresIn`
    /// seconds.
    static func signedSession(_ n: Int, expiresIn: Int = 600, status: Int = 200) -> PasskeyHTTPResponse {
        json(
            status,
            #"{"accessToken":"access-\#(n)","tokenType":"Bearer","expiresAt":"2026-11-29T18:30:00Z","expiresIn":\#(expiresIn),"refreshToken":"prt_\#(n)","refreshTokenExpiresAt":"2026-12-06T18:30:00Z","sessionID":"s1","sessionExpiresAt":"2026-12-29T18:30:00Z","accountID":"a1","displayName":"Ada"}"#
        )
    }
}

/// A client over `transport` whose waits between retries go to `waits` instead of the clock, and whose wall clock
/// is `clock`.
func makeClient(
    _ transport: any PasskeyHTTPTransport, store: any AccessTokenStore = InMemoryAccessTokenStore(),
    retry: PasskeyAPIClient.RetryPolicy = .init(
        maximumAttempts: 3, initialBackoff: .milliseconds(100), maximumBackoff: .seconds(2), jitter: false),
    waits: SleepRecorder = SleepRecorder(), baseURL: String = "https://example.com", userAgent: String? = nil,
    clock: ManualClock = ManualClock()
) -> PasskeyAPIClient {
    PasskeyAPIClient(
        baseURL: URL(string: baseURL)!,
        configuration: .init(
            timeout: .seconds(5), retryPolicy: retry, userAgent: userAgent, sleep: { waits.record($0) },
            clock: { clock.now }),
        tokenStore: store, transport: transport)
}

/// A wall clock that moves only when told.
final class ManualClock: Sendable {
    private let current: Mutex<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_795_977_000)) { current = Mutex(start) }
    var now: Date { current.withLock { $0 } }
    func advance(by duration: Duration) { current.withLock { $0 += Double(duration.components.seconds) } }
}

/// Records the waits between attempts instead of waiting.
final class SleepRecorder: Sendable {
    private let waits = Mutex<[Duration]>([])
    func record(_ duration: Duration) { waits.withLock { $0.append(duration) } }
    var recorded: [Duration] { waits.withLock { $0 } }
}
