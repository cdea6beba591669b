import HTTPMessages

/// Size limits for one HTTP/1.1 request.
public struct HTTP1Limits: Sendable {
    /// Request line plus header fields, in bytes.
    public var maximumHeadBytes: Int
    public var maximumHeaderCount: Int
    /// Body bytes after any chunked decoding.
    public var maximumBodyBytes: Int

    public init(maximumHeadBytes: Int = 16 * 1024, maximumHeaderCount: Int = 100, maximumBodyBytes: Int = 64 * 1024) {
        self.maximumHeadBytes = maximumHeadBytes
        self.maximumHeaderCount = maximumHeaderCount
        self.maximumBodyBytes = maximumBodyBytes
    }
}

/// Why a request could not be read. The connection is closed after the response to any of these.
public struct HTTP1ParseError: Error, Equatable, Sendable {
    /// The status to answer with: 400, 413, 431, 501 or 505.
    public let status: Int
    public let reason: String

    static func badRequest(_ reason: String) -> HTTP1ParseError { HTTP1ParseError(status: 400, reason: reason) }
}

/// One parsed request and how the connection continues after it.
public struct HTTP1Request: Sendable, Equatable {
    public var method: String
    public var target: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Whether the connection stays open after the response.
    public var keepAlive: Bool
}

/// What the parser found in the bytes so far.
public enum HTTP1ParserEvent: Sendable, Equatable {
    /// The client sent `Expect: 100-continue` and waits for `HTTP/1.1 100 Continue` before the body.
    case expectContinue
    case request(HTTP1Request)
}

/// An incremental HTTP/1.1 request parser: feed it bytes as they arrive (any split, one byte at a time included) and
/// take events. Strict where leniency enables request smuggling: CRLF line ends only, no obsolete line folding, no
/// `Content-Length` together with `Transfer-Encoding`, no conflicting lengths.
public struct HTTP1RequestParser: Sendable {
    private enum State: Sendable {
        case head
        case body(Head, remaining: Int)
        case chunkSize(Head)
        case chunkData(Head, remaining: Int)
        case chunkDataEnd(Head)
        case trailers(Head, count: Int)
        case failed(HTTP1ParseError)
    }

    private struct Head: Sendable {
        var method: String
        var target: String
        var headers: HTTPHeaders
        var keepAlive: Bool
        var body: [UInt8] = []
    }

    public let limits: HTTP1Limits
    private var buffer: [UInt8] = []
    private var position = 0
    private var state = State.head
    /// Where the search for the end of the head resumes.
    private var scanFrom = 0

    public init(limits: HTTP1Limits = HTTP1Limits()) { self.limits = limits }

    /// Adds received bytes.
    public mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
            scanFrom = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Whether bytes of a request not yet complete are buffered (for read timeouts between requests).
    public var isIdle: Bool {
        if case .head = state { return position == buffer.count }
        return false
    }

    /// The next event, or nil when more bytes are needed. After an error every call throws the same error.
    public mutating func next() throws -> HTTP1ParserEvent? {
        while true {
            switch state {
            case .failed(let error):
                throw error
            case .head:
                let parsedHead: Head?
                do {
                    parsedHead = try parseHead()
                } catch let error as HTTP1ParseError {
                    return try fail(error)
                }
                guard let head = parsedHead else { return nil }
                let length: Int?
                do {
                    length = try bodyLength(head.headers)
                } catch let error as HTTP1ParseError {
                    return try fail(error)
                }
                if let length {
                    if length == 0 {
                        state = .head
                        return .request(request(head))
                    }
                    state = .body(head, remaining: length)
                } else {
                    state = .chunkSize(head)
                }
                if head.headers["expect"]?.lowercased() == "100-continue" && position == buffer.count {
                    return .expectContinue
                }
            case .body(var head, let remaining):
                let available = min(remaining, buffer.count - position)
                guard available > 0 else { return nil }
                // The state lets go of the body first, so that appending to it does not copy all of it: a body
                // trickled in a byte at a time would cost time quadratic in its length.
                state = .head
                head.body.append(contentsOf: buffer[position..<(position + available)])
                position += available
                if available == remaining {
                    state = .head
                    return .request(request(head))
                }
                state = .body(head, remaining: remaining - available)
            case .chunkSize(let head):
                let sizeLine: ArraySlice<UInt8>?
                do {
                    sizeLine = try readLine(limit: 1024)
                } catch let error as HTTP1ParseError {
                    return try fail(error)
                }
                guard let line = sizeLine else { return nil }
                // RFC 9112's chunk-size is 1*HEXDIG: `Int(_:radix:)` would also take a sign (`+2` read as 2, `-1`
                // waiting for a body that never ends), which a proxy in front may read differently.
                let sizeText = line.prefix { $0 != UInt8(ascii: ";") }
                guard !sizeText.isEmpty, sizeText.count <= 8, sizeText.allSatisfy(isHexDigit),
                    let size = Int(String(decoding: sizeText, as: UTF8.self), radix: 16)
                else { return try fail(.badRequest("bad chunk size")) }
                if size == 0 {
                    state = .trailers(head, count: 0)
                } else if head.body.count + size > limits.maximumBodyBytes {
                    return try fail(HTTP1ParseError(status: 413, reason: "body too large"))
                } else {
                    state = .chunkData(head, remaining: size)
                }
            case .chunkData(var head, let remaining):
                let available = min(remaining, buffer.count - position)
                guard available > 0 else { return nil }
                state = .head  // as for .body: no copy of the body so far
                head.body.append(contentsOf: buffer[position..<(position + available)])
                position += available
                state =
                    available == remaining ? .chunkDataEnd(head) : .chunkData(head, remaining: remaining - available)
            case .chunkDataEnd(let head):
                guard buffer.count - position >= 2 else { return nil }
                guard buffer[position] == 13, buffer[position + 1] == 10 else {
                    return try fail(.badRequest("chunk not followed by CRLF"))
                }
                position += 2
                state = .chunkSize(head)
            case .trailers(let head, let count):
                let trailerLine: ArraySlice<UInt8>?
                do {
                    trailerLine = try readLine(limit: limits.maximumHeadBytes)
                } catch let error as HTTP1ParseError {
                    return try fail(error)
                }
                guard let line = trailerLine else { return nil }
                if line.isEmpty {
                    state = .head
                    return .request(request(head))
                }
                guard count < limits.maximumHeaderCount else {
                    return try fail(HTTP1ParseError(status: 431, reason: "too many trailer fields"))
                }
                state = .trailers(head, count: count + 1)
            }
        }
    }

    private func request(_ head: Head) -> HTTP1Request {
        HTTP1Request(
            method: head.method, target: head.target, headers: head.headers, body: head.body, keepAlive: head.keepAlive)
    }

    /// Records the error so later calls keep failing, and throws it.
    private mutating func fail<T>(_ error: HTTP1ParseError) throws -> T {
        state = .failed(error)
        throw error
    }

    /// Reads up to CRLF; nil when no full line is buffered yet. The bytes are judged in order, each once the byte
    /// after it is known, so the answer does not depend on how they arrived: a bare CR or LF within the first
    /// `limit` bytes is a 400, a line longer than `limit` a 431.
    private mutating func readLine(limit: Int) throws -> ArraySlice<UInt8>? {
        var index = position
        while index < buffer.count {
            guard index - position <= limit else { throw HTTP1ParseError(status: 431, reason: "line too long") }
            if buffer[index] == 13 {
                guard index + 1 < buffer.count else { return nil }
                guard buffer[index + 1] == 10 else { throw HTTP1ParseError.badRequest("bare CR") }
                let line = buffer[position..<index]
                position = index + 2
                return line
            }
            if buffer[index] == 10 { throw HTTP1ParseError.badRequest("bare LF") }
            index += 1
        }
        return nil
    }

    private mutating func parseHead() throws -> Head? {
        // Leading empty lines before a request are tolerated (RFC 9112 section 2.2).
        while buffer.count - position >= 2, buffer[position] == 13, buffer[position + 1] == 10 { position += 2 }
        var end: Int?
        var index = max(position, scanFrom)
        while index + 3 < buffer.count {
            if buffer[index] == 13, buffer[index + 1] == 10, buffer[index + 2] == 13, buffer[index + 3] == 10 {
                end = index
                break
            }
            index += 1
        }
        guard let end else {
            scanFrom = max(position, buffer.count - 3)
            // Up to three bytes of the final CRLFCRLF may be buffered behind a head of exactly the limit: refusing
            // any sooner would refuse a head that is accepted when it arrives in one read.
            if buffer.count - position > limits.maximumHeadBytes + 3 {
                throw HTTP1ParseError(status: 431, reason: "request head too large")
            }
            return nil
        }
        guard end - position <= limits.maximumHeadBytes else {
            throw HTTP1ParseError(status: 431, reason: "request head too large")
        }
        let headBytes = buffer[position..<end]
        position = end + 4
        scanFrom = position
        let pieces = headBytes.split(separator: 13, omittingEmptySubsequences: false)
        // Every line after the first must have started right after a CRLF: a CR not followed by LF is refused.
        guard let firstLine = pieces.first, pieces.dropFirst().allSatisfy({ $0.first == 10 }) else {
            throw HTTP1ParseError.badRequest("bare CR")
        }
        var lines = [firstLine] + pieces.dropFirst().map { $0.dropFirst() }
        let requestLine = lines.removeFirst()
        for line in lines where line.contains(10) { throw HTTP1ParseError.badRequest("bare LF") }
        guard !requestLine.contains(10) else { throw HTTP1ParseError.badRequest("bare LF") }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw HTTP1ParseError.badRequest("malformed request line") }
        guard !parts[0].isEmpty, parts[0].allSatisfy(isTokenCharacter) else {
            throw HTTP1ParseError.badRequest("malformed method")
        }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw HTTP1ParseError.badRequest("malformed request target")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/") { throw HTTP1ParseError(status: 505, reason: "HTTP version not supported") }
            throw HTTP1ParseError.badRequest("malformed HTTP version")
        }
        guard lines.count <= limits.maximumHeaderCount else {
            throw HTTP1ParseError(status: 431, reason: "too many header fields")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw HTTP1ParseError.badRequest("header field without a colon")
            }
            let name = line[line.startIndex..<colon]
            // Obsolete line folding (a line starting with whitespace) and whitespace before the colon are refused.
            guard !name.isEmpty, name.allSatisfy(isTokenCharacter) else {
                throw HTTP1ParseError.badRequest("malformed header field name")
            }
            var value = line[(colon + 1)...]
            while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
            while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
            guard value.allSatisfy({ $0 >= 32 || $0 == 9 }), !value.contains(127) else {
                throw HTTP1ParseError.badRequest("control character in a header field value")
            }
            headers.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        }
        let connectionFields = headers.values("connection")
        let connection =
            connectionFields.isEmpty
            ? []
            : connectionFields.joined(separator: ",").lowercased().split(separator: ",").map {
                $0.trimmingCharacters(in: " \t")
            }
        let keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        if version == "HTTP/1.1" && headers["host"] == nil { throw HTTP1ParseError.badRequest("missing Host header") }
        return Head(
            method: String(decoding: parts[0], as: UTF8.self), target: String(decoding: parts[1], as: UTF8.self),
            headers: headers, keepAlive: keepAlive)
    }

    /// The body length from the head: a number, 0 for none, or nil for chunked.
    private func bodyLength(_ headers: HTTPHeaders) throws -> Int? {
        let transferEncodings = headers.values("transfer-encoding")
        let lengths = headers.values("content-length")
        if !transferEncodings.isEmpty {
            guard lengths.isEmpty else {
                throw HTTP1ParseError.badRequest("both Content-Length and Transfer-Encoding")
            }
            guard transferEncodings.count == 1, transferEncodings[0].lowercased() == "chunked" else {
                throw HTTP1ParseError(status: 501, reason: "unsupported transfer coding")
            }
            return nil
        }
        guard let first = lengths.first else { return 0 }
        // The usual case, one plain number, without splitting and trimming.
        if lengths.count == 1, (1...18).contains(first.utf8.count),
            first.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let length = Int(first)
        {
            guard length <= limits.maximumBodyBytes else {
                throw HTTP1ParseError(status: 413, reason: "body too large")
            }
            return length
        }
        let values = Set(lengths.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: " \t") } })
        guard values.count == 1, first.utf8.count <= 18, first.allSatisfy(\.isASCII),
            let value = values.first, !value.isEmpty, value.allSatisfy(\.isNumber), let length = Int(value)
        else { throw HTTP1ParseError.badRequest("malformed Content-Length") }
        guard length <= limits.maximumBodyBytes else { throw HTTP1ParseError(status: 413, reason: "body too large") }
        return length
    }
}

/// `[0-9A-Fa-f]`.
private func isHexDigit(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
        UInt8(ascii: "A")...UInt8(ascii: "F"):
        return true
    default:
        return false
    }
}

private func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    default:
        return "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let scalars = Array(unicodeScalars)
        var start = 0
        var end = scalars.count
        while start < end, set.unicodeScalars.contains(scalars[start]) { start += 1 }
        while end > start, set.unicodeScalars.contains(scalars[end - 1]) { end -= 1 }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[start..<end])
        return String(result)
    }
}
