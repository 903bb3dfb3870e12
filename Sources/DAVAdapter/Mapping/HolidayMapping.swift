public import EventStore
public import Foundation

/// Holiday ⇄ an all-day VEVENT in a VCALENDAR (RFC 5545).
///
/// | Holiday field | VEVENT property |
/// | --- | --- |
/// | `name` | SUMMARY |
/// | `date` | DTSTART;VALUE=DATE, and DTEND;VALUE=DATE the day after (exclusive) |
/// | `details` | DESCRIPTION |
/// | `wikipediaLink` | URL |
/// | `observedBy` | CATEGORIES (all of them, in order; none when empty) |
/// | `image` | the first inline ATTACH (ENCODING=BASE64;VALUE=BINARY, FMTTYPE from the bytes) |
///
/// Read: the VEVENT without RECURRENCE-ID (the master; overrides and RRULE stay as they are). A whole day only:
/// a DTSTART with a time is `timedEvent`, a DTEND past the next day or a DURATION other than P1D is `multiDay`
/// (a DTEND equal to DTSTART, which some clients write, is one day). No VEVENT (a VTODO) is `wrongComponent`.
/// Written new: also PRODID, DTSTAMP and TRANSP:TRANSPARENT (a holiday does not make anyone busy). Patched: the
/// changed fields' properties, then DTSTAMP and LAST-MODIFIED; a DURATION is kept when the date moves, and a
/// changed DESCRIPTION drops X-ALT-DESC, Outlook's HTML copy of the old one.
public struct HolidayMapping: DAVMapping {
    /// The schema read items are checked against (nil: none); the built-in Holiday's by default.
    public let schema: EntitySchema?

    public init(schema: EntitySchema? = try? SchemaRegistry().schema(named: "Holiday")) {
        self.schema = schema
    }

    public var component: String { "VEVENT" }

    public var mappedFields: Set<String> { ["name", "date", "details", "wikipediaLink", "observedBy", "image"] }

    public func read(_ document: VDocument) throws(DAVSkip) -> DAVMappedItem {
        let event = try MappingSupport.master("VEVENT", in: MappingSupport.single("VCALENDAR", in: document))
        let uid = try MappingSupport.uid(of: event)
        guard let startLine = event.line(named: "DTSTART") else { throw DAVSkip(.missingProperty, "VEVENT \(uid) has no DTSTART") }
        let start = try Self.day(startLine)
        if let endLine = event.line(named: "DTEND") {
            let end = try Self.day(endLine)
            guard end >= start else { throw DAVSkip(.invalidValue, "VEVENT \(uid) ends (\(end)) before it starts (\(start))") }
            guard end == start || end == start.next else { throw DAVSkip(.multiDay, "VEVENT \(uid) lasts from \(start) to \(end), not one day") }
        } else if let duration = event.line(named: "DURATION"), !duration.value.equalsIgnoringCase("P1D") {
            throw DAVSkip(.multiDay, "VEVENT \(uid) lasts \(duration.value), not one day (P1D)")
        }
        guard let name = event.line(named: "SUMMARY")?.textValue, !name.isEmpty else {
            throw DAVSkip(.missingProperty, "VEVENT \(uid) has no SUMMARY")
        }
        var optional: JSONObject = [:]
        optional["details"] = event.line(named: "DESCRIPTION").map { .string($0.textValue) }
        optional["wikipediaLink"] = event.line(named: "URL").map { .string($0.value) }
        let categories = event.lines(named: "CATEGORIES").flatMap { VText.list($0.value) }.filter { !$0.isEmpty }
        if !categories.isEmpty { optional["observedBy"] = .array(categories.map(JSONValue.string)) }
        optional["image"] = event.lines.first(where: Self.isInlineAttach).map { .string($0.value) }
        let fields = try MappingSupport.record(required: ["name": .string(name), "date": .string(start.description)],
                                               optional: optional, schema: schema)
        return DAVMappedItem(uid: uid, fields: fields)
    }

    public func write(uid: String, fields: JSONObject, onto base: VDocument?, now: Date) throws(DAVMappingError) -> VDocument {
        let wanted = try Wanted(fields)
        guard let base else { return new(uid: uid, wanted, now: now) }
        let changed = try MappingSupport.changedFields(self, base: base, uid: uid, wanted: wanted.fields)
        guard !changed.isEmpty else { return base }
        var document = base
        MappingSupport.patchMaster("VEVENT", in: &document) { patch(&$0, changed: changed, wanted, now: now) }
        return document
    }

    // MARK: Writing

    /// A record's mapped fields, checked, as they are compared with an item's and written.
    private struct Wanted {
        let name: String
        let date: DAVDate
        let end: DAVDate
        let details: String?
        let link: String?
        let observedBy: [String]
        let image: String?
        let fields: JSONObject

        init(_ record: JSONObject) throws(DAVMappingError) {
            name = try MappingSupport.string(record, "name")
            date = try MappingSupport.date(record, "date")
            guard let end = date.next else { throw DAVMappingError("'date' \(date) has no next day to end on") }
            self.end = end
            details = try MappingSupport.optionalString(record, "details")
            link = try MappingSupport.optionalString(record, "wikipediaLink")
            let observed = record["observedBy"].flatMap { $0 == .null ? nil : $0 }
            guard observed == nil || observed?.arrayValue != nil else { throw DAVMappingError("'observedBy' is not a list") }
            observedBy = try (observed?.arrayValue ?? []).map { value throws(DAVMappingError) in
                guard let text = value.stringValue else { throw DAVMappingError("'observedBy' holds something other than text") }
                return text
            }
            image = try MappingSupport.base64(record, "image")
            var fields: JSONObject = ["name": .string(name), "date": .string(date.description)]
            fields["details"] = details.map(JSONValue.string)
            fields["wikipediaLink"] = link.map(JSONValue.string)
            // As read: no CATEGORIES is no list, and an empty category is none.
            let categories = observedBy.filter { !$0.isEmpty }
            if !categories.isEmpty { fields["observedBy"] = .array(categories.map(JSONValue.string)) }
            fields["image"] = image.map(JSONValue.string)
            self.fields = fields
        }

        var summary: ContentLine { ContentLine("SUMMARY", text: name) }
        var start: ContentLine { ContentLine("DTSTART", parameters: [.init("VALUE", "DATE")], value: date.basic) }
        var endLine: ContentLine { ContentLine("DTEND", parameters: [.init("VALUE", "DATE")], value: end.basic) }
        var description: ContentLine? { details.map { ContentLine("DESCRIPTION", text: $0) } }
        var url: ContentLine? { link.map { ContentLine("URL", value: $0) } }
        var categories: ContentLine? {
            let texts = observedBy.filter { !$0.isEmpty }
            return texts.isEmpty ? nil : ContentLine("CATEGORIES", value: VText.joinList(texts))
        }
        var attach: ContentLine? { image.map { InlineImage.iCalendarLine("ATTACH", base64: $0) } }
    }

    private func new(uid: String, _ wanted: Wanted, now: Date) -> VDocument {
        let lines: [ContentLine?] = [
            ContentLine("UID", text: uid), ContentLine("DTSTAMP", value: DAVDate.utcStamp(now)), wanted.start, wanted.endLine,
            wanted.summary, wanted.description, wanted.url, wanted.categories, wanted.attach, ContentLine("TRANSP", value: "TRANSPARENT"),
        ]
        return MappingSupport.calendar(VComponent("VEVENT", children: lines.compactMap { $0.map(VComponent.Child.line) }))
    }

    private func patch(_ event: inout VComponent, changed: Set<String>, _ wanted: Wanted, now: Date) {
        if changed.contains("name") { event.replaceLines(named: "SUMMARY", with: [wanted.summary]) }
        if changed.contains("date") {
            event.replaceLines(named: "DTSTART", with: [wanted.start])
            if event.line(named: "DURATION") == nil { event.replaceLines(named: "DTEND", with: [wanted.endLine]) }
        }
        if changed.contains("details") {
            event.replaceLines(named: "DESCRIPTION", with: wanted.description.map { [$0] } ?? [])
            event.removeLines(named: "X-ALT-DESC")
        }
        if changed.contains("wikipediaLink") { event.replaceLines(named: "URL", with: wanted.url.map { [$0] } ?? []) }
        if changed.contains("observedBy") { event.replaceLines(named: "CATEGORIES", with: wanted.categories.map { [$0] } ?? []) }
        if changed.contains("image") { event.replaceFirstLine(where: Self.isInlineAttach, with: wanted.attach) }
        MappingSupport.stampCalendarComponent(&event, now: now)
    }

    // MARK: Reading

    /// The day of a DTSTART or DTEND that is a DATE (VALUE=DATE, or eight digits with no VALUE).
    private static func day(_ line: ContentLine) throws(DAVSkip) -> DAVDate {
        if line.hasParameter("VALUE", value: "DATE-TIME") || line.value.contains("T") {
            throw DAVSkip(.timedEvent, "a timed event (\(line.name) \(line.value)), not a whole day")
        }
        guard line.value.utf8.count == 8, let date = DAVDate(line.value) else {
            throw DAVSkip(.invalidValue, "\(line.name) '\(line.value)' is not a date")
        }
        return date
    }

    /// An ATTACH that carries its bytes (ENCODING=BASE64 or VALUE=BINARY), not a link.
    static func isInlineAttach(_ line: ContentLine) -> Bool {
        line.isNamed("ATTACH") && InlineImage.isICalendarInline(line)
    }
}
