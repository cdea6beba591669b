import CCurl

/// One HTTP request for ``HTTPClient/perform(_:)``: the method, URL, header fields and body, the schemes it may use,
/// its times, and how much of the response to keep.
public struct HTTPRequest: Sendable {
    public var method: String
    public var url: String
    /// Sent as they are, after libcurl's own `Host`, `Content-Length` and `User-Agent`. Without a `Content-Type`
    /// here, a request with a body goes without one (never libcurl's form type).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var userAgent: String
    /// The schemes libcurl may speak, as `CURLOPT_PROTOCOLS_STR` takes them (`http`, `http,https`).
    public var protocols: String
    /// The URL's host and port, and the numeric addresses to connect to for them: libcurl connects to these only,
    /// never to what it would resolve itself (`CURLOPT_RESOLVE`). Empty: libcurl resolves the host.
    public var host: String
    public var port: Int
    public var addresses: [String]
    /// The budget to connect, and of the whole exchange, connecting included.
    public var connectTimeout: Duration
    public var timeout: Duration
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var caFile: String?
    /// Whether the server's certificate chain and name are checked. Off only to look at what an untrusted server
    /// serves after the refusal has been reported (`passkey-admin doctor`).
    public var verifiesPeer: Bool
    /// Whether the response carries the server's certificates (`HTTPResponse.peerCertificates`).
    public var collectsCertificates: Bool
    /// The most bytes of the response's head and body kept; a response over either fails with
    /// `responseTooLarge`. A head limit of nil leaves libcurl's own. A body limit of nil reads any body and keeps none
    /// of it, and takes a response whose head was cut short by its status; with a limit, the head must be whole.
    public var headLimit: Int?
    public var bodyLimit: Int?
    /// With a body limit: a longer body ends the transfer and the response keeps its start, saying so
    /// (`HTTPResponse.bodyExceededLimit`), instead of failing with `responseTooLarge`.
    public var keepsStartOfLongerBody: Bool

    public init(
        method: String, url: String, headers: [(name: String, value: String)], body: [UInt8] = [], userAgent: String,
        protocols: String = "http,https", host: String = "", port: Int = 0, addresses: [String] = [],
        connectTimeout: Duration, timeout: Duration, caFile: String? = nil, verifiesPeer: Bool = true,
        collectsCertificates: Bool = false, headLimit: Int? = nil, bodyLimit: Int? = nil,
        keepsStartOfLongerBody: Bool = false
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.userAgent = userAgent
        self.protocols = protocols
        self.host = host
        self.port = port
        self.addresses = addresses
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.caFile = caFile
        self.verifiesPeer = verifiesPeer
        self.collectsCertificates = collectsCertificates
        self.headLimit = headLimit
        self.bodyLimit = bodyLimit
        self.keepsStartOfLongerBody = keepsStartOfLongerBody
    }
}

/// The final response to a request (an interim 1xx is skipped).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header fields, names lowercased; a repeated field keeps its last value.
    public var headers: [String: String]
    /// The body, when the request kept it.
    public var body: [UInt8]
    /// Whether the body was longer than the request's limit and `body` holds only its start
    /// (`HTTPRequest.keepsStartOfLongerBody`).
    public var bodyExceededLimit = false
    /// The server's certificates as it sent them, leaf first, each PEM, when the request collects them; empty over
    /// plain HTTP.
    public var peerCertificates: [String] = []

    /// The value of header field `name` (lowercase).
    public func header(_ name: String) -> String? { headers[name] }
}

/// One HTTP POST: where to, pinned to which addresses, with which headers and body, within which times.
public struct HTTPPost: Sendable {
    public var url: String
    /// The URL's host and port, and the numeric addresses to connect to for them: libcurl connects to these only,
    /// never to what it would resolve itself (`CURLOPT_RESOLVE`). Empty when the host is itself an address.
    public var host: String
    public var port: Int
    public var addresses: [String]
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var connectTimeout: Double
    public var timeout: Double
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var caFile: String?

    public init(
        url: String, host: String, port: Int, addresses: [String], headers: [(name: String, value: String)],
        body: [UInt8], connectTimeout: Double, timeout: Double, caFile: String? = nil
    ) {
        self.url = url
        self.host = host
        self.port = port
        self.addresses = addresses
        self.headers = headers
        self.body = body
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.caFile = caFile
    }
}

/// Why a request got no whole response (a refused connection, a timeout, a TLS failure), in libcurl's words.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure, for callers that word their own message.
    public enum Code: Sendable, Equatable {
        case couldNotResolve
        case couldNotConnect
        case timedOut
        /// The TLS handshake failed on the server's certificate: an untrusted chain, an expired certificate, or a
        /// name that does not match the host.
        case certificateRejected
        /// The head or the body passed the request's limit (`HTTPRequest.headLimit`, `bodyLimit`).
        case responseTooLarge
        /// The peer closed the connection before a whole response.
        case incompleteResponse
        /// What came back is not an HTTP response.
        case malformedResponse
        case other
    }

    public let code: Code
    /// libcurl's message and its error number.
    public let description: String
    /// The status line's code, when one arrived before the failure.
    public let status: Int?

    public init(_ code: Code = .other, description: String, status: Int? = nil) {
        self.code = code
        self.description = description
        self.status = status
    }
}

/// libcurl's HTTP client for one request after another: redirects are not followed, proxies from the environment
/// are ignored (they would connect to a name unchecked), only the request's schemes are spoken, and there is no
/// `Expect: 100-continue` round trip. One connection is kept for the next request to the same place unless the
/// request says `Connection: close`. Blocking and not thread-safe: one per thread.
public final class HTTPClient {
    private static let globalInitialization: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    private let handle: UnsafeMutableRawPointer?

    public init() {
        handle = Self.globalInitialization ? curl_easy_init() : nil
    }

    deinit { if let handle { curl_easy_cleanup(handle) } }

    /// Sends `post` (a webhook delivery: a JSON body) and returns the response's status code; the body is read and
    /// dropped.
    public func send(_ post: HTTPPost) throws(HTTPTransportError) -> Int {
        try perform(
            HTTPRequest(
                method: "POST", url: post.url,
                headers: post.headers + [(name: "Content-Type", value: "application/json")], body: post.body,
                userAgent: "passkey-server-webhooks/1", host: post.host, port: post.port, addresses: post.addresses,
                connectTimeout: .milliseconds(Int(post.connectTimeout * 1000)),
                timeout: .milliseconds(Int(post.timeout * 1000)), caFile: post.caFile)
        ).status
    }

    /// Sends `request` and returns its final response.
    public func perform(_ request: HTTPRequest) throws(HTTPTransportError) -> HTTPResponse {
        guard let handle else { throw HTTPTransportError(description: "libcurl could not be initialized") }
        curl_easy_reset(handle)
        let body = MessageBody(request.body)
        let unmanagedBody = Unmanaged.passRetained(body)
        defer { unmanagedBody.release() }
        let collector = ResponseCollector(
            headLimit: request.headLimit, bodyLimit: request.bodyLimit, keepsStart: request.keepsStartOfLongerBody)
        let unmanagedCollector = Unmanaged.passRetained(collector)
        defer { unmanagedCollector.release() }
        let sendsBody = request.method != "GET"
        var headerList: UnsafeMutablePointer<curl_slist>?
        for header in request.headers { headerList = curl_slist_append(headerList, "\(header.name): \(header.value)") }
        if sendsBody, !request.headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headerList = curl_slist_append(headerList, "Content-Type:")
        }
        // No "Expect: 100-continue" round trip.
        headerList = curl_slist_append(headerList, "Expect:")
        defer { curl_slist_free_all(headerList) }
        var resolve: UnsafeMutablePointer<curl_slist>?
        if !request.addresses.isEmpty {
            let addresses = request.addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
            resolve = curl_slist_append(nil, "\(request.host):\(request.port):\(addresses)")
        }
        defer { curl_slist_free_all(resolve) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { buffer in
            var result = CURLE_OK
            func set(_ step: CURLcode) { if result == CURLE_OK { result = step } }
            set(ccurl_setopt_string(handle, CURLOPT_URL, request.url))
            set(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, request.protocols))
            set(ccurl_setopt_string(handle, CURLOPT_PROXY, ""))
            set(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
            set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout)))
            set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout)))
            set(ccurl_setopt_string(handle, CURLOPT_USERAGENT, request.userAgent))
            if let caFile = request.caFile { set(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
            if !request.verifiesPeer {
                set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 0))
                set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 0))
            }
            if request.collectsCertificates { set(ccurl_setopt_long(handle, CURLOPT_CERTINFO, 1)) }
            // No Accept-Encoding is sent; a body compressed anyway is kept as it came, never inflated past its limit.
            set(ccurl_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0))
            if let resolve { set(ccurl_setopt_list(handle, CURLOPT_RESOLVE, resolve)) }
            set(ccurl_setopt_list(handle, CURLOPT_HTTPHEADER, headerList))
            if sendsBody {
                set(ccurl_setopt_long(handle, CURLOPT_POST, 1))
                if request.method != "POST" { set(ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method)) }
                set(ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, request.body.count))
                set(ccurl_setopt_read_function(handle, readMessage))
                set(ccurl_setopt_pointer(handle, CURLOPT_READDATA, unmanagedBody.toOpaque()))
            } else {
                set(ccurl_setopt_long(handle, CURLOPT_HTTPGET, 1))
            }
            if let limit = request.bodyLimit, !request.keepsStartOfLongerBody {
                set(ccurl_setopt_long(handle, CURLOPT_MAXFILESIZE, limit))
            }
            set(ccurl_setopt_header_function(handle, collectHeader))
            set(ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, unmanagedCollector.toOpaque()))
            set(ccurl_setopt_write_function(handle, collectBody))
            set(ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanagedCollector.toOpaque()))
            set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress))
            guard result == CURLE_OK else { return result }
            return curl_easy_perform(handle)
        }
        if let overflow = collector.overflow {
            throw HTTPTransportError(
                .responseTooLarge, description: "the response's \(overflow) is over its limit", status: collector.status
            )
        }
        guard code == CURLE_OK || (code == CURLE_WRITE_ERROR && collector.bodyExceededLimit) else {
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw HTTPTransportError(
                Self.kind(of: code), description: "\(message) (curl \(code.rawValue))", status: collector.status)
        }
        // A request that keeps the body needs the whole head too; one that drops it takes the status alone.
        guard collector.headComplete || request.bodyLimit == nil else {
            throw HTTPTransportError(
                .incompleteResponse, description: "the connection closed within the response's head",
                status: collector.status)
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(
            status: status, headers: collector.headers, body: collector.body,
            bodyExceededLimit: collector.bodyExceededLimit,
            peerCertificates: request.collectsCertificates ? Self.peerCertificates(handle) : [])
    }

    /// The PEM of each certificate the server sent (libcurl's certificate information, `Cert:` entries).
    private static func peerCertificates(_ handle: UnsafeMutableRawPointer) -> [String] {
        var information: UnsafeMutablePointer<curl_certinfo>?
        guard ccurl_getinfo_certinfo(handle, &information) == CURLE_OK, let information,
            information.pointee.num_of_certs > 0, let lists = information.pointee.certinfo
        else { return [] }
        var certificates: [String] = []
        for index in 0..<Int(information.pointee.num_of_certs) {
            var entry = lists[index]
            while let item = entry {
                if let data = item.pointee.data {
                    let text = String(cString: data)
                    if text.hasPrefix("Cert:") { certificates.append(String(text.dropFirst("Cert:".count))) }
                }
                entry = item.pointee.next
            }
        }
        return certificates
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int((duration / .milliseconds(1)).rounded(.down))
    }

    private static func kind(of code: CURLcode) -> HTTPTransportError.Code {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST: .couldNotResolve
        case CURLE_COULDNT_CONNECT: .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_PEER_FAILED_VERIFICATION: .certificateRejected
        case CURLE_FILESIZE_EXCEEDED: .responseTooLarge
        case CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_RECV_ERROR: .incompleteResponse
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_CONTENT_ENCODING: .malformedResponse
        default: .other
        }
    }
}

/// The response as libcurl hands it over: header lines, then body bytes, each within its limit.
final class ResponseCollector {
    let headLimit: Int?
    let bodyLimit: Int?
    /// Whether a body over its limit keeps its start and ends the transfer, rather than failing it.
    let keepsStart: Bool
    var bodyExceededLimit = false
    var headBytes = 0
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    /// Which part passed its limit, if one did.
    var overflow: String?
    /// Whether the last response's head ended (its blank line arrived): libcurl takes a head cut short by the peer
    /// closing as a whole response.
    var headComplete = false
    /// The last status line's code.
    var status: Int?

    init(headLimit: Int?, bodyLimit: Int?, keepsStart: Bool = false) {
        self.headLimit = headLimit
        self.bodyLimit = bodyLimit
        self.keepsStart = keepsStart
    }

    /// Takes one header line; false when the head is over its limit.
    func header(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        headBytes += line.count
        guard headBytes <= headLimit ?? Int.max else {
            overflow = "head"
            return false
        }
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            // A status line: an interim response's fields are not the final one's.
            headers = [:]
            headComplete = false
            let code = text.split(separator: " ", maxSplits: 2).dropFirst().first
            status = code.flatMap { $0.utf8.count == 3 ? Int($0) : nil }
        } else if text == "\r\n" || text == "\n" {
            headComplete = true
        } else if let colon = text.firstIndex(of: ":") {
            let blank: (Character) -> Bool = { " \t\r\n".contains($0) }
            let value = text[text.index(after: colon)...].drop(while: blank)
            headers[text[..<colon].lowercased()] = String(value.reversed().drop(while: blank).reversed())
        }
        return true
    }

    /// Takes body bytes; false when the body is over its limit.
    func bodyBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let bodyLimit else { return true }
        guard body.count + bytes.count <= bodyLimit else {
            if keepsStart {
                body.append(contentsOf: bytes.prefix(bodyLimit - body.count))
                bodyExceededLimit = true
            } else {
                overflow = "body"
            }
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }
}

/// libcurl's header callback: hands each header line to the collector; a short count stops the transfer.
private let collectHeader: ccurl_read_callback = { handOver($0, $1, $2, $3, to: ResponseCollector.header) }

/// libcurl's write callback: hands body bytes to the collector (which keeps them or not); a short count stops the
/// transfer.
private let collectBody: ccurl_read_callback = { handOver($0, $1, $2, $3, to: ResponseCollector.bodyBytes) }

/// Gives a callback's bytes to the collector its context names; the whole count when it takes them, else 0.
private func handOver(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?,
    to take: (ResponseCollector) -> (UnsafeBufferPointer<UInt8>) -> Bool
) -> Int {
    guard let buffer, let context else { return 0 }
    let collector = Unmanaged<ResponseCollector>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: length)
    return take(collector)(bytes) ? length : 0
}
