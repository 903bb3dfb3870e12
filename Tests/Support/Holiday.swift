public import EventStore

/// Holiday fields, as the sync tests write them.
public func holiday(_ name: String, date: String = "2026-05-01", details: String? = nil) -> JSONObject {
    var fields: JSONObject = ["name": .string(name), "date": .string(date)]
    if let details { fields["details"] = .string(details) }
    return fields
}
