import Glibc
import HTTPMessages
import ServiceContracts

/// The wall clock in Unix milliseconds.
public func unixMillisecondsNow() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

/// One request as a route handler sees it.
public struct RequestContext: Sendable {
    /// The request.
    public let request: HTTPRequest
    /// The route that matched, as `METHOD pattern`.
    public let route: String
    /// The path parameters, percent-decoded.
    public let parameters: [String: String]
    /// The request's ID (the client's `X-Request-ID` when well-formed, else a new one); echoed in the response.
    public let requestID: String
    /// The client, as ``ClientAddressResolver`` decided it.
    let client: ClientAddressResolver.Client
    /// The session the route's middleware validated, for a route that admits one.
    var session: SessionInfo? = nil

    /// The client address (see ``ClientAddressResolver``).
    public var clientAddress: String { client.address }
    /// What the per-address rate limits count the client as: its address, or its IPv6 block
    /// (``ClientAddressResolver/Client/limitKey``), worked out when a limit asks.
    public var clientLimitKey: String { client.limitKey }

    /// The JSON body: 415 when it is not JSON, 400 when it is not a JSON object; an empty body reads as `{}` when
    /// `emptyAllowed`.
    public func jsonBody(emptyAllowed: Bool = false) throws(APIProblem) -> JSONBody {
        let contentType = request.headers["content-type"]
        if request.body.isEmpty {
            if let contentType, !isJSONContentType(contentType) { throw .unsupportedMediaType }
            guard emptyAllowed else { throw .invalidRequest("A JSON body is required.") }
            return try JSONBody(bytes: [], emptyAllowed: true)
        }
        guard isJSONContentType(contentType) else { throw .unsupportedMediaType }
        return try JSONBody(bytes: request.body)
    }
}
