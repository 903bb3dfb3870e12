public import Foundation
import EventStore

/// A calendar day as iCalendar and vCard write it (`20270101`, `2027-01-01`, vCard 4's year-less `--1210`),
/// and as evsync's `date` fields hold it (`2027-01-01`).
///
/// A day without a year is held in evsync as year 1604 (`1604-12-10`), the convention Apple Contacts writes in
/// vCard 3 (`BDAY;X-APPLE-OMIT-YEAR=1604:1604-12-10`): a leap year, so `--0229` has a day, and a year no
/// living person was born in.
public struct DAVDate: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// The year that stands for "no year".
    public static let yearlessYear = 1604

    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), (1...CalendarDate.days(inMonth: month, of: year)).contains(day) else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Whether this day stands for a day without a year.
    public var isYearless: Bool { year == Self.yearlessYear }

    /// evsync's form: `2027-01-01`.
    public var description: String { CalendarDate.text(year: year, month: month, day: day) }

    /// iCalendar's DATE (and vCard 4's basic form): `20270101`.
    public var basic: String { pad(year, 4) + pad(month, 2) + pad(day, 2) }

    /// vCard 4's year-less form: `--0101`.
    public var yearlessBasic: String { "--" + pad(month, 2) + pad(day, 2) }

    /// Reads `YYYY-MM-DD` or `YYYYMMDD`; nil for anything else (a time, a year-less day, text).
    public init?(_ text: some StringProtocol) {
        let digits = Array(text.utf8)
        let fields: (Int, Int, Int)?
        switch digits.count {
        case 8:
            fields = CalendarDate.number(digits[0..<4]).flatMap { y in
                CalendarDate.number(digits[4..<6]).flatMap { m in CalendarDate.number(digits[6..<8]).map { (y, m, $0) } }
            }
        case 10: fields = CalendarDate.dayParts(digits)
        default: fields = nil
        }
        guard let (year, month, day) = fields else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// Reads vCard 4's `--MMDD` or the `--MM-DD` other clients write in vCard 3, as a day of `yearlessYear`.
    public init?(yearless text: some StringProtocol) {
        let digits = Array(text.utf8)
        guard digits.starts(with: [0x2D, 0x2D]) else { return nil }
        let rest = digits.dropFirst(2)
        let month: Int?, day: Int?
        switch rest.count {
        case 4: (month, day) = (CalendarDate.number(rest.prefix(2)), CalendarDate.number(rest.suffix(2)))
        case 5 where rest[rest.startIndex + 2] == UInt8(ascii: "-"):
            (month, day) = (CalendarDate.number(rest.prefix(2)), CalendarDate.number(rest.suffix(2)))
        default: return nil
        }
        guard let month, let day else { return nil }
        self.init(year: Self.yearlessYear, month: month, day: day)
    }

    /// The day after; nil after 9999-12-31, which four digits cannot follow.
    public var next: DAVDate? {
        if day < CalendarDate.days(inMonth: month, of: year) { return DAVDate(year: year, month: month, day: day + 1) }
        if month < 12 { return DAVDate(year: year, month: month + 1, day: 1) }
        return DAVDate(year: year + 1, month: 1, day: 1)
    }

    public static func < (a: DAVDate, b: DAVDate) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }

    /// A moment as iCalendar's UTC DATE-TIME (DTSTAMP, LAST-MODIFIED, vCard's REV): `20270101T093000Z`.
    public static func utcStamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return pad(c.year ?? 1970, 4) + pad(c.month ?? 1, 2) + pad(c.day ?? 1, 2) + "T"
            + pad(c.hour ?? 0, 2) + pad(c.minute ?? 0, 2) + pad(c.second ?? 0, 2) + "Z"
    }
}

private func pad(_ value: Int, _ width: Int) -> String { CalendarDate.padded(value, width: width) }
