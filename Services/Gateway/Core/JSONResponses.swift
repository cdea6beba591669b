import HTTPMessages
import JSON

/// The responses both listeners' handlers answer with.
extension GatewayApplication {
    /// 204 for a change that worked; never cached.
    static let noContent = HTTPResponse(status: 204, headers: HTTPHeaders([("cache-control", "no-store")]))

    /// 202 for work queued (a message in the outbox, or nothing, which reads the same); never cached.
    static let accepted = HTTPResponse(status: 202, headers: HTTPHeaders([("cache-control", "no-store")]))

    /// `value` as JSON; never cached.
    static func json(_ status: Int, _ value: JSONValue) -> HTTPResponse {
        jsonResponse(status, bytes: value.serialized(), cacheable: false)
    }

    /// JSON bytes; `cacheable` ones for five minutes.
    static func jsonResponse(_ status: Int, bytes: [UInt8], cacheable: Bool) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: HTTPHeaders([
                ("content-type", "application/json"), ("cache-control", cacheable ? "public, max-age=300" : "no-store"),
            ]),
            body: bytes)
    }
}
