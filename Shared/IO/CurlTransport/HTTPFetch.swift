import CCurl

/// One HTTP GET as a device would make it, with every bound of the fetch stated: the body's size, the time, and no
/// redirect followed at all (a redirect is answered as it came, its `Location` among the headers).
public struct HTTPFetchRequest: Sendable {
    public var url: String
    /// The most body bytes kept; a longer body ends the transfer and the response says it was cut.
    public var bodyLimit: Int
    public var connectTimeout: Duration
    public var timeout: Duration
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var caFile: String?
    /// The numeric address to connect to for the URL's host and port instead of resolving the host
    /// (`CURLOPT_RESOLVE`); the TLS name checked is still the host's.
    public var address: String?
    /// Whether the server's certificate chain and name are checked. Off only to look at what an untrusted server
    /// serves after the check has been reported.
    public var verifiesPeer: Bool

    public init(
        url: String, bodyLimit: Int, connectTimeout: Duration = .seconds(5), timeout: Duration = .seconds(10),
        caFile: String? = nil, address: String? = nil, verifiesPeer: Bool = true
    ) {
        self.url = url
        self.address = address
        self.bodyLimit = bodyLimit
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.caFile = caFile
        self.verifiesPeer = verifiesPeer
    }
}

/// What a GET brought back.
public struct HTTPFetchResponse: Sendable {
    public var status: Int
    /// The response's header fields in order, names lowercased and values trimmed.
    public var headers: [(name: String, value: String)]
    /// The body, at most the request's `bodyLimit` bytes.
    public var body: [UInt8]
    /// Whether the body was longer than `bodyLimit` (and `body` holds only its start).
    public var bodyExceededLimit: Bool
    /// The server's certificates as it sent them, leaf first, each PEM; empty over plain HTTP.
    public var peerCertificates: [String]

    /// The last value of header `name` (lowercase).
    public func header(_ name: String) -> String? { headers.last { $0.name == name }?.value }
}

/// Why a GET got no response, in libcurl's words, and whether it was the server's certificate that was refused.
public struct HTTPFetchError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The TLS handshake failed on the server's certificate: an untrusted chain, an expired certificate, or a name
    /// that does not match the host.
    public let certificateRejected: Bool

    public init(description: String, certificateRejected: Bool) {
        self.description = description
        self.certificateRejected = certificateRejected
    }
}

/// libcurl's HTTP client for GETs: redirects are never followed, proxies from the environment are ignored, only
/// http and https are spoken, and the body is kept up to the request's limit. Blocking and not thread-safe: one per
/// thread.
public final class HTTPFetcher {
    /// The most header bytes kept from one response.
    public static let headerLimit = 64 * 1024

    private static let globalInitialization: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    private let handle: UnsafeMutableRawPointer?

    public init() {
        handle = Self.globalInitialization ? curl_easy_init() : nil
    }

    deinit { if let handle { curl_easy_cleanup(handle) } }

    /// Fetches `request.url` once.
    public func fetch(_ request: HTTPFetchRequest) throws(HTTPFetchError) -> HTTPFetchResponse {
        guard let handle else {
            throw HTTPFetchError(description: "libcurl could not be initialized", certificateRejected: false)
        }
        curl_easy_reset(handle)
        let received = ReceivedResponse(bodyLimit: request.bodyLimit)
        let unmanaged = Unmanaged.passRetained(received)
        defer { unmanaged.release() }
        var resolve: UnsafeMutablePointer<curl_slist>?
        if let address = request.address, let authority = Self.hostAndPort(request.url) {
            resolve = curl_slist_append(nil, "\(authority):\(address.contains(":") ? "[\(address)]" : address)")
        }
        defer { curl_slist_free_all(resolve) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { buffer in
            var result = CURLE_OK
            func set(_ step: CURLcode) { if result == CURLE_OK { result = step } }
            set(ccurl_setopt_string(handle, CURLOPT_URL, request.url))
            if let resolve { set(ccurl_setopt_list(handle, CURLOPT_RESOLVE, resolve)) }
            set(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
            set(ccurl_setopt_string(handle, CURLOPT_PROXY, ""))
            set(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
            set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(request.connectTimeout)))
            set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Self.milliseconds(request.timeout)))
            set(ccurl_setopt_string(handle, CURLOPT_USERAGENT, "passkey-admin-doctor/1"))
            // What the platforms' fetchers take: no compressed body to inflate past the limit.
            set(ccurl_setopt_long(handle, CURLOPT_HTTP_CONTENT_DECODING, 0))
            set(ccurl_setopt_long(handle, CURLOPT_CERTINFO, 1))
            set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, request.verifiesPeer ? 1 : 0))
            set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, request.verifiesPeer ? 2 : 0))
            if let caFile = request.caFile { set(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
            set(ccurl_setopt_header_function(handle, keepHeader))
            set(ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, unmanaged.toOpaque()))
            set(ccurl_setopt_write_function(handle, keepBody))
            set(ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged.toOpaque()))
            set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress))
            guard result == CURLE_OK else { return result }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK || (code == CURLE_WRITE_ERROR && received.bodyExceededLimit) else {
            let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            throw HTTPFetchError(
                description: "\(message) (curl \(code.rawValue))",
                certificateRejected: code == CURLE_PEER_FAILED_VERIFICATION)
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPFetchResponse(
            status: status, headers: received.headers, body: received.body,
            bodyExceededLimit: received.bodyExceededLimit, peerCertificates: peerCertificates(handle))
    }

    /// The PEM of each certificate the server sent (libcurl's certificate information, `Cert:` entries).
    private func peerCertificates(_ handle: UnsafeMutableRawPointer) -> [String] {
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

    /// `host:port` of an `http://` or `https://` URL without a user or brackets, the port defaulted by scheme; nil
    /// for anything else.
    static func hostAndPort(_ url: String) -> String? {
        let https = url.hasPrefix("https://")
        guard https || url.hasPrefix("http://") else { return nil }
        let authority = url.dropFirst(https ? 8 : 7).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("[") else { return nil }
        return authority.contains(":") ? String(authority) : "\(authority):\(https ? 443 : 80)"
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }
}

/// The response as libcurl hands it over, header line by header line and body piece by piece.
private final class ReceivedResponse {
    let bodyLimit: Int
    var headers: [(name: String, value: String)] = []
    var headerBytes = 0
    var body: [UInt8] = []
    var bodyExceededLimit = false

    init(bodyLimit: Int) { self.bodyLimit = bodyLimit }
}

/// libcurl's header callback: one line per call. A status line starts a new response (an interim one's fields are
/// dropped); past ``HTTPFetcher/headerLimit`` the transfer ends.
private let keepHeader: ccurl_read_callback = { buffer, size, count, context in
    let length = size * count
    guard let buffer, let context else { return 0 }
    let received = Unmanaged<ReceivedResponse>.fromOpaque(context).takeUnretainedValue()
    received.headerBytes += length
    guard received.headerBytes <= HTTPFetcher.headerLimit else { return 0 }
    let line = buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        received.headers = []
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t\r\n")
        received.headers.append((name, value))
    }
    return length
}

/// libcurl's write callback: keeps the body up to the limit, then ends the transfer.
private let keepBody: ccurl_read_callback = { buffer, size, count, context in
    let length = size * count
    guard let buffer, let context else { return 0 }
    let received = Unmanaged<ReceivedResponse>.fromOpaque(context).takeUnretainedValue()
    let room = received.bodyLimit - received.body.count
    buffer.withMemoryRebound(to: UInt8.self, capacity: length) {
        received.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(length, max(room, 0))))
    }
    guard length <= room else {
        received.bodyExceededLimit = true
        return 0
    }
    return length
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = self
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
