extension TimestampText {
    /// Parses an RFC 3339 date-time, `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (`T` and `Z` in either case), into
    /// Unix microseconds; digits of the fraction beyond the sixth are dropped. Nil for any other shape and for an
    /// impossible date or time (February 30, hour 24, a leap second, an offset beyond ±23:59).
    public static func parseRFC3339(_ text: some StringProtocol) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        func number(_ range: Range<Int>) -> Int64? { DecimalText.parse(bytes[range]) }
        func byte(_ index: Int, _ allowed: String) -> Bool { allowed.utf8.contains(bytes[index]) }
        guard byte(4, "-"), byte(7, "-"), byte(10, "Tt"), byte(13, ":"), byte(16, ":"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
            guard digits > 0, digits <= 9 else { return nil }
            for _ in min(digits, 6)..<6 { micros *= 10 }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds: Int64 = 0
        if byte(index, "Zz") {
            guard index + 1 == bytes.count else { return nil }
        } else {
            guard byte(index, "+-"), index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                let offsetHours = number((index + 1)..<(index + 3)),
                let offsetMinutes = number((index + 4)..<(index + 6)),
                offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1_000_000 + micros
    }

    /// The number of days in `month` (1 to 12) of `year`, leap years included.
    public static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
