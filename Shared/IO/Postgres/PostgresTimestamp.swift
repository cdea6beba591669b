import Encoding
import Foundation

/// Formats and parses `timestamptz` text, assuming the session runs with `TimeZone = 'UTC'` and ISO DateStyle.
enum PostgresTimestamp {
    /// `2026-11-29T18:08:11.123456Z`, rounded to whole microseconds.
    static func format(_ date: Date) -> String {
        TimestampText.string(
            unixMicroseconds: Int64((date.timeIntervalSince1970 * 1_000_000).rounded()), fractionDigits: 6)
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00[:MM]`; nil when the text has another shape.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            range.upperBound <= bytes.count ? DecimalText.parse(bytes[range]) : nil
        }
        guard bytes.count >= 22, bytes[4] == 45, bytes[7] == 45, bytes[10] == 32 || bytes[10] == 84,
            bytes[13] == 58, bytes[16] == 58,
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == 46 {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            if digits < 6 { for _ in digits..<6 { micros *= 10 } }
        }
        guard index < bytes.count, bytes[index] == 43 || bytes[index] == 45 else { return nil }
        let sign: Int64 = bytes[index] == 43 ? 1 : -1
        guard let offsetHours = number((index + 1)..<(index + 3)) else { return nil }
        var offsetSeconds = offsetHours * 3600
        index += 3
        if index < bytes.count {
            guard bytes[index] == 58, let offsetMinutes = number((index + 1)..<(index + 3)),
                index + 3 == bytes.count
            else { return nil }
            offsetSeconds += offsetMinutes * 60
        }
        let days = TimestampText.daysFromCivil(year: year, month: month, day: day)
        let unixSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - sign * offsetSeconds
        return Date(timeIntervalSince1970: Double(unixSeconds) + Double(micros) / 1_000_000)
    }
}
