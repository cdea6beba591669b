import CCurl
import Foundation

/// How to reach the mail relay: `SMTP_URL` and the settings beside it.
public struct SMTPSettings: Sendable, Equatable {
    /// `smtp://host[:port]` (STARTTLS as `startTLS` says) or `smtps://host[:port]` (TLS from the first byte).
    public var url: String
    public var username: String?
    public var password: String?
    /// Whether a `smtp://` relay must upgrade with STARTTLS before anything is sent (AUTH included).
    public var requireStartTLS: Bool
    /// A PEM file of the certificate authorities to trust instead of the system's.
    public var caFile: String?
    /// The budget to connect, and of a whole delivery.
    public var connectTimeout: TimeInterval = 10
    public var timeout: TimeInterval = 30

    public init(url: String, username: String?, password: String?, requireStartTLS: Bool, caFile: String?) {
        self.url = url
        self.username = username
        self.password = password
        self.requireStartTLS = requireStartTLS
        self.caFile = caFile
    }
}

/// Why a delivery failed, and whether trying again may help.
public struct SMTPError: Error, Sendable, CustomStringConvertible {
    /// False when the relay refused the message for good (a 5xx reply other than an authentication failure).
    public let isTransient: Bool
    /// libcurl's message and the relay's last reply code; never the password.
    public let description: String
}

/// Sends one message at a time through libcurl's SMTP client. Blocking: call it from a thread of your own.
public struct SMTPTransport: Sendable {
    let settings: SMTPSettings

    private static let globalInitialization: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(settings: SMTPSettings) { self.settings = settings }

    /// Delivers `data` (an RFC 5322 message with CRLF line ends) from `sender` to `recipient`. Returns once the
    /// relay accepted it (its reply to the end of DATA); throws ``SMTPError`` otherwise.
    public func send(from sender: String, to recipient: String, data: [UInt8]) throws(SMTPError) {
        guard Self.globalInitialization, let handle = curl_easy_init() else {
            throw SMTPError(isTransient: true, description: "libcurl could not be initialized")
        }
        defer { curl_easy_cleanup(handle) }
        let body = MessageBody(data)
        let unmanaged = Unmanaged.passRetained(body)
        defer { unmanaged.release() }
        let recipients = curl_slist_append(nil, "<\(recipient)>")
        defer { curl_slist_free_all(recipients) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { buffer in
            var result = CURLE_OK
            func set(_ step: CURLcode) { if result == CURLE_OK { result = step } }
            set(ccurl_setopt_string(handle, CURLOPT_URL, settings.url))
            set(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "smtp,smtps"))
            set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
            set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(settings.connectTimeout * 1000)))
            set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(settings.timeout * 1000)))
            set(
                ccurl_setopt_long(
                    handle, CURLOPT_USE_SSL,
                    Int(settings.requireStartTLS ? CURLUSESSL_ALL.rawValue : CURLUSESSL_NONE.rawValue)))
            if let caFile = settings.caFile { set(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
            if let username = settings.username { set(ccurl_setopt_string(handle, CURLOPT_USERNAME, username)) }
            if let password = settings.password { set(ccurl_setopt_string(handle, CURLOPT_PASSWORD, password)) }
            set(ccurl_setopt_string(handle, CURLOPT_MAIL_FROM, "<\(sender)>"))
            set(ccurl_setopt_list(handle, CURLOPT_MAIL_RCPT, recipients))
            set(ccurl_setopt_long(handle, CURLOPT_UPLOAD, 1))
            set(ccurl_setopt_read_function(handle, readMessage))
            set(ccurl_setopt_pointer(handle, CURLOPT_READDATA, unmanaged.toOpaque()))
            set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress))
            guard result == CURLE_OK else { return result }
            return curl_easy_perform(handle)
        }
        guard code != CURLE_OK else { return }
        var reply = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &reply)
        let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        // 5xx is permanent (RFC 5321 §4.2.1), except an authentication failure: a fixed configuration helps.
        let permanent = (500..<600).contains(reply) && reply != 530 && reply != 535
        throw SMTPError(isTransient: !permanent, description: "\(message) (curl \(code.rawValue), reply \(reply))")
    }
}

/// The message libcurl reads while it sends DATA.
final class MessageBody {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// libcurl's read callback: copies the next part of the message into its buffer; 0 at the end.
let readMessage: ccurl_read_callback = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let body = Unmanaged<MessageBody>.fromOpaque(context).takeUnretainedValue()
    let length = min(size * count, body.bytes.count - body.offset)
    guard length > 0 else { return 0 }
    body.bytes.withUnsafeBufferPointer { source in
        UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + body.offset, byteCount: length)
    }
    body.offset += length
    return length
}
