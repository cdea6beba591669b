import HTTPMessages

/// A route's path: literal segments and `{parameter}` segments, e.g. `/v1/passkeys/{credentialID}`.
public struct RoutePattern: Sendable, Equatable, CustomStringConvertible {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    let segments: [Segment]
    /// The pattern as written; used as the route's name in metrics and logs.
    public let description: String

    /// Parses a pattern.
    public init(_ text: String) {
        description = text
        segments = text.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { piece in
            piece.hasPrefix("{") && piece.hasSuffix("}")
                ? .parameter(String(piece.dropFirst().dropLast())) : .literal(String(piece))
        }
    }

    /// The parameters when `path` matches (percent-decoded), or nil.
    public func match(_ path: String) -> [String: String]? {
        guard path.utf8.first == UInt8(ascii: "/") else { return nil }
        return match(pieces: Self.pieces(of: path))
    }

    /// A path's segments after its leading `/`, split on bytes: paths are matched exactly, byte for byte.
    static func pieces(of path: String) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst().map {
            Substring($0)
        }
    }

    func match(pieces: [Substring]) -> [String: String]? {
        guard pieces.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, piece) in zip(segments, pieces) {
            switch segment {
            case .literal(let text):
                guard Self.bytesEqual(piece, text) else { return nil }
            case .parameter(let name):
                guard !piece.isEmpty, let decoded = percentDecoded(piece) else { return nil }
                parameters[name] = decoded
            }
        }
        return parameters
    }
}

extension RoutePattern {
    /// Byte-for-byte equality (no Unicode equivalence: a path matches only as written).
    static func bytesEqual(_ piece: Substring, _ literal: String) -> Bool {
        guard piece.utf8.count == literal.utf8.count else { return false }
        return piece.utf8.withContiguousStorageIfAvailable { pieceBytes in
            literal.utf8.withContiguousStorageIfAvailable { literalBytes in
                pieceBytes.elementsEqual(literalBytes)
            }
        }.flatMap { $0 } ?? piece.utf8.elementsEqual(literal.utf8)
    }
}

/// Percent-decodes a path segment; nil on a malformed escape or invalid UTF-8.
func percentDecoded(_ text: Substring) -> String? {
    guard text.contains("%") else { return String(text) }
    var bytes: [UInt8] = []
    var iterator = Array(text.utf8).makeIterator()
    while let byte = iterator.next() {
        if byte == UInt8(ascii: "%") {
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        } else {
            bytes.append(byte)
        }
    }
    return String(validating: bytes, as: UTF8.self)
}

/// What the router found for a request.
public enum RouteMatch<Handler: Sendable>: Sendable {
    case found(Handler, route: String, parameters: [String: String])
    /// The path exists with other methods.
    case methodNotAllowed(allowed: [String])
    case notFound
}

/// Method-and-path routing. `HEAD` is answered by the `GET` route of the same path.
public struct Router<Handler: Sendable>: Sendable {
    private var routes: [(method: String, pattern: RoutePattern, name: String, handler: Handler)] = []

    /// An empty router.
    public init() {}

    /// Adds a route.
    public mutating func add(_ method: String, _ pattern: String, _ handler: Handler) {
        let pattern = RoutePattern(pattern)
        routes.append((method, pattern, "\(method) \(pattern)", handler))
    }

    /// Every route as `METHOD pattern`, in the order added.
    public var routeNames: [String] { routes.map(\.name) }

    /// Finds the route for `method` and `path`.
    public func match(method: String, path: String) -> RouteMatch<Handler> {
        let lookup = method == "HEAD" ? "GET" : method
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        let pieces = RoutePattern.pieces(of: path)
        var allowed: [String] = []
        for route in routes {
            guard let parameters = route.pattern.match(pieces: pieces) else { continue }
            if route.method == lookup {
                return .found(route.handler, route: route.name, parameters: parameters)
            }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }
}
