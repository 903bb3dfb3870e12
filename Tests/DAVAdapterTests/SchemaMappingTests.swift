import EventStore
import EventSync
import Foundation
import TestSupport
import Testing
@testable import DAVAdapter

/// A custom entity's `x-evsync-dav` (`SchemaMapping`): each kind of value both ways, patches that keep another
/// client's lines byte for byte, the items skipped, and every refusal of a mapping that cannot be used.
@Suite("Schema mapping")
struct SchemaMappingTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)      // 2027-01-15T08:00:00Z
    static let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

    static let choreFields = #"""
        "title": {"type": "string", "minLength": 1}, "due": {"type": "string", "format": "date"},
        "notes": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
        "priority": {"type": "integer", "minimum": 0, "maximum": 9}, "done": {"type": "boolean"},
        "doneAt": {"type": "string", "format": "date-time"}, "link": {"type": "string", "format": "uri"},
        "photo": {"type": "string", "contentEncoding": "base64"}, "effort": {"type": "number"},
        "local": {"type": "string"}, "extra": {"type": "object"}, "counts": {"type": "array", "items": {"type": "integer"}}
        """#
    static let choreProperties = #"""
        "title": "SUMMARY", "due": "DUE", "notes": "DESCRIPTION", "tags": "CATEGORIES", "priority": "PRIORITY",
        "done": "X-DONE", "doneAt": "COMPLETED", "link": "URL", "photo": "ATTACH", "effort": "X-EFFORT"
        """#

    /// An entity `title`, its fields and its mapping (the JSON inside `x-evsync-dav`).
    static func schema(_ title: String = "Chore", fields: String = choreFields, required: String = #"["title"]"#, dav: String) throws -> EntitySchema {
        try EntitySchema(json: #"{"title": "\#(title)", "properties": {\#(fields)}, "required": \#(required), "x-evsync-dav": \#(dav)}"#,
                         source: "\(title.lowercased()).schema.json")
    }

    static func chores(_ component: String = "VTODO") throws -> SchemaMapping {
        let schema = try schema(dav: #"{"component": "\#(component)", "properties": {\#(choreProperties)}}"#)
        return try #require(try SchemaMapping.declared(by: schema))
    }

    static let full: JSONObject = [
        "title": "Water the plants; all of them, twice", "due": "2027-04-27", "notes": "Ferns first,\nthen the rest",
        "tags": ["home", "green, leafy"], "priority": 3, "done": false, "doneAt": "2027-04-27T09:30:00Z",
        "link": "https://example.com/plants?a=1,2;b", "photo": .string(png), "effort": 1.5, "local": "never synced",
    ]

    static func lines(_ text: String) -> [String] { text.components(separatedBy: "\r\n") }

    static func todo(_ lines: String...) -> String {
        (["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//t//t//EN", "BEGIN:VTODO"] + lines + ["END:VTODO", "END:VCALENDAR", ""]).joined(separator: "\r\n")
    }

    @Test("a record becomes a new VTODO, line by line, each kind of value as its field's schema says; read back, it is the record but for its unmapped field")
    func writeNew() throws {
        let mapping = try Self.chores()
        #expect(mapping.component == "VTODO")
        let document = try mapping.write(uid: "chore-1", fields: Self.full, onto: nil, now: Self.now)
        #expect(document.serialized() == ([
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//evsync//evsync//EN", "BEGIN:VTODO", "UID:chore-1", "DTSTAMP:20270115T080000Z",
            "SUMMARY:Water the plants\\; all of them\\, twice", "DUE;VALUE=DATE:20270427", "DESCRIPTION:Ferns first\\,\\nthen the rest",
            "CATEGORIES:home,green\\, leafy", "PRIORITY:3", "X-DONE:FALSE", "COMPLETED:20270427T093000Z",
            "URL:https://example.com/plants?a=1,2;b", Folding.fold("ATTACH;ENCODING=BASE64;VALUE=BINARY;FMTTYPE=image/png:" + Self.png),
            "X-EFFORT:1.5", "END:VTODO", "END:VCALENDAR", "",
        ] as [String]).joined(separator: "\r\n"))
        var expected = Self.full
        expected["local"] = nil          // not mapped: it stays local
        #expect(try mapping.read(document) == DAVMappedItem(uid: "chore-1", fields: expected))
    }

    @Test("another client's forms are read: a DATE without VALUE, CATEGORIES over several lines, +3, true, a folded escaped DESCRIPTION, a data line of another kind left out")
    func readOtherForms() throws {
        let text = Self.todo("UID:x@example.com", "DTSTAMP:20260101T000000Z", "SUMMARY:Sweep", "DUE:20270501", "CATEGORIES:a,b", "CATEGORIES:,c",
                             "PRIORITY:+3", "X-DONE:true", "DESCRIPTION:Under the \\;bed\\, and", "  behind the door", "X-EFFORT:2e1",
                             "ATTACH:https://example.com/not-inline.png")
        #expect(try Self.chores().read(text: text) == DAVMappedItem(uid: "x@example.com", fields: [
            "title": "Sweep", "due": "2027-05-01", "tags": ["a", "b", "c"], "priority": 3, "done": true,
            "notes": "Under the ;bed, and behind the door", "effort": .number(try #require(JSONNumber("2e1"))),
        ]))
    }

    @Test("a date-time is written in UTC to the second, whatever its offset and fraction; only a UTC date-time is read", arguments: [
        ("2027-04-27T11:30:00.250+02:00", "20270427T093000Z", "2027-04-27T09:30:00Z"),
        ("2027-12-31T23:59:59-01:00", "20280101T005959Z", "2028-01-01T00:59:59Z"),
    ])
    func dateTime(given: String, written: String, read: String) throws {
        let mapping = try Self.chores()
        let document = try mapping.write(uid: "u", fields: ["title": "t", "doneAt": .string(given)], onto: nil, now: Self.now)
        #expect(document.serialized().contains("\r\nCOMPLETED:\(written)\r\n"))
        #expect(try mapping.read(document).fields == ["title": "t", "doneAt": .string(read)])
        // A floating or zoned time needs its zone's rules: an optional field is left out, its line kept.
        for other in ["COMPLETED:20270427T093000", "COMPLETED;TZID=Europe/Amsterdam:20270427T093000", "COMPLETED:20270427"] {
            #expect(try mapping.read(text: Self.todo("UID:u", "SUMMARY:t", other)).fields == ["title": "t"])
        }
    }

    @Test("a patch rewrites the changed fields' lines and the stamps only: another client's VALARM, X- line, parameters, folds and order stay byte for byte")
    func patchKeepsOthers() throws {
        let mapping = try Self.chores()
        let base = Self.todo("UID:x@example.com", "DTSTAMP:20260101T000000Z", "LAST-MODIFIED:20260101T000000Z",
                             "SUMMARY;LANGUAGE=nl:Vegen", "X-PEER-COLOR;X-P=\"a;b\":teal", "PRIORITY:high", "CATEGORIES:a", "CATEGORIES:b",
                             "DESCRIPTION:a long description that another client folded at its own width rather than at seventy-fiv",
                             " e octets", "BEGIN:VALARM", "ACTION:DISPLAY", "TRIGGER:-PT15M", "DESCRIPTION:Reminder", "END:VALARM")
        let read = try mapping.read(text: base)
        // PRIORITY:high is no integer: left out, and its line kept.
        #expect(read.fields == ["title": "Vegen", "tags": ["a", "b"],
                                "notes": "a long description that another client folded at its own width rather than at seventy-five octets"])
        var fields = read.fields
        fields["tags"] = ["c"]
        fields["due"] = "2027-06-01"
        let patched = try mapping.write(uid: read.uid, fields: fields, onto: try VDocument(parsing: base), now: Self.now).serialized()
        let expected = base.replacingOccurrences(of: "CATEGORIES:a\r\nCATEGORIES:b\r\n", with: "CATEGORIES:c\r\n")
            .replacingOccurrences(of: "DTSTAMP:20260101T000000Z", with: "DTSTAMP:20270115T080000Z")
            .replacingOccurrences(of: "LAST-MODIFIED:20260101T000000Z", with: "LAST-MODIFIED:20270115T080000Z")
            // A new property goes after the last line before the first nested component.
            .replacingOccurrences(of: " e octets\r\n", with: " e octets\r\nDUE;VALUE=DATE:20270601\r\n")
        #expect(patched == expected)
        #expect(try mapping.read(text: patched).fields == fields)
    }

    @Test("a number with an exponent is written in digits, which iCalendar's INTEGER and FLOAT require, and read back so", arguments: [
        ("1e3", "1000"), ("1.5E-3", "0.0015"), ("-2.5e1", "-25"),
    ])
    func exponent(given: String, written: String) throws {
        let mapping = try Self.chores()
        let fields: JSONObject = ["title": "t", "effort": .number(try #require(JSONNumber(given)))]
        let document = try mapping.write(uid: "u", fields: fields, onto: nil, now: Self.now)
        #expect(document.serialized().contains("\r\nX-EFFORT:\(written)\r\n"))
        #expect(try mapping.read(document).fields == ["title": "t", "effort": .number(try #require(JSONNumber(written)))])
        // Written again onto itself: nothing changed.
        #expect(try mapping.write(uid: "u", fields: fields, onto: document, now: Self.now.addingTimeInterval(60)) == document)
    }

    @Test("a record whose mapped fields did not change gives back the server's item unchanged, even when an unmapped field did")
    func unchanged() throws {
        let mapping = try Self.chores()
        let base = Self.todo("UID:a", "SUMMARY:Dust", "DUE;VALUE=DATE:20270101", "DTSTAMP:20260101T000000Z", "X-ODD:kept")
        let document = try VDocument(parsing: base)
        let written = try mapping.write(uid: "a", fields: ["title": "Dust", "due": "2027-01-01", "local": "changed here"], onto: document, now: Self.now)
        #expect(written == document)
        #expect(written.serialized() == base)
    }

    @Test("what a chore cannot be is skipped, with its kind and reason", arguments: [
        (DAVSamples.appleHoliday, .wrongComponent, "a VEVENT, not a VTODO"),
        (DAVSamples.appleCard, .wrongComponent, "no VCALENDAR (the item holds VCARD)"),
        (todo("SUMMARY:x"), .noUID, "VTODO has no UID"),
        (todo("UID:a", "DUE;VALUE=DATE:20270101"), .missingProperty, "VTODO a has no SUMMARY ('title')"),
        (todo("UID:a", "SUMMARY:"), .invalidRecord, "Chore.title must have at least 1 character"),
    ] as [(String, DAVSkip.Kind, String)])
    func skipped(text: String, kind: DAVSkip.Kind, reason: String) throws {
        #expect(throws: DAVSkip(kind, reason)) { try Self.chores().read(text: text) }
    }

    @Test("a required field's value the schema cannot take skips the item; an optional one's is left out", arguments: [
        (#"{"title": "SUMMARY", "due": "DUE"}"#, #"["title", "due"]"#, "DUE:soon", "VTODO a's DUE 'soon' is not a date"),
        (#"{"title": "SUMMARY", "priority": "PRIORITY"}"#, #"["title", "priority"]"#, "PRIORITY:high", "VTODO a's PRIORITY 'high' is not a number"),
        (#"{"title": "SUMMARY", "done": "X-DONE"}"#, #"["title", "done"]"#, "X-DONE:yes", "VTODO a's X-DONE 'yes' is not TRUE or FALSE"),
        (#"{"title": "SUMMARY", "doneAt": "COMPLETED"}"#, #"["title", "doneAt"]"#, "COMPLETED:20270101T000000",
         "VTODO a's COMPLETED '20270101T000000' is not a UTC date-time (YYYYMMDDTHHMMSSZ)"),
        (#"{"title": "SUMMARY", "photo": "ATTACH"}"#, #"["title", "photo"]"#, "ATTACH:https://example.com/a.png",
         "VTODO a's ATTACH links to its bytes rather than holding them"),
    ])
    func invalidValues(properties: String, required: String, line: String, reason: String) throws {
        let text = Self.todo("UID:a", "SUMMARY:x", line)
        let strict = try #require(try SchemaMapping.declared(by: Self.schema(required: required, dav: #"{"component": "VTODO", "properties": \#(properties)}"#)))
        #expect(throws: DAVSkip(.invalidValue, reason)) { try strict.read(text: text) }
        let lenient = try #require(try SchemaMapping.declared(by: Self.schema(dav: #"{"component": "VTODO", "properties": \#(properties)}"#)))
        #expect(try lenient.read(text: text).fields == ["title": "x"])
    }

    @Test("a VCARD mapping: a new card is vCard 3.0 with N made from FN; a vCard 4 patched keeps 4's forms; a changed FN rewrites N")
    func cards() throws {
        let schema = try Self.schema("Member", fields: #"""
            "name": {"type": "string"}, "joined": {"type": "string", "format": "date"}, "avatar": {"type": "string", "contentEncoding": "base64"},
            "email": {"type": "string"}, "active": {"type": "boolean"}
            """#, required: #"["name"]"#, dav: #"""
            {"component": "VCARD", "properties": {"name": "FN", "joined": "X-JOINED", "avatar": "PHOTO", "email": "EMAIL", "active": "X-ACTIVE"}}
            """#)
        let mapping = try #require(try SchemaMapping.declared(by: schema))
        let fields: JSONObject = ["name": "Ada Lovelace", "joined": "1833-06-05", "avatar": .string(Self.png), "email": "ada@example.com", "active": true]
        let card = try mapping.write(uid: "m-1", fields: fields, onto: nil, now: Self.now)
        #expect(card.serialized() == ([
            "BEGIN:VCARD", "VERSION:3.0", "PRODID:-//evsync//evsync//EN", "UID:m-1", "FN:Ada Lovelace", "X-JOINED:1833-06-05",
            Folding.fold("PHOTO;ENCODING=b;TYPE=PNG:" + Self.png), "EMAIL:ada@example.com", "X-ACTIVE:TRUE", "N:Lovelace;Ada;;;",
            "REV:20270115T080000Z", "END:VCARD", "",
        ] as [String]).joined(separator: "\r\n"))
        #expect(try mapping.read(card).fields == fields)

        let four = DAVSamples.crlf("BEGIN:VCARD\nVERSION:4.0\nUID:m-2\nFN:Grace\nN:;Grace;;;\nTEL;TYPE=cell:+1 555 0100\nREV:20260101T000000Z\nEND:VCARD\n")
        let patched = try mapping.write(uid: "m-2", fields: ["name": "Grace Hopper", "joined": "1906-12-09", "avatar": .string(Self.png)],
                                        onto: try VDocument(parsing: four), now: Self.now).serialized()
        #expect(patched == DAVSamples.crlf("""
            BEGIN:VCARD
            VERSION:4.0
            UID:m-2
            FN:Grace Hopper
            N:Hopper;Grace;;;
            TEL;TYPE=cell:+1 555 0100
            REV:20270115T080000Z
            X-JOINED:19061209
            \(Folding.fold("PHOTO:data:image/png;base64," + Self.png).replacingOccurrences(of: "\r\n", with: "\n"))
            END:VCARD

            """))
        #expect(try mapping.read(text: patched).fields == ["name": "Grace Hopper", "joined": "1906-12-09", "avatar": .string(Self.png)])
        #expect(throws: DAVSkip(.unsupportedVersion, "vCard 2.1 (evsync reads 3.0 and 4.0)")) {
            try mapping.read(text: "BEGIN:VCARD\r\nVERSION:2.1\r\nUID:a\r\nFN:a\r\nEND:VCARD\r\n")
        }
        #expect(throws: DAVSkip(.missingProperty, "VCARD a has no FN ('name')")) {
            try mapping.read(text: "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:a\r\nN:;a;;;\r\nEND:VCARD\r\n")
        }
    }

    @Test("a VEVENT or VJOURNAL mapping reads and writes that component, and skips the others")
    func otherComponents() throws {
        let schema = try Self.schema("Meeting", fields: #""title": {"type": "string"}, "start": {"type": "string", "format": "date-time"}"#,
                                     required: #"["title", "start"]"#, dav: #"{"component": "vevent", "properties": {"title": "summary", "start": "dtstart"}}"#)
        let meetings = try #require(try SchemaMapping.declared(by: schema))
        #expect(meetings.component == "VEVENT")
        let event = try meetings.write(uid: "m", fields: ["title": "Stand-up", "start": "2027-01-15T09:00:00Z"], onto: nil, now: Self.now)
        #expect(event.serialized().contains("BEGIN:VEVENT\r\nUID:m\r\nDTSTAMP:20270115T080000Z\r\nSUMMARY:Stand-up\r\nDTSTART:20270115T090000Z\r\nEND:VEVENT"))
        #expect(try meetings.read(event).fields == ["title": "Stand-up", "start": "2027-01-15T09:00:00Z"])
        #expect(throws: DAVSkip(.wrongComponent, "a VTODO, not a VEVENT")) { try meetings.read(text: DAVSamples.nextcloudTask) }

        let journal = try #require(try SchemaMapping.declared(by: Self.schema("Note", fields: #""text": {"type": "string"}"#, required: "[]",
                                                                                 dav: #"{"component": "VJOURNAL", "properties": {"text": "DESCRIPTION"}}"#)))
        let entry = try journal.write(uid: "n", fields: ["text": "Dear diary"], onto: nil, now: Self.now)
        #expect(entry.serialized().contains("BEGIN:VJOURNAL\r\nUID:n\r\nDTSTAMP:20270115T080000Z\r\nDESCRIPTION:Dear diary\r\nEND:VJOURNAL"))
        #expect(try journal.read(entry).fields == ["text": "Dear diary"])
        #expect(try journal.read(text: DAVSamples.nextcloudTask.replacingOccurrences(of: "VTODO", with: "VJOURNAL")).fields == [:])
    }

    @Test("a mapping that cannot be used is refused, naming the entity and what is wrong", arguments: [
        (#"[]"#, "Chore's x-evsync-dav: must be an object with 'component' and 'properties'"),
        (#"{"component": "VTODO", "properties": {}, "collection": "x"}"#, "Chore's x-evsync-dav: unknown key 'collection'"),
        (#"{"properties": {"title": "SUMMARY"}}"#, "'component' must be VEVENT, VTODO, VJOURNAL, VCARD, not missing"),
        (#"{"component": "VALARM", "properties": {"title": "SUMMARY"}}"#, "'component' must be VEVENT, VTODO, VJOURNAL, VCARD, not \"VALARM\""),
        (#"{"component": "VTODO", "properties": ["title"]}"#, "'properties' must be an object of field → property name"),
        (#"{"component": "VTODO", "properties": {"titel": "SUMMARY"}}"#, "'titel' is not a field of Chore"),
        (#"{"component": "VTODO", "properties": {"title": "SUM MARY"}}"#, "field 'title' must map to a property name (letters, digits and '-'), not \"SUM MARY\""),
        (#"{"component": "VTODO", "properties": {"title": ""}}"#, "field 'title' must map to a property name"),
        (#"{"component": "VTODO", "properties": {"title": 3}}"#, "field 'title' must map to a property name"),
        (#"{"component": "VTODO", "properties": {"title": "SUMMARY", "notes": "summary"}}"#, "fields 'title' and 'notes' both map to SUMMARY"),
        (#"{"component": "VTODO", "properties": {"title": "uid"}}"#, "field 'title' cannot map to UID, which evsync writes itself"),
        (#"{"component": "VTODO", "properties": {"doneAt": "DTSTAMP"}}"#, "field 'doneAt' cannot map to DTSTAMP"),
        (#"{"component": "VTODO", "properties": {"doneAt": "LAST-MODIFIED"}}"#, "field 'doneAt' cannot map to LAST-MODIFIED"),
        (#"{"component": "VCARD", "properties": {"title": "FN", "doneAt": "REV"}}"#, "field 'doneAt' cannot map to REV"),
        (#"{"component": "VTODO", "properties": {"title": "END"}}"#, "field 'title' cannot map to END"),
        (#"{"component": "VTODO", "properties": {"title": "SUMMARY", "extra": "X-EXTRA"}}"#, "field 'extra' of type object cannot be a property"),
        (#"{"component": "VTODO", "properties": {"title": "SUMMARY", "counts": "X-COUNTS"}}"#, "field 'counts' is an array of something other than strings"),
        (#"{"component": "VEVENT", "properties": {"title": "SUMMARY"}}"#, "a VEVENT needs a field mapped to DTSTART (RFC 5545 requires it of a VEVENT)"),
        (#"{"component": "VEVENT", "properties": {"title": "SUMMARY", "due": "DTSTART"}}"#, "field 'due' maps to DTSTART, so it must be required"),
        (#"{"component": "VEVENT", "properties": {"title": "DTSTART"}}"#, "field 'title' maps to DTSTART, which must be a date or a date-time"),
        (#"{"component": "VCARD", "properties": {"notes": "NOTE"}}"#, "a VCARD needs a field mapped to FN (RFC 6350 requires it of a vCard)"),
        (#"{"component": "VCARD", "properties": {"notes": "FN"}}"#, "field 'notes' maps to FN, so it must be required"),
    ])
    func refused(dav: String, message: String) throws {
        let schema = try Self.schema(dav: dav)
        let error = try #require(throws: DAVMappingError.self) { try SchemaMapping.declared(by: schema) }
        #expect(error.reason.hasPrefix("Chore's x-evsync-dav: "), "\(error)")
        #expect(error.reason.contains(message), "\(error)")
        // The remote fails the sync with that line, rather than leave the entity out.
        let remoteError = try #require(throws: HTTPRemoteError.self) { try DAVRemote.mapping(for: schema) }
        #expect(remoteError.message == error.reason)
        #expect(remoteError.syncCode == .invalidData)
    }

    @Test("a field with no type, or of several, is refused too", arguments: [
        (#""title": {"type": "string"}, "any": {}"#, "field 'any' has no 'type'"),
        (#""title": {"type": "string"}, "any": {"type": ["string", "integer"]}"#, "field 'any' of type integer or string cannot be a property"),
    ])
    func refusedTypes(fields: String, message: String) throws {
        let schema = try Self.schema(fields: fields, dav: #"{"component": "VTODO", "properties": {"title": "SUMMARY", "any": "X-ANY"}}"#)
        let error = try #require(throws: DAVMappingError.self) { try SchemaMapping.declared(by: schema) }
        #expect(error.reason.contains(message), "\(error)")
    }

    @Test("DAVRemote's mapping: the schema's own x-evsync-dav wins, even for Holiday; else the built-ins; else none, and not held")
    func remoteMapping() throws {
        #expect(try DAVRemote.mapping(for: try Self.schema(dav: #"{"component": "VTODO", "properties": {"title": "SUMMARY"}}"#)) is SchemaMapping)
        let registry = SchemaRegistry()
        #expect(try DAVRemote.mapping(for: registry.schema(named: "Holiday")) is HolidayMapping)
        #expect(try DAVRemote.mapping(for: registry.schema(named: "Birthday")) is BirthdayMapping)
        let ownHoliday = try Self.schema("Holiday", fields: #""name": {"type": "string"}, "date": {"type": "string", "format": "date"}"#,
                                         required: #"["name", "date"]"#, dav: #"{"component": "VTODO", "properties": {"name": "SUMMARY", "date": "DUE"}}"#)
        #expect(try DAVRemote.mapping(for: ownHoliday)?.component == "VTODO")
        let unmapped = try EntitySchema(json: #"{"title": "Book", "properties": {"title": {"type": "string"}}}"#, source: "book.schema.json")
        #expect(try DAVRemote.mapping(for: unmapped) == nil)
        let remote = try DAVRemote(serverURL: "http://127.0.0.1:1/", credentials: nil)
        #expect(!remote.holds(unmapped))
        // Held although it cannot be used: the sync then fails saying why, instead of leaving it out unseen.
        #expect(remote.holds(try Self.schema(dav: #"{"component": "VTASK"}"#)))
    }
}
