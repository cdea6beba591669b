import Foundation

/// An HTTP method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// `GET`.
    public static let get = HTTPMethod(rawValue: "GET")
    /// `POST`.
    public static let post = HTTPMethod(rawValue: "POST")
    /// `PATCH`.
    public static let patch = HTTPMethod(rawValue: "PATCH")
    /// `DELETE`.
    public static let delete = HTTPMethod(rawValue: "DELETE")
}

/// One route of the gateway: its method and path pattern as the gateway's router and `openapi.json` write them,
/// the OpenAPI `operationId`, whether it needs the bearer token, and whether the client may retry it.
public struct APIRoute: Hashable, Sendable, CustomStringConvertible {
    /// The method.
    public let method: HTTPMethod
    /// The path with `{parameter}` segments, e.g. `/v1/passkeys/{credentialID}`.
    public let pattern: String
    /// The operation's `operationId` in `openapi.json`.
    public let operationID: String
    /// Whether the request carries `Authorization: Bearer <accessToken>`.
    public let requiresAccessToken: Bool
    /// Whether a transient failure may be retried: only GETs and the ceremony start routes (a start only issues a
    /// challenge; repeating one is harmless, while a finish consumes its challenge and a change may have happened).
    public let isRetryable: Bool

    /// Creates a route; GETs are retryable unless `retryable` says otherwise.
    public init(
        _ method: HTTPMethod, _ pattern: String, operationID: String, requiresAccessToken: Bool = false,
        retryable: Bool? = nil
    ) {
        self.method = method
        self.pattern = pattern
        self.operationID = operationID
        self.requiresAccessToken = requiresAccessToken
        self.isRetryable = retryable ?? (method == .get)
    }

    /// `METHOD pattern`, as the gateway names its routes in metrics and logs.
    public var description: String { "\(method) \(pattern)" }

    /// The path with each `{name}` replaced by its percent-encoded parameter.
    public func path(_ parameters: [String: String]) throws -> String {
        var segments: [String] = []
        for segment in pattern.split(separator: "/", omittingEmptySubsequences: false) {
            guard segment.hasPrefix("{"), segment.hasSuffix("}") else {
                segments.append(String(segment))
                continue
            }
            let name = String(segment.dropFirst().dropLast())
            guard let value = parameters[name], !value.isEmpty,
                let encoded = value.addingPercentEncoding(withAllowedCharacters: Self.unreserved)
            else {
                throw PasskeyClientError(
                    code: .invalidArgument, detail: "The path parameter \(name) is empty.", operation: description)
            }
            segments.append(encoded)
        }
        return segments.joined(separator: "/")
    }

    /// RFC 3986's unreserved characters: everything else in a path parameter is percent-encoded.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// The body of a request.
public enum APIRequestBody: Sendable {
    /// No body.
    case none
    /// A JSON body; `Data` members are written as base64url.
    case json(any Encodable & Sendable)
    /// Bytes sent as they are, with their content type.
    case raw(Data, contentType: String)

    /// The bytes and content type sent, or nil for ``none``.
    public func encoded() throws -> (data: Data, contentType: String)? {
        switch self {
        case .none:
            return nil
        case .json(let value):
            do {
                return (try JSONCoding.encoder().encode(value), "application/json")
            } catch {
                throw PasskeyClientError(code: .invalidArgument, detail: "The request body cannot be encoded: \(error)")
            }
        case .raw(let data, let contentType):
            return (data, contentType)
        }
    }
}

/// What a successful operation does to the stored tokens.
public enum AccessTokenChange: Sendable, Equatable {
    /// Keep these tokens for later calls. The client counts their expiry from the response's arrival
    /// (``AccessToken/anchored(at:)``).
    case store(AccessToken)
    /// Forget the tokens.
    case remove

    /// The change with a stored token's expiry counted from `arrival`.
    func anchored(at arrival: Date) -> AccessTokenChange {
        guard case .store(let token) = self else { return self }
        return .store(token.anchored(at: arrival))
    }
}

/// A call to the gateway as a value, in the talk's shape: `try await apiClient.execute(PasskeyAuthenticationStartOperation())`.
/// The operation says its route, path parameters, body and response type; ``PasskeyAPIClient`` sends it, adds the
/// bearer token where the route needs one, retries where the route allows, and decodes the response.
///
/// Every route of the gateway has an operation in this library (``PasskeyAPI/routes`` lists them); an app may
/// define its own for routes outside the contract.
public protocol PasskeyAPIOperation: Sendable {
    /// What a successful response decodes to.
    associatedtype Response: Sendable

    /// The route.
    var route: APIRoute { get }
    /// Values for the route's `{parameter}` segments.
    var pathParameters: [String: String] { get }
    /// The request body.
    var body: APIRequestBody { get }
    /// Whether `status` is a successful answer to this operation (2xx unless the operation says more).
    func accepts(status: Int) -> Bool
    /// The value of a successful response; throws ``PasskeyClientError`` (``PasskeyClientError/Code/malformedResponse``)
    /// when it does not match the contract.
    func decodeResponse(_ response: PasskeyHTTPResponse) throws -> Response
    /// What the response does to the stored tokens (sign-ins and refreshes store them, sign-out removes them).
    func accessTokenChange(for response: Response) -> AccessTokenChange?
}

extension PasskeyAPIOperation {
    public var pathParameters: [String: String] { [:] }
    public var body: APIRequestBody { .none }
    public func accepts(status: Int) -> Bool { (200..<300).contains(status) }
    public func accessTokenChange(for response: Response) -> AccessTokenChange? { nil }
}

extension PasskeyAPIOperation where Response: Decodable {
    /// Decodes a JSON body; the content type must be JSON.
    public func decodeResponse(_ response: PasskeyHTTPResponse) throws -> Response {
        let operation = route.description
        guard MediaType.isJSON(response.contentType) else {
            throw PasskeyClientError(
                code: .malformedResponse, status: response.status,
                detail: "Expected application/json, got \(response.contentType ?? "no content type").", field: "",
                requestID: response.headers["x-request-id"], headers: response.headers, operation: operation)
        }
        do {
            return try JSONCoding.decoder().decode(Response.self, from: response.body)
        } catch {
            throw PasskeyClientError.malformed(error, response: response, operation: operation)
        }
    }
}

/// The response of an operation answered with `204 No Content`.
public struct NoContent: Sendable, Equatable {
    /// The value.
    public init() {}
}

extension PasskeyAPIOperation where Response == NoContent {
    /// Accepts any successful response; the body, if any, is ignored.
    public func decodeResponse(_ response: PasskeyHTTPResponse) throws -> NoContent { NoContent() }
}

/// An image response (a passkey provider's icon).
public struct ImageDocument: Sendable, Equatable {
    /// The image.
    public var data: Data
    /// Its media type, e.g. `image/svg+xml`.
    public var contentType: String

    /// Creates a document.
    public init(data: Data, contentType: String) {
        self.data = data
        self.contentType = contentType
    }
}

extension PasskeyAPIOperation where Response == ImageDocument {
    /// Reads an `image/*` body.
    public func decodeResponse(_ response: PasskeyHTTPResponse) throws -> ImageDocument {
        let contentType = response.contentType ?? ""
        guard MediaType.essence(contentType).hasPrefix("image/"), !response.body.isEmpty else {
            throw PasskeyClientError(
                code: .malformedResponse, status: response.status,
                detail: "Expected an image, got \(contentType.isEmpty ? "no content type" : contentType).", field: "",
                requestID: response.headers["x-request-id"], headers: response.headers, operation: route.description)
        }
        return ImageDocument(data: response.body, contentType: contentType)
    }
}

/// A text response (Prometheus metrics, pages and scripts of the gateway's own web page).
public struct TextDocument: Sendable, Equatable {
    /// The text.
    public var text: String
    /// Its content type.
    public var contentType: String

    /// Creates a document.
    public init(text: String, contentType: String) {
        self.text = text
        self.contentType = contentType
    }
}

extension PasskeyAPIOperation where Response == TextDocument {
    /// Reads a `text/*` body as UTF-8.
    public func decodeResponse(_ response: PasskeyHTTPResponse) throws -> TextDocument {
        let contentType = response.contentType ?? ""
        guard MediaType.essence(contentType).hasPrefix("text/"), let text = String(data: response.body, encoding: .utf8)
        else {
            throw PasskeyClientError(
                code: .malformedResponse, status: response.status,
                detail: "Expected UTF-8 text, got \(contentType.isEmpty ? "no content type" : contentType).", field: "",
                requestID: response.headers["x-request-id"], headers: response.headers, operation: route.description)
        }
        return TextDocument(text: text, contentType: contentType)
    }
}

/// A successful response: the decoded value with the status and header fields it came with.
public struct PasskeyAPIResponse<Value: Sendable>: Sendable {
    /// The decoded value.
    public var value: Value
    /// The HTTP status.
    public var status: Int
    /// Header fields with lowercased names.
    public var headers: [String: String]

    /// The gateway's `X-Request-ID` for the request.
    public var requestID: String? { headers["x-request-id"] }
}
