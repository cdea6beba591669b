/// RFC 3339 UTC timestamps (`2026-11-29T18:08:11.123Z`) and the proleptic Gregorian calendar arithmetic behind
/// them (Howard Hinnant's civil-from-days algorithms), without `gmtime_r` or a formatter.
public enum TimestampText {
    /// Appends `unixMicroseconds` as `YYYY-MM-DDTHH:MM:SS[.fraction]Z` with `fractionDigits` (0 to 6) digits of the
    /// second, truncated. Times before 1970 count down from the second below, as the calendar does.
    public static func append(unixMicroseconds: Int64, fractionDigits: Int, to text: inout [UInt8]) {
        var seconds = unixMicroseconds / 1_000_000
        var micros = unixMicroseconds % 1_000_000
        if micros < 0 {
            micros += 1_000_000
            seconds -= 1
        }
        let (year, month, day, secondOfDay) = civil(fromUnixSeconds: seconds)
        DecimalText.append(year, width: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        DecimalText.append(month, width: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        DecimalText.append(day, width: 2, to: &text)
        text.append(UInt8(ascii: "T"))
        DecimalText.append(secondOfDay / 3600, width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        DecimalText.append(secondOfDay / 60 % 60, width: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        DecimalText.append(secondOfDay % 60, width: 2, to: &text)
        if fractionDigits > 0 {
            var divisor: Int64 = 1
            for _ in fractionDigits..<6 { divisor *= 10 }
            text.append(UInt8(ascii: "."))
            DecimalText.append(micros / divisor, width: fractionDigits, to: &text)
        }
        text.append(UInt8(ascii: "Z"))
    }

    /// `unixMicroseconds` as a string (see ``append(unixMicroseconds:fractionDigits:to:)``).
    public static func string(unixMicroseconds: Int64, fractionDigits: Int) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(27)
        append(unixMicroseconds: unixMicroseconds, fractionDigits: fractionDigits, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date.
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Year, month, day and second of the day of a Unix time.
    public static func civil(fromUnixSeconds seconds: Int64) -> (
        year: Int64, month: Int64, day: Int64, secondOfDay: Int64
    ) {
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
