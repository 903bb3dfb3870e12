import Foundation

/// Event times: milliseconds since 1970 in UTC, written as ISO 8601 with milliseconds.
///
/// Formatting is done by hand because it runs once per event on import and
/// `ISO8601DateFormatter` costs more than the rest of encoding an event.
public enum Timestamp {
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    /// `2026-11-29T16:14:10.123Z`
    public static func iso8601(milliseconds: Int64) -> String {
        var writer = JSONWriter(capacity: 24)
        writeISO8601(milliseconds: milliseconds, to: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Writes `2026-11-29T16:14:10.123Z` (without quotes).
    static func writeISO8601(milliseconds: Int64, to writer: inout JSONWriter) {
        // Arithmetic, not gmtime_r: that takes glibc's time-zone lock, for every event.
        let seconds = milliseconds.floorDiv(1000)
        let millis = Int(milliseconds - seconds * 1000)
        let days = Int(seconds.floorDiv(86_400))
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = CalendarDate.civil(daysSinceEpoch: days)
        // Filled in place, then appended at once: it is written for every event.
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { bytes in
            func put(_ value: Int, width: Int, at offset: Int) {
                var value = value
                for position in stride(from: offset + width - 1, through: offset, by: -1) {
                    bytes[position] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, width: 4, at: 0); bytes[4] = UInt8(ascii: "-")
            put(month, width: 2, at: 5); bytes[7] = UInt8(ascii: "-")
            put(day, width: 2, at: 8); bytes[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, width: 2, at: 11); bytes[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, width: 2, at: 14); bytes[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, width: 2, at: 17); bytes[19] = UInt8(ascii: ".")
            put(millis, width: 3, at: 20); bytes[23] = UInt8(ascii: "Z")
            writer.append(raw: UnsafeRawBufferPointer(rebasing: bytes[..<24]))
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)` or a bare date `YYYY-MM-DD` (midnight UTC).
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            start + count <= bytes.count ? CalendarDate.number(bytes[start..<start + count]) : nil
        }
        guard let (year, month, day) = CalendarDate.dayParts(bytes), CalendarDate.isValid(year: year, month: month, day: day)
        else { return nil }
        var hour = 0, minute = 0, second = 0, millis = 0, offsetMinutes = 0
        var position = 10
        if bytes.count > 10 {
            guard bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " "), bytes.count >= 19,
                  let h = number(11, 2), bytes[13] == UInt8(ascii: ":"), let m = number(14, 2),
                  bytes[16] == UInt8(ascii: ":"), let s = number(17, 2), h < 24, m < 60, s < 61
            else { return nil }
            (hour, minute, second) = (h, m, s)
            position = 19
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                var scale = 100
                while position < bytes.count, let digit = number(position, 1) {
                    millis += digit * scale
                    scale /= 10
                    position += 1
                }
            }
            guard position < bytes.count else { return nil }
            if bytes[position] == UInt8(ascii: "Z") {
                position += 1
            } else if bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                guard let oh = number(position + 1, 2), position + 3 < bytes.count, bytes[position + 3] == UInt8(ascii: ":"),
                      let om = number(position + 4, 2) else { return nil }
                offsetMinutes = (oh * 60 + om) * (bytes[position] == UInt8(ascii: "+") ? 1 : -1)
                position += 6
            } else {
                return nil
            }
            guard position == bytes.count else { return nil }
        }
        let days = CalendarDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetMinutes * 60)
        return seconds * 1000 + Int64(millis)
    }
}

/// Proleptic Gregorian calendar arithmetic for ISO dates.
package enum CalendarDate {
    static func isValid(year: Int, month: Int, day: Int) -> Bool {
        (1...12).contains(month) && day >= 1 && day <= days(inMonth: month, of: year)
    }

    /// The days of `month` (1–12) in `year`.
    package static func days(inMonth month: Int, of year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Year, month and day of the `YYYY-MM-DD` that `bytes` start with, digits only; not checked as a day of the
    /// calendar (`isValid`). For every date field read, every timestamp parsed and every DAV date.
    package static func dayParts<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes) -> (year: Int, month: Int, day: Int)?
    where Bytes.Index == Int {
        let start = bytes.startIndex
        guard bytes.count >= 10, bytes[start + 4] == UInt8(ascii: "-"), bytes[start + 7] == UInt8(ascii: "-"),
              let year = number(bytes[start..<start + 4]), let month = number(bytes[start + 5..<start + 7]),
              let day = number(bytes[start + 8..<start + 10]) else { return nil }
        return (year, month, day)
    }

    /// The number ASCII `digits` spell; nil if there are none, one is not a digit, or there are more than an `Int`
    /// surely holds (18), which the wrapping arithmetic below would otherwise turn into a wrong number.
    package static func number(_ digits: some Collection<UInt8>) -> Int? {
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value = 0
        for byte in digits {
            let digit = Int(byte) &- Int(UInt8(ascii: "0"))
            guard digit >= 0, digit <= 9 else { return nil }
            value = value &* 10 &+ digit
        }
        return value
    }

    /// `YYYY-MM-DD`: a record's `date` field, a DAV date. Its ten bytes are written into the string at once (every
    /// date a record is written with comes here); a year outside 0–9999 is padded piece by piece.
    package static func text(year: Int, month: Int, day: Int) -> String {
        guard (0...9999).contains(year), (0...99).contains(month), (0...99).contains(day) else {
            return padded(year, width: 4) + "-" + padded(month, width: 2) + "-" + padded(day, width: 2)
        }
        return String(unsafeUninitializedCapacity: 10) { text in
            func put(_ value: Int, digits: Int, endingAt end: Int) {
                var rest = value
                for position in stride(from: end - 1, through: end - digits, by: -1) {
                    text[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, digits: 4, endingAt: 4)
            text[4] = UInt8(ascii: "-")
            put(month, digits: 2, endingAt: 7)
            text[7] = UInt8(ascii: "-")
            put(day, digits: 2, endingAt: 10)
            return 10
        }
    }

    /// `value`'s digits, after as many zeros as make `width`. Not `String(format:)`, which casts its arguments at
    /// run time: every date a record is written with comes here.
    package static func padded(_ value: Int, width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.utf8.count)) + digits
    }

    static func isLeap(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    /// Days from 1970-01-01 (Howard Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfYear - (153 * monthIndex + 2) / 5 + 1)
    }
}

extension Int64 {
    fileprivate func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
