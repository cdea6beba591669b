import Foundation
import IPAddresses

/// Why a webhook URL or its destination is refused.
public struct WebhookURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// A webhook endpoint's URL, checked when it is registered: `https://` (or `http://` when allowed), a host, an
/// optional port and path, no credentials, no fragment, printable ASCII only, at most 2,048 bytes.
public struct WebhookURL: Sendable, Equatable {
    public static let byteLimit = 2048

    public enum Scheme: String, Sendable { case http, https }

    public let text: String
    public let scheme: Scheme
    /// Lowercased; an IPv6 literal without its brackets.
    public let host: String
    public let port: Int

    public init(parsing text: String, allowHTTP: Bool) throws(WebhookURLError) {
        guard !text.isEmpty, text.utf8.count <= Self.byteLimit else {
            throw WebhookURLError("the URL must be 1 to \(Self.byteLimit) bytes")
        }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw WebhookURLError("the URL may hold printable ASCII only (percent-encode the rest)")
        }
        let lower = text.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            scheme = .https
            rest = text.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            guard allowHTTP else {
                throw WebhookURLError("the URL must be https:// (PASSKEY_WEBHOOK_ALLOW_HTTP allows http://)")
            }
            scheme = .http
            rest = text.dropFirst(7)
        } else {
            throw WebhookURLError("the URL must be https://")
        }
        guard !text.contains("#") else { throw WebhookURLError("the URL may not have a fragment") }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        guard !authority.contains("@") else { throw WebhookURLError("the URL may not hold credentials") }
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw WebhookURLError("the URL's host is malformed")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw WebhookURLError("the URL's host is malformed") }
                portPart = after.dropFirst()
            }
            guard IPAddress(parsing: String(hostPart))?.isV6 == true else {
                throw WebhookURLError("the URL's host is malformed")
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                hostPart = authority[..<colon]
                portPart = authority[authority.index(after: colon)...]
            } else {
                hostPart = authority
            }
            let allowed = hostPart.utf8.allSatisfy {
                (0x61...0x7A).contains($0 | 0x20) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E
            }
            guard !hostPart.isEmpty, hostPart.utf8.count <= 253, allowed, !hostPart.hasPrefix("."),
                !hostPart.hasPrefix("-")
            else { throw WebhookURLError("the URL's host is malformed") }
        }
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5, portPart.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let port = Int(portPart), (1...65535).contains(port)
            else { throw WebhookURLError("the URL's port must be 1 to 65535") }
            self.port = port
        } else {
            port = scheme == .https ? 443 : 80
        }
        self.text = text
        host = hostPart.lowercased()
    }
}

/// An endpoint's URL with the addresses its host resolved to, every one of them allowed by the policy.
public struct WebhookDestination: Sendable, Equatable {
    public let url: WebhookURL
    public let addresses: [IPAddress]

    public init(url: WebhookURL, addresses: [IPAddress]) {
        self.url = url
        self.addresses = addresses
    }
}

/// Why an attempt got no HTTP response (refused, timed out, a TLS failure).
public struct WebhookSendError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// Checks destinations and sends signed deliveries (session-service's libcurl sender; a fake in unit tests).
public protocol WebhookTransport: Sendable {
    /// The URL parsed, its host resolved and every address allowed; otherwise why not.
    func destination(for url: String) async -> Result<WebhookDestination, WebhookURLError>
    /// POSTs `delivery` signed with `secret` at `now`; the response's status, or why there was none.
    func send(_ delivery: WebhookDelivery, secret: WebhookSecret, to destination: WebhookDestination, at now: Date)
        async -> Result<Int, WebhookSendError>
}
