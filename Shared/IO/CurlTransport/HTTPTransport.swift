import CCurl

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

/// Why a POST got no response (a refused connection, a timeout, a TLS failure), in libcurl's words.
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    public init(description: String) { self.description = description }

    public let description: String
}

/// libcurl's HTTP client for POSTs to one destination after another: redirects are not followed, proxies from the
/// environment are ignored (they would connect to a name unchecked), only http and https are spoken, and the
/// response's body is read and dropped. One connection is kept for the next POST to the same place. Blocking and
/// not thread-safe: one per thread.
public final class HTTPClient {
    private static let globalInitialization: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    private let handle: UnsafeMutableRawPointer?

    public init() {
        handle = Self.globalInitialization ? curl_easy_init() : nil
    }

    deinit { if let handle { curl_easy_cleanup(handle) } }

    /// Sends `post` and returns the response's status code.
    public func send(_ post: HTTPPost) throws(HTTPTransportError) -> Int {
        guard let handle else { throw HTTPTransportError(description: "libcurl could not be initialized") }
        curl_easy_reset(handle)
        let body = MessageBody(post.body)
        let unmanaged = Unmanaged.passRetained(body)
        defer { unmanaged.release() }
        var headerList: UnsafeMutablePointer<curl_slist>?
        for header in post.headers { headerList = curl_slist_append(headerList, "\(header.name): \(header.value)") }
        headerList = curl_slist_append(headerList, "Content-Type: application/json")
        // No "Expect: 100-continue" round trip.
        headerList = curl_slist_append(headerList, "Expect:")
        defer { curl_slist_free_all(headerList) }
        var resolve: UnsafeMutablePointer<curl_slist>?
        if !post.addresses.isEmpty {
            let addresses = post.addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
            resolve = curl_slist_append(nil, "\(post.host):\(post.port):\(addresses)")
        }
        defer { curl_slist_free_all(resolve) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { buffer in
            var result = CURLE_OK
            func set(_ step: CURLcode) { if result == CURLE_OK { result = step } }
            set(ccurl_setopt_string(handle, CURLOPT_URL, post.url))
            set(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
            set(ccurl_setopt_string(handle, CURLOPT_PROXY, ""))
            set(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
            set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(post.connectTimeout * 1000)))
            set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(post.timeout * 1000)))
            set(ccurl_setopt_string(handle, CURLOPT_USERAGENT, "passkey-server-webhooks/1"))
            if let caFile = post.caFile { set(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
            if let resolve { set(ccurl_setopt_list(handle, CURLOPT_RESOLVE, resolve)) }
            set(ccurl_setopt_list(handle, CURLOPT_HTTPHEADER, headerList))
            set(ccurl_setopt_long(handle, CURLOPT_POST, 1))
            set(ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, post.body.count))
            set(ccurl_setopt_read_function(handle, readMessage))
            set(ccurl_setopt_pointer(handle, CURLOPT_READDATA, unmanaged.toOpaque()))
            set(ccurl_setopt_write_function(handle, dropResponse))
            set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress))
            guard result == CURLE_OK else { return result }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw HTTPTransportError(description: "\(message) (curl \(code.rawValue))")
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }
}

/// libcurl's write callback for a response body nobody reads: takes it all and keeps nothing.
private let dropResponse: ccurl_read_callback = { _, size, count, _ in size * count }
