import Foundation
import Synchronization

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
        do {
            return try Self.decoder.decode(type, from: record.fields, adding: ("id", .string(record.id)))
        } catch {
            throw StoreError(.invalidData, "\(record.entity) '\(record.id)' cannot be read as a \(Value.self): \(Self.describe(error))")
        }
    }

    /// The record `id` as the app's type, from its stored `fields` as read where they are
    /// (`ViewDatabases.withRow`): only the fields `Value` asks for are decoded. A `JSONParseError`
    /// (the stored bytes are damaged) is thrown as it is, for the caller to read the row the usual way.
    func decode<Value: EntityRecord>(_ type: Value.Type, id: String, stored fields: any JSONMembers) throws -> Value {
        do {
            // Most schemas rename nothing and default nothing: their records are read as stored.
            let fields = schema.renames.isEmpty && schema.defaults.isEmpty ? fields : SchemaReading(stored: fields, schema: schema)
            return try Self.decoder.decode(type, from: fields, adding: ("id", .string(id)))
        } catch let error as JSONParseError {
            throw error
        } catch {
            throw StoreError(.invalidData, "\(schema.name) '\(id)' cannot be read as a \(Value.self): \(Self.describe(error))")
        }
    }

    // MARK: Dates

    /// `YYYY-MM-DD` in `zone` (the current time zone), as the Gregorian `Calendar` tells it.
    static func day(of date: Date, in zone: TimeZone = .current) -> String {
        let seconds = date.timeIntervalSince1970
        // Between these two, the zone's offset and day arithmetic give `Calendar`'s day at a fraction of its cost
        // (`EntityRecordTests.daysAsCalendarTellsThem`): every date field of every record written comes here.
        // Before the first, `Calendar` counts Julian days.
        if seconds >= gregorianDaysStart && seconds < gregorianDaysEnd {
            let local = seconds + Double(zone.secondsFromGMT(for: date))
            let (year, month, day) = CalendarDate.civil(daysSinceEpoch: Int((local / 86_400).rounded(.down)))
            return CalendarDate.text(year: year, month: month, day: day)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let parts = calendar.dateComponents(dayComponents, from: date)
        return CalendarDate.text(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
    }

    private static let dayComponents: Set<Calendar.Component> = [.year, .month, .day]
    /// 1583-01-02 and 9999-12-30 in UTC: a day clear of the Gregorian calendar's start (1582-10-15) and of
    /// four-digit years, whatever the zone's offset.
    private static let gregorianDaysStart = Double(CalendarDate.daysSinceEpoch(year: 1583, month: 1, day: 2)) * 86_400
    private static let gregorianDaysEnd = Double(CalendarDate.daysSinceEpoch(year: 9999, month: 12, day: 30)) * 86_400

    static func dateTime(of date: Date) -> String {
        Timestamp.iso8601(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    /// How records are decoded: dates as `date(from:)` reads them.
    private static let decoder: JSONValueDecoder = {
        var decoder = JSONValueDecoder(date: { date(from: $0) })
        decoder.dateProblem = { "'\($0)' is not a date (YYYY-MM-DD) or an ISO 8601 date-time" }
        return decoder
    }()

    /// A day (`2027-01-01`, midnight in the current time zone) or a date-time with its offset.
    static func date(from text: String) -> Date? {
        if let (year, month, day) = Self.dayParts(text), CalendarDate.isValid(year: year, month: month, day: day) {
            return midnight(year: year, month: month, day: day)
        }
        return Timestamp.parse(text).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// Year, month and day of `YYYY-MM-DD` and nothing else, read from the string's bytes in place: every date
    /// field of every record read comes here.
    private static func dayParts(_ text: String) -> (year: Int, month: Int, day: Int)? {
        var text = text
        return text.withUTF8 { $0.count == 10 ? CalendarDate.dayParts($0) : nil }
    }

    /// Midnight of a day in the current time zone, remembered: an app's records fall on fewer days than
    /// there are records, and `Calendar` takes as long as the rest of a record's read.
    private static func midnight(year: Int, month: Int, day: Int) -> Date? {
        let zone = TimeZone.current
        let key = (year * 100 + month) * 100 + day
        if let date = midnights.withLock({ $0.zone == zone ? $0.days[key] : nil }) { return date }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)) else { return nil }
        midnights.withLock { cache in
            if cache.zone != zone || cache.days.count >= 4_096 { cache = (zone, [:]) }
            cache.days[key] = date
        }
        return date
    }

    /// The days `midnight` computed, in the zone they were computed in (another zone starts afresh).
    private static let midnights = Mutex<(zone: TimeZone, days: [Int: Date])>((.current, [:]))

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

/// A record's stored fields as its schema reads them (`EntitySchema.reading`), each looked up where it
/// is: a field under its former name (`x-evsync-renamed-from`) is read under its new one, and a field
/// the record lacks has its `default`.
private struct SchemaReading: JSONMembers {
    let stored: any JSONMembers
    let schema: EntitySchema

    func member(_ name: String) throws -> JSONValue? {
        // A former name is read only under the new one, as `upcast` moves it.
        guard schema.renames[name] == nil else { return schema.defaults[name] }
        if let value = try stored.member(name) { return value }
        for (former, new) in schema.renames where new == name {
            if let value = try stored.member(former) { return value }
        }
        return schema.defaults[name]
    }

    func names() throws -> [String] { Array(try object().keys) }
    func object() throws -> JSONObject { schema.reading(try stored.object()) }
}
