import EventStore
import Foundation

/// The steps every mapping takes: finding the one component, its UID, fields checked against the schema, new
/// items' envelopes and the stamps of a patch.
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

    /// The one `name` component (VEVENT, VTODO, VJOURNAL) of a VCALENDAR that is not a recurrence override (the
    /// master: overrides and RRULE stay as they are); another component only (a VTODO among events) is
    /// `wrongComponent`.
    static func master(_ name: String, in calendar: VComponent) throws(DAVSkip) -> VComponent {
        let found = calendar.components(named: name)
        guard !found.isEmpty else {
            let other = calendar.components.first { !$0.isNamed("VTIMEZONE") }
            throw DAVSkip(.wrongComponent, other.map { "a \($0.name), not a \(name)" } ?? "no \(name)")
        }
        let masters = found.filter { $0.line(named: "RECURRENCE-ID") == nil }
        guard masters.count == 1, let master = masters.first else {
            throw DAVSkip(.wrongComponent, masters.isEmpty ? "only recurrence overrides, no \(name) they override" : "\(masters.count) \(name)s in one item")
        }
        return master
    }

    /// Changes the master `name` component of every VCALENDAR in `document` (read() found exactly one).
    static func patchMaster(_ name: String, in document: inout VDocument, _ body: (inout VComponent) -> Void) {
        for index in document.components.indices where document.components[index].isNamed("VCALENDAR") {
            document.components[index].updateComponents(named: name) { component in
                guard component.line(named: "RECURRENCE-ID") == nil else { return }
                body(&component)
            }
        }
    }

    /// evsync's PRODID, in every item it makes.
    static let productID = "-//evsync//evsync//EN"

    /// A new iCalendar item: VERSION and PRODID (RFC 5545 requires both), then the component.
    static func calendar(_ component: VComponent) -> VDocument {
        VDocument([VComponent("VCALENDAR", children: [
            .line(ContentLine("VERSION", value: "2.0")), .line(ContentLine("PRODID", value: productID)), .component(component),
        ])])
    }

    /// A patched iCalendar component's stamps: DTSTAMP (RFC 5545 requires it) and LAST-MODIFIED.
    static func stampCalendarComponent(_ component: inout VComponent, now: Date) {
        let stamp = DAVDate.utcStamp(now)
        component.replaceLines(named: "DTSTAMP", with: [ContentLine("DTSTAMP", value: stamp)])
        component.replaceLines(named: "LAST-MODIFIED", with: [ContentLine("LAST-MODIFIED", value: stamp)])
    }

    /// A patched vCard's stamp: REV.
    static func stampCard(_ card: inout VComponent, now: Date) {
        card.replaceLines(named: "REV", with: [ContentLine("REV", value: DAVDate.utcStamp(now))])
    }

    /// A card's version: 3.0 or 4.0; any other is `unsupportedVersion`.
    static func vCardVersion(of card: VComponent) throws(DAVSkip) -> VCardVersion {
        switch card.line(named: "VERSION")?.value.trimmingSpaces {
        case "3.0": return .three
        case "4.0": return .four
        case let other?: throw DAVSkip(.unsupportedVersion, "vCard \(other) (evsync reads 3.0 and 4.0)")
        case nil: throw DAVSkip(.unsupportedVersion, "a vCard with no VERSION")
        }
    }

    /// N from the one name evsync has (vCard 3 requires N): the last word is the family name, the words before it
    /// the given name (`Lovelace;Ada;;;`), what a contacts app shows best for most names.
    static func structuredName(from name: String) -> ContentLine {
        let words = name.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        let family = words.count > 1 ? words.last ?? "" : ""
        let given = words.count > 1 ? words.dropLast().joined(separator: " ") : name
        return ContentLine("N", value: VText.joinStructured([[family], [given], [""], [""], [""]]))
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

/// The vCard versions evsync reads and patches (new cards are 3.0).
enum VCardVersion { case three, four }

extension String {
    /// Without the spaces and tabs at either end.
    var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }),
              let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        return String(scalars[first...last])
    }
}
