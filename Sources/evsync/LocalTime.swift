import EventStore
import Foundation

/// Times for people, in the local zone (`TZ` honoured, as `date` does);
/// `--json` and the log keep UTC.
enum LocalTime {
    /// `2026-11-29T17:14:10.123+01:00`; with a zero offset, exactly as the log writes it (`…Z`).
    static func iso8601(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        var time = time_t(seconds)
        var parts = tm()
        guard localtime_r(&time, &parts) != nil, parts.tm_gmtoff != 0 else { return Timestamp.iso8601(milliseconds: milliseconds) }
        let offset = Int(parts.tm_gmtoff) / 60
        let sign = offset < 0 ? "-" : "+"
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(milliseconds - seconds * 1000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(Int(parts.tm_mon) + 1))-\(two(Int(parts.tm_mday)))T\(two(Int(parts.tm_hour))):\(two(Int(parts.tm_min))):\(two(Int(parts.tm_sec))).\(fraction)\(sign)\(two(abs(offset) / 60)):\(two(abs(offset) % 60))"
    }

    /// `--as-of`: an event number, an ISO 8601 time with an offset (or `Z`), a
    /// date (midnight UTC, as before), a date and time without an offset (local),
    /// or `HH:MM[:SS]` (today, local).
    static func logPoint(_ text: String) -> LogPoint? {
        if let point = LogPoint(text) { return point }
        let parts = text.split(separator: "T", maxSplits: 1).flatMap { $0.split(separator: " ", maxSplits: 1) }.map(String.init)
        var moment = tm()
        if parts.count == 2 {
            let date = parts[0].split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard date.count == 3, parts[0].count == 10, let year = date[0], let month = date[1], let day = date[2],
                  Timestamp.parse(parts[0]) != nil else { return nil }
            (moment.tm_year, moment.tm_mon, moment.tm_mday) = (Int32(year - 1900), Int32(month - 1), Int32(day))
        } else if parts.count == 1 {
            var now = time(nil)
            guard localtime_r(&now, &moment) != nil else { return nil }
        } else {
            return nil
        }
        guard let clock = parts.last, let (hour, minute, second, millis) = Self.clock(clock) else { return nil }
        (moment.tm_hour, moment.tm_min, moment.tm_sec) = (Int32(hour), Int32(minute), Int32(second))
        moment.tm_isdst = -1
        let seconds = mktime(&moment)
        guard seconds != -1 else { return nil }
        return .time(Int64(seconds) * 1000 + Int64(millis))
    }

    /// `HH:MM`, `HH:MM:SS` or `HH:MM:SS.fff`.
    private static func clock(_ text: String) -> (Int, Int, Int, Int)? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(fields.count), fields[0].count == 2, fields[1].count == 2,
              let hour = Int(fields[0]), let minute = Int(fields[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        guard fields.count == 3 else { return (hour, minute, 0, 0) }
        let secondParts = fields[2].split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard secondParts[0].count == 2, let second = Int(secondParts[0]), (0..<61).contains(second) else { return nil }
        var millis = 0
        if secondParts.count == 2 {
            let digits = secondParts[1]
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits.prefix(3).padding(toLength: 3, withPad: "0", startingAt: 0))
            else { return nil }
            millis = value
        }
        return (hour, minute, second, millis)
    }
}
