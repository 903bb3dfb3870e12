import EventStore

/// The steps both mappings take: finding the one component, its UID, and fields checked against the schema.
enum MappingSupport {
    /// The document's only top-level `name` component (a CalDAV or CardDAV resource holds one).
    static func single(_ name: String, in document: VDocument) throws(DAVSkip) -> VComponent {
        let found = document.components(named: name)
        guard found.count == 1, let component = found.first else {
            let names = document.components.map(\.name).joined(separator: ", ")
            throw DAVSkip(.wrongComponent, found.isEmpty ? "no \(name) (the item holds \(names))" : "\(found.count) \(name)s in one item")
        }
        return component
    }

    /// The component's UID: required by CalDAV and CardDAV, and the record's id comes from it.
    static func uid(of component: VComponent) throws(DAVSkip) -> String {
        guard let uid = component.line(named: "UID")?.textValue.trimmingSpaces, !uid.isEmpty else {
            throw DAVSkip(.noUID, "\(component.name) has no UID")
        }
        return uid
    }

    /// The record from what was read: the required fields as read, each optional field only if the schema takes
    /// it (a URL that is not absolute, an ATTACH that is not base64 is left out, and its line kept as it is), then
    /// the whole record checked.
    static func record(required: JSONObject, optional: JSONObject, schema: EntitySchema?) throws(DAVSkip) -> JSONObject {
        var record = required
        for (field, value) in optional where (try? schema?.validate(field: field, value: value)) != nil {
            record[field] = value
        }
        do {
            try schema?.validate(record)
        } catch {
            throw DAVSkip(.invalidRecord, error.description)
        }
        return record
    }

    /// The mapped fields whose values differ between the server's item `base` and `wanted` (a record's fields as
    /// the mapping reads them back), or why `base` cannot be patched.
    static func changedFields(_ mapping: some DAVMapping, base: VDocument, uid: String, wanted: JSONObject) throws(DAVMappingError) -> Set<String> {
        let current: DAVMappedItem
        do {
            current = try mapping.read(base)
        } catch {
            throw DAVMappingError("the server's item cannot be patched: \(error.reason)")
        }
        guard current.uid == uid else { throw DAVMappingError("the server's item has the UID \(current.uid), not \(uid)") }
        return Set(wanted.keys).union(current.fields.keys).filter { wanted[$0] != current.fields[$0] }
    }

    /// A required string field of a record to write.
    static func string(_ fields: JSONObject, _ field: String) throws(DAVMappingError) -> String {
        guard let value = try optionalString(fields, field), !value.isEmpty else {
            throw DAVMappingError("the record has no '\(field)'")
        }
        return value
    }

    /// An optional string field of a record to write.
    static func optionalString(_ fields: JSONObject, _ field: String) throws(DAVMappingError) -> String? {
        guard let value = fields[field], value != .null else { return nil }
        guard let string = value.stringValue else { throw DAVMappingError("'\(field)' is not a string") }
        return string
    }

    /// A record's date field as a day.
    static func date(_ fields: JSONObject, _ field: String) throws(DAVMappingError) -> DAVDate {
        let text = try string(fields, field)
        guard let date = DAVDate(text), text.utf8.count == 10 else { throw DAVMappingError("'\(field)' is not a date as YYYY-MM-DD: '\(text)'") }
        return date
    }

    /// An optional base64 field (an image), checked as base64 so that no line is written with something else.
    static func base64(_ fields: JSONObject, _ field: String) throws(DAVMappingError) -> String? {
        guard let text = try optionalString(fields, field) else { return nil }
        guard text.utf8.allSatisfy(isBase64Byte) else { throw DAVMappingError("'\(field)' is not base64") }
        return text
    }

    private static func isBase64Byte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
    }
}

extension String {
    /// Without the spaces and tabs at either end.
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[first...last])
    }
}
