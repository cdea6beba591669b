import Encoding
import Foundation

/// Formats and parses `timestamptz` text, assuming the session runs with `TimeZone = 'UTC'` and ISO DateStyle.
enum PostgresTimestamp {
    /// `2026-11-29T18:08:11.123456Z`, rounded to whole microseconds.
    static func format(_ date: Date) -> String {
        let totalMicros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        var seconds = totalMicros / 1_000_000
        var micros = totalMicros % 1_000_000
        if micros < 0 {
            micros += 1_000_000
            seconds -= 1
        }
        let (year, month, day, secondOfDay) = civil(fromUnixSeconds: seconds)
        let hour = secondOfDay / 3600
        let minute = secondOfDay / 60 % 60
        let second = secondOfDay % 60
        var text: [UInt8] = []
        text.reserveCapacity(27)
        for (value, width, separator) in [
            (year, 4, "-"), (month, 2, "-"), (day, 2, "T"), (hour, 2, ":"), (minute, 2, ":"), (second, 2, "."),
            (micros, 6, "Z"),
        ] as [(Int64, Int, Unicode.Scalar)] {
            DecimalText.append(value, width: width, to: &text)
            text.append(UInt8(ascii: separator))
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00[:MM]`; nil when the text has another shape.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count, !range.isEmpty else { return nil }
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index]
                guard digit >= 48, digit <= 57 else { return nil }
                value = value * 10 + Int64(digit - 48)
            }
            return value
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
        let days = daysFromCivil(year: year, month: month, day: day)
        let unixSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - sign * offsetSeconds
        return Date(timeIntervalSince1970: Double(unixSeconds) + Double(micros) / 1_000_000)
    }

    // Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromUnixSeconds seconds: Int64) -> (Int64, Int64, Int64, Int64) {
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, secondOfDay)
    }
}
