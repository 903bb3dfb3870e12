import EventStore
import Foundation
import TestSupport
import Testing
@testable import DAVAdapter

/// Holiday ⇄ VEVENT both ways, the items that are skipped and why, and patches of other clients' events.
@Suite("Holiday mapping")
struct HolidayMappingTests {
    static let mapping = HolidayMapping()

    @Test("a DAV date is read as iCalendar's DATE, evsync's YYYY-MM-DD or vCard's year-less day, and nothing else")
    func davDates() {
        #expect(DAVDate("20270101")?.description == "2027-01-01")
        #expect(DAVDate("2028-02-29")?.basic == "20280229")
        #expect(DAVDate(yearless: "--1210")?.yearlessBasic == "--1210")
        #expect(DAVDate(yearless: "--12-10")?.yearlessBasic == "--1210")
        for text in ["2027-02-29", "2027-13-01", "20270132", "2027-1-01", "2027/01/01", "2027-01-0x", "202701011", "", "--1310"] {
            #expect(DAVDate(text) == nil && DAVDate(yearless: text) == nil, "\(text)")
        }
    }
    static let now = Date(timeIntervalSince1970: 1_800_000_000)      // 2027-01-15T08:00:00Z
    static let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    static let koningsdag: JSONObject = [
        "name": "Koningsdag", "date": "2027-04-27", "details": "King's Day; orange everywhere,\nand a free market",
        "wikipediaLink": "https://en.wikipedia.org/wiki/King%27s_Day", "observedBy": ["NL", "Aruba, Curaçao"], "image": .string(png),
    ]

    static func lines(_ text: String) -> [String] { text.components(separatedBy: "\r\n") }

    @Test("a record becomes a new all-day VEVENT, line by line")
    func writeNew() throws {
        let document = try Self.mapping.write(uid: "holiday-1", fields: Self.koningsdag, onto: nil, now: Self.now)
        let expected = [
            "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//evsync//evsync//EN", "BEGIN:VEVENT", "UID:holiday-1",
            "DTSTAMP:20270115T080000Z", "DTSTART;VALUE=DATE:20270427", "DTEND;VALUE=DATE:20270428", "SUMMARY:Koningsdag",
            "DESCRIPTION:King's Day\\; orange everywhere\\,\\nand a free market", "URL:https://en.wikipedia.org/wiki/King%27s_Day",
            "CATEGORIES:NL,Aruba\\, Curaçao", Folding.fold("ATTACH;ENCODING=BASE64;VALUE=BINARY;FMTTYPE=image/png:" + Self.png),
            "TRANSP:TRANSPARENT", "END:VEVENT", "END:VCALENDAR", "",
        ]
        #expect(document.serialized() == expected.joined(separator: "\r\n"))
        #expect(try Self.mapping.read(document) == DAVMappedItem(uid: "holiday-1", fields: Self.koningsdag))
    }

    @Test("only the fields a record has are written; a record read back is the record", arguments: [
        ["name": "New Year", "date": "2027-01-01"],
        ["name": "Leap day", "date": "2028-02-29", "details": ""],
        ["name": "Old year's eve", "date": "2027-12-31", "observedBy": ["NL"]],
        ["name": "No categories", "date": "2027-06-01", "observedBy": []],
    ] as [JSONObject])
    func writeRead(fields: JSONObject) throws {
        let document = try Self.mapping.write(uid: "u", fields: fields, onto: nil, now: Self.now)
        var expected = fields
        if fields["observedBy"] == [] { expected["observedBy"] = nil }      // no CATEGORIES is no list
        #expect(try Self.mapping.read(document).fields == expected)
        let event = try #require(document.components.first?.components.first)
        #expect(event.line(named: "DESCRIPTION") == (fields["details"] == nil ? nil : ContentLine("DESCRIPTION", text: "")))
        #expect(event.line(named: "CATEGORIES")?.value == (fields["observedBy"] == ["NL"] ? "NL" : nil))
        if fields["date"] == "2027-12-31" { #expect(event.line(named: "DTEND")?.value == "20280101") }
        if fields["date"] == "2028-02-29" { #expect(event.line(named: "DTEND")?.value == "20280301") }
    }

    @Test("other clients' holidays are read", arguments: [
        ("Apple holiday", "6A1F3C2E-8B9D-4E0F-A1B2-C3D4E5F60718", ["name": "Bevrijdingsdag", "date": "2027-05-05"]),
        ("Google yearly", "20271225_3j4k5l6m7n8o9p0q1r2s3t4u5v@google.com", [
            "name": "Eerste Kerstdag", "date": "2027-12-25",
            "details": "Public holiday; shops closed, trains on the Sunday timetable.\nSee https://www.rijksoverheid.nl/onderwerpen/feestdagen/vraag-en-antwoord/welke-dagen-zijn-officiele-feestdagen",
        ]),
        ("Thunderbird holiday", "8b1e6a52-1c2d-4e3f-9a0b-1c2d3e4f5a6b", [
            "name": "Fête nationale", "date": "2027-07-14", "observedBy": ["Jour férié", "Holidays"],
            "details": "Commémoration de la prise de la Bastille — défilé sur les Champs-Élysées le matin, feu d’artifice à la tour Eiffel le soir.",
        ]),
        ("Nextcloud holiday", "c2a7c3f0-5b1e-4c9e-8d4a-0e6f7a8b9c0d", [
            "name": "建国記念の日", "date": "2027-02-11", "details": "日本の国民の祝日の一つ。建国をしのび、国を愛する心を養う日。",
            "wikipediaLink": "https://ja.wikipedia.org/wiki/%E5%BB%BA%E5%9B%BD%E8%A8%98%E5%BF%B5%E3%81%AE%E6%97%A5",
            "observedBy": ["JP"], "image": .string(png),
        ]),
    ] as [(String, String, JSONObject)])
    func readSamples(sample: String, uid: String, fields: JSONObject) throws {
        let text = try #require(DAVSamples.all.first { $0.0 == sample }?.1)
        #expect(try Self.mapping.read(text: text) == DAVMappedItem(uid: uid, fields: fields))
    }

    static func event(_ lines: String...) -> String { event(lines) }

    static func event(_ lines: [String]) -> String {
        (["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//t//t//EN", "BEGIN:VEVENT"] + lines + ["END:VEVENT", "END:VCALENDAR", ""]).joined(separator: "\r\n")
    }

    @Test("what a holiday cannot be is skipped, with its kind and reason", arguments: [
        (DAVSamples.googleMeeting, .timedEvent, "a timed event (DTSTART 20270112T093000), not a whole day"),
        (DAVSamples.nextcloudTask, .wrongComponent, "a VTODO, not a VEVENT"),
        (DAVSamples.appleCard, .wrongComponent, "no VCALENDAR (the item holds VCARD)"),
        (event("DTSTAMP:20270101T000000Z", "DTSTART;VALUE=DATE:20270101", "SUMMARY:x"), .noUID, "VEVENT has no UID"),
        (event("UID:a", "SUMMARY:x"), .missingProperty, "VEVENT a has no DTSTART"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101"), .missingProperty, "VEVENT a has no SUMMARY"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101", "SUMMARY:"), .missingProperty, "VEVENT a has no SUMMARY"),
        (event("UID:a", "DTSTART:20270101T000000Z", "SUMMARY:x"), .timedEvent, "a timed event (DTSTART 20270101T000000Z), not a whole day"),
        (event("UID:a", "DTSTART;VALUE=DATE-TIME:20270101", "SUMMARY:x"), .timedEvent, "a timed event (DTSTART 20270101), not a whole day"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270132", "SUMMARY:x"), .invalidValue, "DTSTART '20270132' is not a date"),
        (event("UID:a", "DTSTART;VALUE=DATE:2027-01-01", "SUMMARY:x"), .invalidValue, "DTSTART '2027-01-01' is not a date"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101", "DTEND;VALUE=DATE:20270104", "SUMMARY:x"), .multiDay, "VEVENT a lasts from 2027-01-01 to 2027-01-04, not one day"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101", "DTEND;VALUE=DATE:20261231", "SUMMARY:x"), .invalidValue, "VEVENT a ends (2026-12-31) before it starts (2027-01-01)"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101", "DURATION:P2D", "SUMMARY:x"), .multiDay, "VEVENT a lasts P2D, not one day (P1D)"),
        ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nRECURRENCE-ID;VALUE=DATE:20270101\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
         .wrongComponent, "only recurrence overrides, no VEVENT they override"),
        (event("UID:a", "DTSTART;VALUE=DATE:20270101", "SUMMARY:x", "END:VEVENT", "BEGIN:VEVENT", "UID:b"), .wrongComponent, "2 VEVENTs in one item"),
        ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n", .wrongComponent, "no VEVENT"),
        ("BEGIN:VCALENDAR\r\nSUMMARY:x\r\n", .unreadable, "not valid iCalendar or vCard: line 1: BEGIN:VCALENDAR is never closed"),
        ("{\"name\": \"New Year\"}", .unreadable, "not valid iCalendar or vCard: line 1: no property name before '{\"name\": \"New Year\"}'"),
    ] as [(String, DAVSkip.Kind, String)])
    func skipped(text: String, kind: DAVSkip.Kind, reason: String) {
        #expect(throws: DAVSkip(kind, reason)) { try Self.mapping.read(text: text) }
    }

    @Test("a one-day event in the forms clients write: DTEND the same day, DURATION:P1D, no end, a bare DATE")
    func oneDayForms() throws {
        for lines in [["DTSTART;VALUE=DATE:20270101", "DTEND;VALUE=DATE:20270101"], ["DTSTART;VALUE=DATE:20270101", "DURATION:P1D"],
                      ["DTSTART;VALUE=DATE:20270101"], ["DTSTART:20270101"]] {
            let text = Self.event(["UID:a", "SUMMARY:x"] + lines)
            #expect(try Self.mapping.read(text: text).fields == ["name": "x", "date": "2027-01-01"])
        }
    }

    @Test("an optional field the schema refuses is left out, and its line stays as it is through an edit")
    func refusedOptionalField() throws {
        let text = Self.event("UID:a", "DTSTART;VALUE=DATE:20270101", "SUMMARY:x", "URL:not a link", "ATTACH;VALUE=BINARY;ENCODING=BASE64:%%%")
        let read = try Self.mapping.read(text: text)
        #expect(read.fields == ["name": "x", "date": "2027-01-01"])
        let base = try VDocument(parsing: text)
        let edited = try Self.mapping.write(uid: "a", fields: ["name": "y", "date": "2027-01-01"], onto: base, now: Self.now)
        #expect(edited.serialized().contains("\r\nURL:not a link\r\nATTACH;VALUE=BINARY;ENCODING=BASE64:%%%\r\n"))
    }

    @Test("an edit rewrites the changed fields' lines and the stamps; VALARM, X- properties and order stay")
    func patchApple() throws {
        let base = try VDocument(parsing: DAVSamples.appleHoliday)
        let patched = try Self.mapping.write(uid: "6A1F3C2E-8B9D-4E0F-A1B2-C3D4E5F60718",
                                             fields: ["name": "Liberation Day", "date": "2027-05-06", "details": "Every five years a day off"],
                                             onto: base, now: Self.now)
        let before = Self.lines(DAVSamples.appleHoliday), after = Self.lines(patched.serialized())
        #expect(before.filter { !after.contains($0) } == [
            "DTEND;VALUE=DATE:20270506", "DTSTAMP:20260412T081530Z", "DTSTART;VALUE=DATE:20270505", "LAST-MODIFIED:20260412T081502Z",
            "SUMMARY:Bevrijdingsdag",
        ])
        #expect(after.filter { !before.contains($0) } == [
            "DTEND;VALUE=DATE:20270507", "DTSTAMP:20270115T080000Z", "DTSTART;VALUE=DATE:20270506", "LAST-MODIFIED:20270115T080000Z",
            "SUMMARY:Liberation Day", "DESCRIPTION:Every five years a day off",
        ])
        // Same places: the changed lines where the old ones were, the new DESCRIPTION before the VALARM.
        #expect(after.count == before.count + 1)
        #expect(after.firstIndex(of: "BEGIN:VALARM") == (before.firstIndex(of: "BEGIN:VALARM") ?? 0) + 1)
        #expect(try Self.mapping.read(patched).fields == ["name": "Liberation Day", "date": "2027-05-06", "details": "Every five years a day off"])
    }

    @Test("moving a yearly event keeps its RRULE; a DURATION stays when the date moves; X-ALT-DESC goes with its DESCRIPTION")
    func patchKeeps() throws {
        let google = try Self.mapping.write(uid: "20271225_3j4k5l6m7n8o9p0q1r2s3t4u5v@google.com",
                                            fields: ["name": "Eerste Kerstdag", "date": "2027-12-26", "details": "x"],
                                            onto: VDocument(parsing: DAVSamples.googleYearly), now: Self.now)
        #expect(Self.lines(google.serialized()).contains("RRULE:FREQ=YEARLY"))
        #expect(Self.lines(google.serialized()).contains("DESCRIPTION:x"))
        let text = Self.event("UID:a", "DTSTART;VALUE=DATE:20270101", "DURATION:P1D", "SUMMARY:x", "DESCRIPTION:old",
                              "X-ALT-DESC;FMTTYPE=text/html:<p>old</p>")
        let moved = try Self.mapping.write(uid: "a", fields: ["name": "x", "date": "2027-01-02", "details": "new"],
                                           onto: VDocument(parsing: text), now: Self.now).serialized()
        #expect(Self.lines(moved).contains("DURATION:P1D"))
        #expect(!moved.contains("DTEND"))
        #expect(!moved.contains("X-ALT-DESC"))
        #expect(Self.lines(moved).contains("DESCRIPTION:new"))
    }

    @Test("removing a field removes its lines; changing the image replaces the first inline ATTACH only")
    func patchRemoveAndImage() throws {
        let base = try VDocument(parsing: DAVSamples.nextcloudHoliday)
        var fields = try Self.mapping.read(base).fields
        fields["observedBy"] = nil
        fields["wikipediaLink"] = nil
        fields["image"] = "R0lGODlhAQABAAAAACw="     // a GIF's first bytes
        let patched = try Self.mapping.write(uid: "c2a7c3f0-5b1e-4c9e-8d4a-0e6f7a8b9c0d", fields: fields, onto: base, now: Self.now).serialized()
        #expect(!patched.contains("CATEGORIES"))
        #expect(!patched.contains("\r\nURL:"))
        #expect(Self.lines(patched).contains("ATTACH;ENCODING=BASE64;VALUE=BINARY;FMTTYPE=image/gif:R0lGODlhAQABAAAAACw="))
        #expect(Self.lines(patched).contains("COLOR:crimson"))
        #expect(Self.lines(patched).contains("X-NC-GROUP-ID:0"))
        #expect(Self.lines(patched).contains("SEQUENCE:2"))
    }

    @Test("what a server rewrites (DTSTAMP, PRODID, order, folds) is not an edit; a changed mapped field is")
    func edits() throws {
        let original = try VDocument(parsing: DAVSamples.googleYearly)
        // As Radicale stores it: its own order, LF-free, refolded, a new DTSTAMP, another PRODID.
        var rewritten = try VDocument(parsing: DAVSamples.googleYearly)
        rewritten.components[0].replaceLines(named: "PRODID", with: [ContentLine("PRODID", value: "-//Radicale//NONSGML Radicale Server//EN")])
        rewritten.components[0].updateComponents(named: "VEVENT") { event in
            event.replaceLines(named: "DTSTAMP", with: [ContentLine("DTSTAMP", value: "20270301T000000Z")])
            event.children.reverse()
        }
        let refolded = try VDocument(parsing: rewritten.serialized(keepingSources: false))
        #expect(!Self.mapping.isEdit(from: original, to: refolded))
        var renamed = refolded
        renamed.components[0].updateComponents(named: "VEVENT") { $0.replaceLines(named: "SUMMARY", with: [ContentLine("SUMMARY", text: "Kerstmis")]) }
        #expect(Self.mapping.isEdit(from: original, to: renamed))
        var timed = refolded
        timed.components[0].updateComponents(named: "VEVENT") { $0.replaceLines(named: "DTSTART", with: [ContentLine("DTSTART", value: "20271225T100000Z")]) }
        #expect(Self.mapping.isEdit(from: original, to: timed))
        #expect(!Self.mapping.isEdit(from: timed, to: timed))
    }

    @Test("a record the mapping cannot write is an error, not an item", arguments: [
        (["date": "2027-01-01"], "the record has no 'name'"),
        (["name": "", "date": "2027-01-01"], "the record has no 'name'"),
        (["name": "x", "date": "20270101"], "'date' is not a date as YYYY-MM-DD: '20270101'"),
        (["name": "x", "date": "2027-02-29"], "'date' is not a date as YYYY-MM-DD: '2027-02-29'"),
        (["name": "x", "date": "9999-12-31"], "'date' 9999-12-31 has no next day to end on"),
        (["name": "x", "date": "2027-01-01", "observedBy": "NL"], "'observedBy' is not a list"),
        (["name": "x", "date": "2027-01-01", "observedBy": [1]], "'observedBy' holds something other than text"),
        (["name": "x", "date": "2027-01-01", "image": "not base64!"], "'image' is not base64"),
        (["name": 1, "date": "2027-01-01"], "'name' is not a string"),
    ] as [(JSONObject, String)])
    func unwritable(fields: JSONObject, reason: String) {
        #expect(throws: DAVMappingError(reason)) { try Self.mapping.write(uid: "u", fields: fields, onto: nil, now: Self.now) }
    }

    @Test("a patch needs the server's item readable and with the record's UID")
    func patchNeedsReadableBase() throws {
        #expect(throws: DAVMappingError("the server's item cannot be patched: a VTODO, not a VEVENT")) {
            try Self.mapping.write(uid: "u", fields: ["name": "x", "date": "2027-01-01"], onto: VDocument(parsing: DAVSamples.nextcloudTask), now: Self.now)
        }
        #expect(throws: DAVMappingError("the server's item has the UID 6A1F3C2E-8B9D-4E0F-A1B2-C3D4E5F60718, not u")) {
            try Self.mapping.write(uid: "u", fields: ["name": "x", "date": "2027-01-01"], onto: VDocument(parsing: DAVSamples.appleHoliday), now: Self.now)
        }
    }
}
