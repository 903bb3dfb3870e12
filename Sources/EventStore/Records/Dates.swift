public import Foundation

// Dates for apps: JSON values from `Date`, and the moments events and syncs carry as `Date`.

extension JSONValue {
    /// A date-time field's value (`"format": "date-time"`): ISO 8601, UTC, with milliseconds.
    public init(_ date: Date) {
        self = .string(RecordCoder.dateTime(of: date))
    }

    /// A date field's value (`"format": "date"`): the calendar day of `date` in the current time zone (`2027-01-01`).
    public init(day date: Date) {
        self = .string(RecordCoder.day(of: date))
    }

    /// The date a `date` or `date-time` field holds; a day is midnight in the current time zone.
    public var dateValue: Date? { stringValue.flatMap { RecordCoder.date(from: $0) } }
}

extension Event {
    /// When the event was appended.
    public var date: Date { Date(timeIntervalSince1970: Double(at) / 1000) }
}

extension LastSync {
    /// When it finished.
    public var date: Date { Date(timeIntervalSince1970: Double(at) / 1000) }
}
