import EventStore
import Foundation

/// How Parse spells typed values, and the body of a partial update.
///
/// - A field the schema formats as `date-time` is a Parse `Date`
///   (`{"__type":"Date","iso":…}`); one formatted `date` is a `Date` at
///   midnight UTC, read back as the day when it is one.
/// - A base64 field (`contentEncoding`) is Parse `Bytes` (`{"__type":"Bytes","base64":…}`).
/// - Other `__type` values (pointers, files, geo points) are kept as the objects they are, and so is every
///   value of a field the schema does not declare (a newer app's): it goes back to the server as it came.
extension ParseRemote {
    static func decode(_ value: JSONValue, field: String, schema: EntitySchema) -> JSONValue {
        // A field the schema does not declare is carried as Parse sent it, so that a push gives it back unchanged.
        guard schema.hasWireField(field), let object = value.objectValue, let type = object["__type"]?.stringValue else { return value }
        switch type {
        case "Date":
            guard let iso = object["iso"]?.stringValue else { return value }
            if schema.format(of: field) == "date", iso.hasSuffix("T00:00:00.000Z"), iso.utf8.count == 24 {
                return .string(String(iso.prefix(10)))
            }
            return .string(iso)
        case "Bytes":
            return object["base64"].flatMap { $0.stringValue.map(JSONValue.string) } ?? value
        default:
            return value
        }
    }

    static func encode(_ value: JSONValue, field: String, schema: EntitySchema) -> JSONValue {
        guard let text = value.stringValue else { return value }
        switch schema.format(of: field) {
        case "date" where text.utf8.count == 10: return ["__type": "Date", "iso": .string(text + "T00:00:00.000Z")]
        case "date-time": return ["__type": "Date", "iso": .string(text)]
        default: break
        }
        if schema.isBase64(field) { return ["__type": "Bytes", "base64": .string(text)] }
        return value
    }

    static func encode(_ fields: JSONObject, schema: EntitySchema) -> JSONObject {
        var body: JSONObject = [:]
        for (key, value) in fields { body[key] = encode(value, field: key, schema: schema) }
        return body
    }

    /// The body of a partial update: the keys whose value changed, and a `Delete` op for each key removed.
    static func changes(from old: JSONObject, to new: JSONObject, schema: EntitySchema) -> JSONObject {
        var body: JSONObject = [:]
        for (key, value) in new where old[key] != value { body[key] = encode(value, field: key, schema: schema) }
        for key in old.keys where new[key] == nil { body[key] = ["__op": "Delete"] }
        return body
    }

    // MARK: Dates

    static func date(fromISO text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func dateValue(_ date: Date) -> JSONValue { dateValue(iso: iso(date)) }

    static func dateValue(iso: String) -> JSONValue { ["__type": "Date", "iso": .string(iso)] }
}
