import Domain
import Encoding
import Foundation

/// A message ready for the relay: the envelope and the RFC 5322 text.
public struct ComposedMail: Sendable, Equatable {
    public let sender: String
    public let recipient: String
    /// Header fields and body with CRLF line ends.
    public let data: [UInt8]
}

/// The plain-text templates (`Templates/<name>.txt`: a `Subject:` line, a blank line, the body) and the messages
/// made from them. A template's `{{code}}`, `{{minutes}}`, `{{expires_at}}` and `{{service}}` are filled in, and a
/// security notification's `{{when}}`, `{{address}}` and `{{device}}`.
public struct MailComposer: Sendable {
    struct Template: Sendable {
        let subject: String
        let body: String
    }

    let templates: [MailTemplate: Template]
    let sender: String
    let serviceName: String

    /// Why the templates could not be loaded.
    public struct TemplateError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Loads every template from the module's resources. Throws when one is missing or malformed.
    public init(sender: String, serviceName: String) throws {
        var templates: [MailTemplate: Template] = [:]
        for template in MailTemplate.allCases {
            guard
                let url = Bundle.module.url(
                    forResource: template.rawValue, withExtension: "txt", subdirectory: "Templates"),
                let text = try? String(contentsOf: url, encoding: .utf8)
            else { throw TemplateError(description: "the mail template \(template.rawValue).txt is missing") }
            templates[template] = try Self.parse(text, name: template.rawValue)
        }
        self.init(templates: templates, sender: sender, serviceName: serviceName)
    }

    init(templates: [MailTemplate: Template], sender: String, serviceName: String) {
        self.templates = templates
        self.sender = sender
        self.serviceName = serviceName
    }

    static func parse(_ text: String, name: String) throws -> Template {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
        guard normalized.hasPrefix("Subject: "), let end = normalized.range(of: "\n\n") else {
            throw TemplateError(
                description: "the mail template \(name).txt must start with a Subject: line and a blank line")
        }
        let subject = String(normalized[normalized.index(normalized.startIndex, offsetBy: 9)..<end.lowerBound])
        return Template(subject: subject, body: String(normalized[end.upperBound...]))
    }

    /// The message for `message`, carrying `code` (the message's own, opened by the outbox worker), dated `now`. Its
    /// Message-ID is the outbox row's, so a copy sent again after a crash can be recognized as the same message.
    public func compose(_ message: OutboxMessage, code: String?, now: Date) -> ComposedMail {
        let template = templates[message.template] ?? Template(subject: "{{service}}", body: "{{code}}\n")
        let minutes = max(1, Int((message.expiresAt.timeIntervalSince(message.createdAt) / 60).rounded()))
        let notice = message.notice ?? SecurityNotice()
        let values = [
            "code": code ?? "", "minutes": String(minutes),
            "expires_at": Self.timestamp(message.expiresAt), "service": serviceName,
            "when": Self.noticeText(notice.occurredAt ?? Self.timestamp(message.createdAt)),
            "address": Self.noticeText(notice.clientAddress ?? "an unknown address"),
            "device": Self.noticeText(notice.device ?? "a passkey"),
        ]
        func fill(_ text: String) -> String {
            values.reduce(text) { $0.replacingOccurrences(of: "{{\($1.key)}}", with: $1.value) }
        }
        let domain = sender.split(separator: "@").last.map(String.init) ?? "localhost"
        let headers = [
            "From: \(Self.headerText(serviceName)) <\(sender)>",
            "To: <\(message.recipient)>",
            "Subject: \(Self.headerText(fill(template.subject)))",
            "Date: \(Self.rfc5322Date(now))",
            "Message-ID: <\(message.id.lowercaseText)@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
            "Auto-Submitted: auto-generated",
        ]
        let body = fill(template.body).split(separator: "\n", omittingEmptySubsequences: false).joined(
            separator: "\r\n")
        let text = headers.joined(separator: "\r\n") + "\r\n\r\n" + body
        return ComposedMail(sender: sender, recipient: message.recipient, data: Array(text.utf8))
    }

    /// A value a notification shows: one line of at most 128 printable characters, so that what a client sent (its
    /// passkey's name) cannot add lines to the message.
    static func noticeText(_ text: String) -> String {
        String(
            String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(128)))
    }

    /// Header text with no line breaks: ASCII as it is, anything else as an RFC 2047 encoded word.
    static func headerText(_ text: String) -> String {
        let flat = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        guard flat.unicodeScalars.allSatisfy(\.isASCII) else {
            let encoded = Data(flat.utf8).base64EncodedString()
            return "=?UTF-8?B?\(encoded)?="
        }
        return flat
    }

    static func timestamp(_ date: Date) -> String {
        TimestampText.string(
            unixMicroseconds: Int64(date.timeIntervalSince1970.rounded(.down)) * 1_000_000, fractionDigits: 0)
    }

    /// `Wed, 02 Dec 2026 07:13:42 +0000`.
    static func rfc5322Date(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let (year, month, day, secondOfDay) = TimestampText.civil(fromUnixSeconds: seconds)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        return "\(weekday), \(two(day)) \(months[Int(month - 1)]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) +0000"
    }
}
