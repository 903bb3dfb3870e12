import Foundation

/// An app's own type for the records of one entity, read and written with
/// `Codable`: `store.records(Holiday.self)`, `store.add(holiday)`.
///
/// ```swift
/// struct Holiday: EntityRecord {
///     static let entityName = "Holiday"
///     var id = Store.newRecordID()
///     var name: String
///     var date: Date            // the schema's "format": "date" → "2027-01-01"
///     var details: String?      // nil: the field is absent
/// }
/// ```
///
/// `id` is the record's id, shared with the server; it is not one of the
/// fields. Every other stored property is a field of the entity's schema,
/// checked against it like any change. `Date` is written as the schema's
/// format asks for the field: a `date` field as the calendar day in the
/// current time zone (`2027-01-01`, the day a date picker showed), any other
/// as an ISO 8601 date-time in UTC with milliseconds; both forms are read
/// back. `Data` is Base64, which is what `contentEncoding: base64` fields hold.
/// `JSONObject` stays available for everything else.
public protocol EntityRecord: Codable, Sendable {
    /// The entity's name, as its schema's `title` spells it (any case).
    static var entityName: String { get }
    /// The record's id, shared with the server.
    var id: String { get }
}

/// Converts between an app's `EntityRecord` values and the fields a store
/// holds, straight to and from `JSONValue` (`JSONValueEncoder`, `JSONValueDecoder`):
/// what Foundation's JSON coders would make of them, without writing and parsing bytes.
struct RecordCoder: Sendable {
    let schema: EntitySchema

    /// The fields of `record`: everything but its `id`.
    func fields<Value: EntityRecord>(of record: Value) throws(StoreError) -> JSONObject {
        do {
            // A date field's name is the last key of its coding path (an array's dates: the element's index).
            let value = try JSONValueEncoder.encode(record, foundationDates: { [schema] date, path in
                .string(schema.format(of: path.last?.stringValue ?? "") == "date" ? Self.day(of: date) : Self.dateTime(of: date))
            })
            guard var object = value.objectValue else {
                throw StoreError(.invalidData, "a \(Value.self) must encode as a JSON object (keyed container)")
            }
            object["id"] = nil
            return object
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.invalidData, "cannot encode a \(Value.self): \(Self.describe(error))")
        }
    }

    /// `record` as the app's type.
    func decode<Value: EntityRecord>(_ type: Value.Type, from record: Record) throws(StoreError) -> Value {
        let calendar = Self.calendar   // once for the record, not for each date in it
        var decoder = JSONValueDecoder(date: { Self.date(from: $0, calendar: calendar) })
        decoder.dateProblem = { "'\($0)' is not a date (YYYY-MM-DD) or an ISO 8601 date-time" }
        do {
            return try decoder.decode(type, from: record.fields, adding: ("id", .string(record.id)))
        } catch {
            throw StoreError(.invalidData, "\(record.entity) '\(record.id)' cannot be read as a \(Value.self): \(Self.describe(error))")
        }
    }

    // MARK: Dates

    static func day(of date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        let (year, month, day) = (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
        return String(format: "%04d-%02d-%02d", year, month, day)
    }

    static func dateTime(of date: Date) -> String {
        Timestamp.iso8601(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    /// A day (`2027-01-01`, midnight in the current time zone) or a date-time with its offset.
    static func date(from text: String, calendar: Calendar = calendar) -> Date? {
        if let (year, month, day) = Self.dayParts(text), CalendarDate.isValid(year: year, month: month, day: day) {
            return calendar.date(from: DateComponents(year: year, month: month, day: day))
        }
        return Timestamp.parse(text).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// Year, month and day of `YYYY-MM-DD` (digits only), read from its bytes: every date field of every record read comes here.
    private static func dayParts(_ text: String) -> (Int, Int, Int)? {
        let utf8 = text.utf8
        guard utf8.count == 10 else { return nil }
        var numbers = [0, 0, 0], part = 0
        for (index, byte) in utf8.enumerated() {
            if index == 4 || index == 7 {
                guard byte == UInt8(ascii: "-") else { return nil }
                part += 1
            } else {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                numbers[part] = numbers[part] * 10 + Int(byte - UInt8(ascii: "0"))
            }
        }
        return (numbers[0], numbers[1], numbers[2])
    }

    /// The Gregorian calendar in the current time zone (`TZ`), read each time so a changed zone is honoured.
    static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        return calendar
    }

    /// A coding error in one line: what was wrong, and where.
    private static func describe(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.isEmpty ? "" : " at '" + keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".") + "'"
        }
        switch error {
        case DecodingError.keyNotFound(let key, let context): return "no field '\(key.stringValue)'\(path(context.codingPath))"
        case DecodingError.typeMismatch(let type, let context): return "expected \(type)\(path(context.codingPath))"
        case DecodingError.valueNotFound(let type, let context): return "expected \(type), found null\(path(context.codingPath))"
        case DecodingError.dataCorrupted(let context): return context.debugDescription + path(context.codingPath)
        case EncodingError.invalidValue(_, let context): return context.debugDescription + path(context.codingPath)
        default: return String(describing: error)
        }
    }
}
