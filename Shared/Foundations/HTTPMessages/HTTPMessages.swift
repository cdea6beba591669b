/// Header fields in order, with case-insensitive lookup. Names are stored lowercased.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    public private(set) var fields: [(name: String, value: String)]

    public init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: lowercasedName($0.0), value: $0.1) }
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: lowercasedName(name), value: value))
    }

    /// Replaces every field called `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        let lowered = lowercasedName(name)
        fields.removeAll { $0.name == lowered }
        fields.append((name: lowered, value: value))
    }

    /// The first value of `name`.
    public subscript(name: String) -> String? {
        let lowered = lowercasedName(name)
        return fields.first { $0.name == lowered }?.value
    }

    /// Every value of `name`.
    public func values(_ name: String) -> [String] {
        let lowered = lowercasedName(name)
        return fields.filter { $0.name == lowered }.map(\.value)
    }

    public func makeIterator() -> some IteratorProtocol<(name: String, value: String)> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// A field name in lowercase. Names are ASCII tokens and usually lowercase already, so that case returns the name
/// itself without the Unicode-aware `lowercased()`.
@inline(__always)
func lowercasedName(_ name: String) -> String {
    let isLowercaseASCII: (UInt8) -> Bool = { $0 < 0x80 && !($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
    let plain = name.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isLowercaseASCII) }
    if plain ?? name.utf8.allSatisfy(isLowercaseASCII) { return name }
    return name.lowercased()
}

/// An HTTP request as the gateway's routes see it, whichever protocol carried it.
public struct HTTPRequest: Sendable, Equatable {
    public var method: String
    /// The path, percent-encoded as received, without the query.
    public var path: String
    /// The query string without `?`, or nil.
    public var query: String?
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer's address, as the transport saw it.
    public var remoteAddress: String

    public init(
        method: String, path: String, query: String? = nil, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Splits a request target into path and query.
    public static func splitTarget(_ target: String) -> (path: String, query: String?) {
        guard let mark = target.firstIndex(of: "?") else { return (target, nil) }
        return (String(target[..<mark]), String(target[target.index(after: mark)...]))
    }
}

/// An HTTP response.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The standard reason phrase for the status codes this server sends.
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}
