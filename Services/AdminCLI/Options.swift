import Encoding
import Foundation

/// The command line after the command words: options with values, flags and positional arguments. Anything that
/// starts with `-` and is not a known option is a usage error, as is a value-taking option given twice (unless it
/// is repeatable) or without its value.
struct Options {
    /// The longest argument read: no option value here is near it.
    static let argumentLimit = 2048

    var values: [String: String] = [:]
    var repeated: [String: [String]] = [:]
    var flags: Set<String> = []
    var positional: [String] = []

    init(
        _ arguments: ArraySlice<String>, valued: Set<String>, repeatable: Set<String> = [],
        flags known: Set<String>
    ) {
        var rest = arguments.makeIterator()
        while let argument = rest.next() {
            guard argument.utf8.count <= Self.argumentLimit else {
                finish(.usage, "an argument is longer than \(Self.argumentLimit) bytes")
            }
            if valued.contains(argument) || repeatable.contains(argument) {
                guard let value = rest.next() else { finish(.usage, "\(argument) needs a value\n\(usage)") }
                guard value.utf8.count <= Self.argumentLimit else {
                    finish(.usage, "\(argument): the value is longer than \(Self.argumentLimit) bytes")
                }
                if repeatable.contains(argument) {
                    repeated[argument, default: []].append(value)
                } else {
                    guard values[argument] == nil else { finish(.usage, "\(argument) is given twice") }
                    values[argument] = value
                }
            } else if known.contains(argument) {
                guard !flags.contains(argument) else { finish(.usage, "\(argument) is given twice") }
                flags.insert(argument)
            } else if argument.hasPrefix("-") {
                finish(.usage, "unknown option \(Printable.clip(argument, 40))\n\(usage)")
            } else {
                positional.append(argument)
            }
        }
    }

    /// The positional arguments, which must number `range` (`what` names them in the message).
    func positional(_ range: ClosedRange<Int>, _ what: String) -> [String] {
        guard range.contains(positional.count) else {
            if positional.count > range.upperBound {
                finish(.usage, "unexpected argument \(Printable.clip(positional[range.upperBound], 40))\n\(usage)")
            }
            finish(.usage, "\(what)\n\(usage)")
        }
        return positional
    }

    var json: Bool { flags.contains("--json") }
}

/// Checks of the values the admin API takes, made before any request so that a bad value never reaches it.
enum ArgumentCheck {
    /// An account or session ID: a UUID, sent in lowercase.
    static func uuid(_ text: String, _ what: String) -> String {
        guard text.utf8.count == 36, let uuid = UUID(text: text) else {
            finish(.usage, "\(what) must be a UUID like 0190c1f2-8e4b-7c3a-9f1e-2b3c4d5e6f70")
        }
        return uuid.lowercaseText
    }

    /// A WebAuthn credential ID in base64url without padding (1 to 1,023 bytes), in its one canonical spelling.
    static func credentialID(_ text: String) -> String {
        guard (2...1364).contains(text.utf8.count), let bytes = Base64URL.decodeUnpadded(text),
            (1...1023).contains(bytes.count), Base64URL.encode(bytes) == text
        else { finish(.usage, "a credential ID is 1 to 1,023 bytes in base64url without padding") }
        return text
    }

    /// An email address to search for: 1 to 254 bytes with an `@`, no spaces or control characters.
    static func email(_ text: String) -> String {
        guard (3...254).contains(text.utf8.count), text.contains("@"),
            text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F && !(0x80...0x9F).contains($0.value) })
        else { finish(.usage, "--email must be an address of at most 254 bytes, like ada@example.com") }
        return text
    }

    /// An audit event type: 1 to 64 of `a-z`, `0-9`, `.` and `_`.
    static func eventType(_ text: String) -> String {
        guard (1...64).contains(text.utf8.count),
            text.utf8.allSatisfy({
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F
            })
        else {
            finish(.usage, "--type must be an event type like audit.sign_in.succeeded (1 to 64 of a-z, 0-9, . and _)")
        }
        return text
    }

    /// A whole number in `range`, digits only.
    static func integer(_ text: String, in range: ClosedRange<Int64>, _ what: String) -> Int64 {
        guard (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = Int64(text), range.contains(value)
        else { finish(.usage, "\(what) must be a whole number from \(range.lowerBound) to \(range.upperBound)") }
        return value
    }

    /// The latest time the admin API takes: the end of year 9999, in Unix milliseconds.
    static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// A time as Unix milliseconds: an RFC 3339 time, a date (midnight UTC), a duration before `now` (`90m`, `24h`,
    /// `7d`) or Unix milliseconds.
    static func time(_ text: String, _ what: String, now: Date = Date()) -> Int64 {
        let bytes = Array(text.utf8)
        let milliseconds: Int64?
        if !bytes.isEmpty, bytes.allSatisfy({ (0x30...0x39).contains($0) }) {
            milliseconds = bytes.count <= 15 ? Int64(text) : nil
        } else if bytes.count == 10, let micros = TimestampText.parseRFC3339(text + "T00:00:00Z") {
            milliseconds = micros / 1000
        } else if let micros = TimestampText.parseRFC3339(text) {
            milliseconds = micros / 1000
        } else if text.utf8.count <= 12, let first = bytes.first, (0x30...0x39).contains(first),
            let seconds = DurationText.seconds(text), seconds > 0, seconds <= 100 * 365 * 86_400
        {
            milliseconds = Int64((now.timeIntervalSince1970 - seconds) * 1000)
        } else {
            milliseconds = nil
        }
        guard let milliseconds, (0...latestMilliseconds).contains(milliseconds) else {
            finish(
                .usage,
                "\(what) must be an RFC 3339 time (2025-01-31T12:00:00Z), a date (2025-01-31), a time before now "
                    + "(90m, 24h, 7d) or Unix milliseconds, from 1970 to 9999")
        }
        return milliseconds
    }
}

/// A duration like `90s`, `15m`, `12h` or `7d` (the units of the services' configuration).
enum DurationText {
    static func seconds(_ text: String) -> Double? {
        let units: [(String, Double)] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Double(number)
            else { return nil }
            return value * factor
        }
        return nil
    }
}

/// Text from the admin API or the command line made safe for a terminal and a one-line message.
enum Printable {
    /// `text` with control characters (C0, DEL, C1) and the bidirectional overrides shown as `?`, so that a display
    /// name or a problem's detail cannot move the cursor, recolour the terminal or reorder what is shown.
    static func text(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    let value = scalar.value
                    let hidden =
                        value < 0x20 || value == 0x7F || (0x80...0x9F).contains(value)
                        || (0x202A...0x202E).contains(value)
                        || (0x2066...0x2069).contains(value)
                    return hidden ? "?" : scalar
                }))
    }

    /// `text` made printable and cut to `limit` characters.
    static func clip(_ text: String, _ limit: Int) -> String {
        let shown = Self.text(text)
        return shown.count <= limit ? shown : String(shown.prefix(limit)) + "…"
    }
}
