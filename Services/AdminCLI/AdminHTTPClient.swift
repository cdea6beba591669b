import CurlTransport

/// Where the admin API listens, from `PASSKEY_ADMIN_URL`: `http://HOST[:PORT][/]`. The admin listener speaks plain
/// HTTP only, so `https://` is refused with a message saying so, as are a user, a path, a query and a fragment.
struct AdminAPIAddress: Equatable {
    static let defaultURL = "http://127.0.0.1:8081"

    /// A name or an address, IPv6 without its brackets.
    let host: String
    let port: Int

    struct Invalid: Error {
        let reason: String
    }

    init(url: String) throws(Invalid) {
        guard (8...2048).contains(url.utf8.count) else { throw Invalid(reason: "must be like http://127.0.0.1:8081") }
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") {
            throw Invalid(
                reason: "https is not supported: the admin listener speaks plain HTTP; reach it on loopback, a "
                    + "private network or through an SSH tunnel")
        }
        guard lowered.hasPrefix("http://") else { throw Invalid(reason: "must start with http://") }
        var rest = Substring(url.dropFirst("http://".count))
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains(where: { "/?#@ \\".contains($0) }) else {
            throw Invalid(reason: "must be http://HOST[:PORT] with no user, path or query")
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw Invalid(reason: "an IPv6 address needs its ]") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Invalid(reason: "must be http://[ADDRESS]:PORT") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty,
                host.utf8.allSatisfy({ Self.isHex($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") })
            else { throw Invalid(reason: "the IPv6 address is malformed") }
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw Invalid(reason: "an IPv6 address goes in brackets") }
            host = String(parts[0])
            portText = parts.count == 2 ? parts[1] : nil
            guard (1...253).contains(host.utf8.count),
                host.utf8.allSatisfy({ Self.isHex($0) || (0x61...0x7A).contains($0 | 0x20) || $0 == 0x2D || $0 == 0x2E }
                )
            else { throw Invalid(reason: "the host must be a name or an address") }
        }
        if let portText {
            guard (1...5).contains(portText.utf8.count), portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let port = Int(portText), (1...65_535).contains(port)
            else { throw Invalid(reason: "the port must be 1 to 65535") }
            self.port = port
        } else {
            port = 80
        }
    }

    /// The `Host` header's value.
    var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    private static func isHex(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte | 0x20)
    }
}

/// Why no response arrived: the message names the address, never the request's headers.
struct AdminHTTPFailure: Error, CustomStringConvertible {
    let description: String
}

/// The command line's blocking HTTP/1.1 client, on libcurl (`CurlTransport`): one request per connection
/// (`Connection: close`), plain HTTP only, every step bounded by one deadline, the response head by 64 KiB and the
/// body by 8 MiB. The bearer token goes only into the request's `Authorization` header, never into a failure's text.
enum AdminHTTPClient {
    static let headLimit = 64 * 1024
    static let bodyLimit = 8 * 1024 * 1024

    static func send(
        method: String, target: String, bearer: String, body: [UInt8] = [], to address: AdminAPIAddress,
        timeoutSeconds: Int = 30
    ) throws(AdminHTTPFailure) -> HTTPResponse {
        var headers = [(name: "Accept", value: "application/json"), (name: "Authorization", value: "Bearer \(bearer)")]
        if !body.isEmpty { headers.append((name: "Content-Type", value: "application/json")) }
        headers.append((name: "Connection", value: "close"))
        let request = HTTPRequest(
            method: method, url: "http://\(address.authority)\(target)", headers: headers, body: body,
            userAgent: "passkey-admin", protocols: "http", connectTimeout: .seconds(timeoutSeconds),
            timeout: .seconds(timeoutSeconds), headLimit: headLimit, bodyLimit: bodyLimit)
        do {
            return try HTTPClient().perform(request)
        } catch {
            throw AdminHTTPFailure(description: failure(error, address: address, timeoutSeconds: timeoutSeconds))
        }
    }

    /// What the operator reads when no response arrived.
    static func failure(_ error: HTTPTransportError, address: AdminAPIAddress, timeoutSeconds: Int) -> String {
        switch error.code {
        case .couldNotResolve: "cannot resolve \(address.host): \(error.description)"
        case .couldNotConnect: "cannot connect to \(address.authority): \(error.description)"
        case .timedOut: "no response from \(address.authority) within \(timeoutSeconds) s"
        case .responseTooLarge:
            "the response from \(address.authority) is larger than 64 KiB of head or 8 MiB of body"
        case .incompleteResponse: "\(address.authority) closed the connection before a whole response"
        case .malformedResponse: "the admin API's answer is not an HTTP response"
        case .certificateRejected, .other: "\(address.authority): \(error.description)"
        }
    }
}
