public import EventStore
public import Foundation

/// A custom entity ⇄ an iCalendar component or a vCard, as its schema's `x-evsync-dav` declares:
///
///     "x-evsync-dav": {"component": "VTODO", "properties": {"title": "SUMMARY", "due": "DUE", "tags": "CATEGORIES"}}
///
/// `component` is VEVENT, VTODO or VJOURNAL (an item of a calendar, inside a VCALENDAR) or VCARD (an address book);
/// `properties` maps fields to content-line properties. A field not mapped stays local. How a value is written
/// follows the field's schema:
///
/// | field | iCalendar | vCard |
/// | --- | --- | --- |
/// | string, `format: date` | `;VALUE=DATE:20270427` | `2027-04-27` (4.0: `20270427`) |
/// | string, `format: date-time` | UTC `20270427T093000Z` (read: that form only) | the same |
/// | string, `format: uri` | the value as is | the same |
/// | string, `contentEncoding: base64` | `ENCODING=BASE64;VALUE=BINARY` | 3.0 `ENCODING=b`, 4.0 a `data:` URI |
/// | other string | TEXT, escaped | the same |
/// | array of strings | one comma list; every line of the property read, in order (owned whole) | the same |
/// | integer, number | its JSON text, read back as a number | the same |
/// | boolean | `TRUE`/`FALSE` | the same |
///
/// evsync owns the first line of each mapped property (the first inline one for bytes), or all of a list's.
/// Read: a required field's property missing is `missingProperty`, a value it cannot take `invalidValue`; an
/// optional field's value the schema refuses is left out and its line kept. A new item gets VERSION and PRODID,
/// UID and DTSTAMP (RFC 5545), or is a vCard 3.0 with N made from FN; a patch rewrites the changed fields' lines,
/// then DTSTAMP and LAST-MODIFIED, or REV, as the built-in mappings do.
public struct SchemaMapping: DAVMapping {
    public let schema: EntitySchema
    public let component: String
    /// The mapped fields, in the schema's order.
    let fields: [Field]

    /// One mapped field: its property (upper case) and how its value is written.
    struct Field {
        let name: String
        let property: String
        let kind: Kind
        let isRequired: Bool
    }

    enum Kind { case text, uri, date, dateTime, binary, list, number, boolean }

    /// The components a mapping may name.
    public static let components = ["VEVENT", "VTODO", "VJOURNAL", "VCARD"]
    /// The adapter's own properties (identity, envelope, stamps): a field mapped to one would fight them.
    static let reserved: Set<String> = ["UID", "VERSION", "PRODID", "DTSTAMP", "LAST-MODIFIED", "REV", "BEGIN", "END"]

    /// The mapping the schema's `x-evsync-dav` declares; nil when it declares none.
    public static func declared(by schema: EntitySchema) throws(DAVMappingError) -> SchemaMapping? {
        guard let options = schema.remoteOptions[DAVRemote.schemaProtocol] else { return nil }
        return try SchemaMapping(schema: schema, options: options)
    }

    /// Reads and checks `options` (an `x-evsync-dav` object); the errors name the entity and what is wrong.
    public init(schema: EntitySchema, options: JSONValue) throws(DAVMappingError) {
        let entity = schema.name
        func refuse(_ problem: String) -> DAVMappingError { DAVMappingError("\(entity)'s x-evsync-dav: \(problem)") }
        guard case .object(let object) = options else { throw refuse("must be an object with 'component' and 'properties'") }
        if let unknown = object.keys.sorted().first(where: { $0 != "component" && $0 != "properties" }) {
            throw refuse("unknown key '\(unknown)' (it holds 'component' and 'properties')")
        }
        guard let component = object["component"]?.stringValue?.uppercased(), Self.components.contains(component) else {
            throw refuse("'component' must be \(Self.components.joined(separator: ", ")), not \(object["component"].map(JSONWriter.string) ?? "missing")")
        }
        guard case .object(let properties)? = object["properties"] else {
            throw refuse("'properties' must be an object of field → property name")
        }
        var fields: [Field] = []
        var fieldOf: [String: String] = [:]
        for name in schema.fieldNames {
            guard let given = properties[name] else { continue }
            guard let property = given.stringValue?.uppercased(), !property.isEmpty,
                  property.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }) else {
                throw refuse("field '\(name)' must map to a property name (letters, digits and '-'), not \(JSONWriter.string(given))")
            }
            guard !Self.reserved.contains(property) else {
                throw refuse("field '\(name)' cannot map to \(property), which evsync writes itself")
            }
            if let other = fieldOf[property] { throw refuse("fields '\(other)' and '\(name)' both map to \(property)") }
            fieldOf[property] = name
            let kind: Kind
            do {
                kind = try Self.kind(of: name, in: schema)
            } catch {
                throw refuse("field '\(name)' \(error.reason)")
            }
            fields.append(Field(name: name, property: property, kind: kind, isRequired: schema.required.contains(name)))
        }
        if let unknown = properties.keys.sorted().first(where: { !schema.fieldNames.contains($0) }) {
            throw refuse("'\(unknown)' is not a field of \(entity) (fields: \(schema.fieldNames.joined(separator: ", ")))")
        }
        // What the RFCs require of every item: a field must give it, in every record.
        let needed: (property: String, kinds: [Kind], rfc: String)? = switch component {
        case "VEVENT": ("DTSTART", [.date, .dateTime], "RFC 5545 requires it of a VEVENT")
        case "VCARD": ("FN", [.text], "RFC 6350 requires it of a vCard")
        default: nil
        }
        if let needed {
            guard let field = fields.first(where: { $0.property == needed.property }) else {
                throw refuse("a \(component) needs a field mapped to \(needed.property) (\(needed.rfc))")
            }
            guard field.isRequired else { throw refuse("field '\(field.name)' maps to \(needed.property), so it must be required (\(needed.rfc))") }
            guard needed.kinds.contains(field.kind) else {
                throw refuse("field '\(field.name)' maps to \(needed.property), which must be \(needed.property == "FN" ? "text" : "a date or a date-time")")
            }
        }
        self.schema = schema
        self.component = component
        self.fields = fields
    }

    /// How a field's value is written, from its schema; a value a content line cannot hold is refused.
    private static func kind(of field: String, in schema: EntitySchema) throws(DAVMappingError) -> Kind {
        let types = schema.types(of: field).subtracting(["null"])
        switch types {
        case ["string"]:
            if schema.isBase64(field) { return .binary }
            switch schema.format(of: field) {
            case "date": return .date
            case "date-time": return .dateTime
            case "uri": return .uri
            default: return .text
            }
        case ["array"]:
            guard schema.itemTypes(of: field)?.subtracting(["null"]) == ["string"] else {
                throw DAVMappingError("is an array of something other than strings (give it \"items\": {\"type\": \"string\"})")
            }
            return .list
        case ["integer"], ["number"], ["integer", "number"]: return .number
        case ["boolean"]: return .boolean
        case []: throw DAVMappingError("has no 'type', so its values could be anything")
        default: throw DAVMappingError("of type \(types.sorted().joined(separator: " or ")) cannot be a property (a string, an array of strings, a number or a boolean can)")
        }
    }

    public var mappedFields: Set<String> { Set(fields.map(\.name)) }

    var isCard: Bool { component == "VCARD" }

    // MARK: Reading

    public func read(_ document: VDocument) throws(DAVSkip) -> DAVMappedItem {
        let item: VComponent
        if isCard {
            item = try MappingSupport.single("VCARD", in: document)
            _ = try MappingSupport.vCardVersion(of: item)
        } else {
            item = try MappingSupport.master(component, in: MappingSupport.single("VCALENDAR", in: document))
        }
        let uid = try MappingSupport.uid(of: item)
        var required: JSONObject = [:], optional: JSONObject = [:]
        for field in fields {
            switch read(field, in: item) {
            case .success(let value?): if field.isRequired { required[field.name] = value } else { optional[field.name] = value }
            case .success(nil) where field.isRequired:
                throw DAVSkip(.missingProperty, "\(component) \(uid) has no \(field.property) ('\(field.name)')")
            case .failure(let problem) where field.isRequired:
                throw DAVSkip(.invalidValue, "\(component) \(uid)'s \(field.property) \(problem)")
            case .success(nil), .failure:
                break       // left out: its line stays as it is
            }
        }
        return DAVMappedItem(uid: uid, fields: try MappingSupport.record(required: required, optional: optional, schema: schema))
    }

    /// What an item holds for a field: its value, none (no line), or a line the field cannot take (and why).
    private enum Reading {
        case success(JSONValue?)
        case failure(String)
    }

    /// The field's value in an item, nil when its property is not there.
    private func read(_ field: Field, in item: VComponent) -> Reading {
        if field.kind == .list {
            let texts = item.lines(named: field.property).flatMap { VText.list($0.value) }.filter { !$0.isEmpty }
            // No line is an empty list: for a required field, the list it is.
            return .success(texts.isEmpty && !field.isRequired ? nil : .array(texts.map(JSONValue.string)))
        }
        let lines = item.lines(named: field.property)
        if field.kind == .binary {
            guard !lines.isEmpty else { return .success(nil) }
            let data = lines.lazy.compactMap(inlineData).first
            return data.map { .success(.string($0)) } ?? .failure("links to its bytes rather than holding them")
        }
        guard let line = lines.first else { return .success(nil) }
        let value = line.value.trimmingSpaces
        switch field.kind {
        case .text: return .success(.string(line.textValue))
        case .uri: return .success(.string(line.value))
        case .date:
            guard let date = DAVDate(value) else { return .failure("'\(value)' is not a date") }
            return .success(.string(date.description))
        case .dateTime:
            guard let time = UTCTime(basic: value) else { return .failure("'\(value)' is not a UTC date-time (YYYYMMDDTHHMMSSZ)") }
            return .success(.string(time.extended))
        case .number:
            guard let number = JSONNumber(value.hasPrefix("+") ? String(value.dropFirst()) : value) else {
                return .failure("'\(value)' is not a number")
            }
            return .success(.number(number))
        case .boolean:
            switch value.uppercased() {
            case "TRUE": return .success(true)
            case "FALSE": return .success(false)
            default: return .failure("'\(value)' is not TRUE or FALSE")
            }
        case .list, .binary: return .success(nil)      // read above
        }
    }

    /// The base64 bytes a line carries (iCalendar's ENCODING=BASE64 or VALUE=BINARY, vCard's ENCODING=b or a
    /// `data:` URI); nil for a link to them.
    private func inlineData(_ line: ContentLine) -> String? {
        isCard ? InlineImage.vCardData(line) : (InlineImage.isICalendarInline(line) ? line.value : nil)
    }

    // MARK: Writing

    public func write(uid: String, fields record: JSONObject, onto base: VDocument?, now: Date) throws(DAVMappingError) -> VDocument {
        let wanted = try wanted(record)
        guard let base else { return new(uid: uid, wanted, now: now) }
        let changed = try MappingSupport.changedFields(self, base: base, uid: uid, wanted: wanted.mapValues(\.value))
        guard !changed.isEmpty else { return base }
        var document = base
        if isCard {
            // read() found exactly one VCARD, of version 3.0 or 4.0.
            for index in document.components.indices where document.components[index].isNamed("VCARD") {
                let version = (try? MappingSupport.vCardVersion(of: document.components[index])) ?? .three
                patch(&document.components[index], changed: changed, wanted, version: version)
                MappingSupport.stampCard(&document.components[index], now: now)
            }
        } else {
            MappingSupport.patchMaster(component, in: &document) { item in
                patch(&item, changed: changed, wanted, version: .three)
                MappingSupport.stampCalendarComponent(&item, now: now)
            }
        }
        return document
    }

    /// A field's value as it is written and read back.
    enum Value {
        case text(String), uri(String), date(DAVDate), dateTime(UTCTime), binary(String), list([String]), number(JSONNumber), boolean(Bool)

        /// The value as `read` gives it back.
        var value: JSONValue {
            switch self {
            case .text(let text), .uri(let text), .binary(let text): .string(text)
            case .date(let date): .string(date.description)
            case .dateTime(let time): .string(time.extended)
            case .list(let texts): .array(texts.map(JSONValue.string))
            case .number(let number): .number(number)
            case .boolean(let flag): .bool(flag)
            }
        }
    }

    /// The record's mapped fields, checked, as they are compared with an item's and written; absent and null are none.
    private func wanted(_ record: JSONObject) throws(DAVMappingError) -> [String: Value] {
        var wanted: [String: Value] = [:]
        for field in fields {
            guard let given = record[field.name], given != .null else {
                if field.isRequired { throw DAVMappingError("the record has no '\(field.name)'") }
                continue
            }
            func string() throws(DAVMappingError) -> String {
                guard let text = given.stringValue else { throw DAVMappingError("'\(field.name)' is not a string") }
                return text
            }
            switch field.kind {
            case .text: wanted[field.name] = .text(try string())
            case .uri:
                let text = try string()
                // Written as is: a line break or a control character would end the line.
                guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                    throw DAVMappingError("'\(field.name)' holds a control character, which a URI cannot")
                }
                wanted[field.name] = .uri(text)
            case .date: wanted[field.name] = .date(try MappingSupport.date(record, field.name))
            case .dateTime:
                let text = try string()
                guard text.utf8.count > 10, let time = Timestamp.parse(text).flatMap(UTCTime.init(milliseconds:)) else {
                    throw DAVMappingError("'\(field.name)' is not an ISO 8601 date-time: '\(text)'")
                }
                wanted[field.name] = .dateTime(time)
            case .binary: wanted[field.name] = try MappingSupport.base64(record, field.name).map(Value.binary)
            case .list:
                guard let elements = given.arrayValue else { throw DAVMappingError("'\(field.name)' is not a list") }
                let texts = try elements.map { element throws(DAVMappingError) in
                    guard let text = element.stringValue else { throw DAVMappingError("'\(field.name)' holds something other than text") }
                    return text
                }.filter { !$0.isEmpty }
                // As read: no line is no list, and an empty text is none.
                if !texts.isEmpty || field.isRequired { wanted[field.name] = .list(texts) }
            case .number:
                guard var number = given.numberValue else { throw DAVMappingError("'\(field.name)' is not a number") }
                // iCalendar's INTEGER and FLOAT have no exponent: 1e3 is written, and read back, as 1000.
                if number.text.contains(where: { $0 == "e" || $0 == "E" }) {
                    guard let plain = Decimal(string: number.text, locale: Locale(identifier: "en_US_POSIX")).flatMap({ JSONNumber($0.description) }) else {
                        throw DAVMappingError("'\(field.name)' (\(number)) cannot be written without an exponent")
                    }
                    number = plain
                }
                wanted[field.name] = .number(number)
            case .boolean:
                guard case .bool(let flag) = given else { throw DAVMappingError("'\(field.name)' is not true or false") }
                wanted[field.name] = .boolean(flag)
            }
        }
        return wanted
    }

    /// The line of a field's value (nil: an empty list, which is no line).
    private func line(_ field: Field, _ value: Value, version: VCardVersion) -> ContentLine? {
        let name = field.property
        switch value {
        case .text(let text): return ContentLine(name, text: text)
        case .uri(let text): return ContentLine(name, value: text)
        case .date(let date):
            if isCard { return ContentLine(name, value: version == .three ? date.description : date.basic) }
            return ContentLine(name, parameters: [.init("VALUE", "DATE")], value: date.basic)
        case .dateTime(let time): return ContentLine(name, value: time.basic)
        case .binary(let data):
            return isCard ? InlineImage.vCardLine(name, base64: data, version: version) : InlineImage.iCalendarLine(name, base64: data)
        case .list(let texts): return texts.isEmpty ? nil : ContentLine(name, value: VText.joinList(texts))
        case .number(let number): return ContentLine(name, value: number.text)
        case .boolean(let flag): return ContentLine(name, value: flag ? "TRUE" : "FALSE")
        }
    }

    private func lines(_ wanted: [String: Value], version: VCardVersion) -> [ContentLine] {
        fields.compactMap { field in wanted[field.name].flatMap { line(field, $0, version: version) } }
    }

    private func new(uid: String, _ wanted: [String: Value], now: Date) -> VDocument {
        let mapped = lines(wanted, version: .three)
        guard isCard else {
            let head = [ContentLine("UID", text: uid), ContentLine("DTSTAMP", value: DAVDate.utcStamp(now))]
            return MappingSupport.calendar(VComponent(component, children: (head + mapped).map(VComponent.Child.line)))
        }
        var card = [ContentLine("VERSION", value: "3.0"), ContentLine("PRODID", value: MappingSupport.productID), ContentLine("UID", text: uid)]
        card += mapped
        // vCard 3 requires N: made from FN, unless a field gives it.
        if !fields.contains(where: { $0.property == "N" }), let fn = mapped.first(where: { $0.isNamed("FN") }) {
            card.append(MappingSupport.structuredName(from: fn.textValue))
        }
        card.append(ContentLine("REV", value: DAVDate.utcStamp(now)))
        return VDocument([VComponent("VCARD", children: card.map(VComponent.Child.line))])
    }

    /// Rewrites the lines of the changed fields only; every other line stays as it was.
    private func patch(_ item: inout VComponent, changed: Set<String>, _ wanted: [String: Value], version: VCardVersion) {
        for field in fields where changed.contains(field.name) {
            let new = wanted[field.name].flatMap { line(field, $0, version: version) }
            switch field.kind {
            case .list: item.replaceLines(named: field.property, with: new.map { [$0] } ?? [])
            case .binary:
                item.replaceFirstLine(where: { $0.isNamed(field.property) && inlineData($0) != nil }, with: new)
            default: item.replaceFirstLine(where: { $0.isNamed(field.property) }, with: new)
            }
            // Outlook's HTML copy of the old DESCRIPTION would be shown instead of the new one.
            if !isCard, field.property == "DESCRIPTION" { item.removeLines(named: "X-ALT-DESC") }
            if isCard, field.property == "FN", !fields.contains(where: { $0.property == "N" }), let new {
                item.replaceLines(named: "N", with: [MappingSupport.structuredName(from: new.textValue)])
            }
        }
    }
}

/// A moment to the second in UTC: iCalendar's `20270427T093000Z`, evsync's `2027-04-27T09:30:00Z`.
struct UTCTime {
    let date: DAVDate
    let hour: Int, minute: Int, second: Int

    /// A moment given in milliseconds since 1970 (`Timestamp.parse`), to the second below it (iCalendar has no
    /// fractions); nil outside years 1 to 9999.
    init?(milliseconds: Int64) {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        self.init(basic: DAVDate.utcStamp(Date(timeIntervalSince1970: TimeInterval(seconds))))
    }

    private init(date: DAVDate, hour: Int, minute: Int, second: Int) {
        (self.date, self.hour, self.minute, self.second) = (date, hour, minute, second)
    }

    /// `YYYYMMDDTHHMMSSZ`, the one form read: a floating or zoned time would need its zone's rules.
    init?(basic text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        let digits = bytes[9..<15]
        guard let date = DAVDate(String(decoding: bytes[0..<8], as: UTF8.self)),
              digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let time = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        let (hour, minute, second) = (time / 10_000, time / 100 % 100, time % 100)
        guard hour < 24, minute < 60, second < 60 else { return nil }
        self.init(date: date, hour: hour, minute: minute, second: second)
    }

    var basic: String { date.basic + "T" + two(hour) + two(minute) + two(second) + "Z" }
    var extended: String { date.description + "T" + two(hour) + ":" + two(minute) + ":" + two(second) + "Z" }

    private func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
