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
///
/// A path names one resource: of the patterns that match it, the most specific one, where a literal segment beats a
/// parameter at the first place they differ (as OpenAPI matches concrete paths before templated ones). Only that
/// resource's routes answer, so `/v1/passkeys/authentications` is never taken for `/v1/passkeys/{credentialID}`,
/// and a 405 lists exactly the resource's methods.
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

    /// The methods of the resource at `pattern` (with `HEAD` after `GET`), in the order added; empty when no route
    /// has that pattern.
    public func methods(of pattern: String) -> [String] {
        let shape = RoutePattern(pattern)
        return routes.filter { $0.pattern.hasShape(of: shape) }.flatMap {
            $0.method == "GET" ? ["GET", "HEAD"] : [$0.method]
        }
    }

    /// Finds the route for `method` and `path`.
    public func match(method: String, path: String) -> RouteMatch<Handler> {
        let lookup = method == "HEAD" ? "GET" : method
        guard path.utf8.first == UInt8(ascii: "/") else { return .notFound }
        let pieces = RoutePattern.pieces(of: path)
        var resource: (pattern: RoutePattern, parameters: [String: String])?
        for route in routes {
            if let current = resource?.pattern, !route.pattern.isMoreSpecific(than: current) { continue }
            guard let parameters = route.pattern.match(pieces: pieces) else { continue }
            resource = (route.pattern, parameters)
        }
        guard let resource else { return .notFound }
        var allowed: [String] = []
        for route in routes where route.pattern.hasShape(of: resource.pattern) {
            if route.method == lookup {
                return .found(route.handler, route: route.name, parameters: resource.parameters)
            }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        return .methodNotAllowed(allowed: allowed)
    }
}

extension RoutePattern {
    /// Whether both patterns have the same literals in the same places and parameters in the same places (whatever
    /// the parameters' names): the same resource.
    func hasShape(of other: RoutePattern) -> Bool {
        guard segments.count == other.segments.count else { return false }
        for (mine, theirs) in zip(segments, other.segments) {
            switch (mine, theirs) {
            case (.literal(let a), .literal(let b)) where a == b: continue
            case (.parameter, .parameter): continue
            default: return false
            }
        }
        return true
    }

    /// Whether this pattern is preferred to `other` for a path both match: at the first place they differ, this one
    /// has a literal and the other a parameter. Patterns of different lengths never match the same path.
    func isMoreSpecific(than other: RoutePattern) -> Bool {
        guard segments.count == other.segments.count else { return true }
        for (mine, theirs) in zip(segments, other.segments) {
            switch (mine, theirs) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }
}

extension RoutePattern {
    /// The names of the pattern's parameters, in order.
    var parameterNames: [String] {
        segments.compactMap {
            guard case .parameter(let name) = $0 else { return nil }
            return name
        }
    }
}
