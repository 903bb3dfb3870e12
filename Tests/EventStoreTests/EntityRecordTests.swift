import Foundation
import Testing
@testable import EventStore
import TestSupport

/// An app's own Holiday type, as the README's library example and the DocC article declare it.
private struct Holiday: EntityRecord, Equatable {
    static let entityName = "Holiday"
    var id = Store.newRecordID()
    var name: String
    var date: Date
    var details: String?
}

/// A type that needs a field the schema leaves optional.
private struct StrictHoliday: EntityRecord {
    static let entityName = "Holiday"
    var id: String
    var name: String
    var details: String
}

/// The `Codable` face of the store: `EntityRecord`, `JSONValue` from dates and
/// interpolation, and `observeChanges`.
@Suite("Entity records", .timeLimit(.minutes(2)))
struct EntityRecordTests {
    /// Midnight of a calendar day in the current time zone: what a date picker gives.
    static func day(_ year: Int, _ month: Int, _ day: Int) throws -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        return try #require(calendar.date(from: DateComponents(year: year, month: month, day: day)))
    }

    @Test("a record added as the app's type is stored as schema fields and read back equal")
    func roundTrip() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        let newYear = Holiday(name: "New Year's Day", date: try Self.day(2027, 1, 1), details: "Fireworks")
        try store.add(newYear)

        let stored = try #require(try store.record("Holiday", id: newYear.id))
        #expect(stored.fields == ["name": "New Year's Day", "date": "2027-01-01", "details": "Fireworks"])
        #expect(try store.records(Holiday.self) == [newYear])
        #expect(try store.record(Holiday.self, id: newYear.id) == newYear)
        #expect(try store.record(Holiday.self, id: "absent") == nil)
    }

    @Test("update sets what changed, removes what became nil, and writes nothing when equal")
    func update() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        var holiday = Holiday(name: "Labour Day", date: try Self.day(2027, 5, 1), details: "Parades")
        try store.add(holiday)

        holiday.name = "May Day"
        holiday.details = nil
        let event = try #require(try store.update(holiday))
        #expect(event.set == ["name": "May Day"])
        #expect(event.unset == ["details"])
        #expect(try store.update(holiday) == nil)
        #expect(try store.records(Holiday.self) == [holiday])

        try store.delete(holiday)
        #expect(try store.records(Holiday.self).isEmpty)
        #expect(throws: StoreError.self) { try store.update(holiday) }
    }

    @Test("a value the schema refuses, or a stored record the type cannot read, is an error naming it")
    func errors() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        let error = #expect(throws: StoreError.self) { try store.add(Holiday(name: "", date: try Self.day(2027, 1, 1))) }
        #expect(error?.code == .invalidData)
        #expect(try store.lastSeq() == 0)

        try store.add("Holiday", id: "plain", fields: ["name": "Plain", "date": "2027-02-02"])
        let unreadable = #expect(throws: StoreError.self) { try store.records(StrictHoliday.self) }
        #expect(unreadable?.code == .invalidData)
        #expect(unreadable?.message.contains("Holiday 'plain'") == true, "\(String(describing: unreadable))")
        #expect(unreadable?.message.contains("details") == true, "\(String(describing: unreadable))")
    }

    @Test("a typed read by id, decoded from the stored bytes in place, equals the record read as JSON, however its row is stored")
    func typedReadInPlace() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        // By reference to its creation; to its creation and two edits; inline after an unset; escapes and non-ASCII.
        let created = Holiday(name: "Created", date: try Self.day(2027, 1, 1), details: "as added")
        var edited = Holiday(name: "Edited", date: try Self.day(2027, 2, 2), details: "first")
        var unset = Holiday(name: "Unset", date: try Self.day(2027, 3, 3), details: "to go")
        let escaped = Holiday(name: "Quote \" back\\slash é 😀", date: try Self.day(2027, 4, 4), details: "line\nbreak\ttab\u{1}")
        for holiday in [created, edited, unset, escaped] { try store.add(holiday) }
        try store.edit("Holiday", id: edited.id, set: ["details": "second"])
        try store.edit("Holiday", id: edited.id, set: ["name": "Edited twice"])
        (edited.name, edited.details) = ("Edited twice", "second")
        unset.details = nil
        try store.update(unset)
        let lines = directory.file("imported.jsonl")
        try #"{"id": "imported", "name": "Imported", "date": "2027-05-05"}"#.write(toFile: lines, atomically: true, encoding: .utf8)
        let descriptor = open(lines, O_RDONLY)
        defer { close(descriptor) }
        #expect(try store.importRecords("Holiday", from: descriptor) == 1)

        let asJSON = try store.records(Holiday.self)   // decoded from each record's parsed fields
        #expect(asJSON.count == 5)
        for holiday in asJSON {
            #expect(try store.record(Holiday.self, id: holiday.id) == holiday)
            #expect(try store.read { try $0.record(Holiday.self, id: holiday.id) } == holiday)
        }
        #expect(Set(asJSON.map(\.id)).isSuperset(of: [created.id, edited.id, unset.id, escaped.id]))
        #expect(try store.record(Holiday.self, id: edited.id) == edited)
        #expect(try store.record(Holiday.self, id: unset.id)?.details == nil)
        #expect(try store.record(Holiday.self, id: escaped.id) == escaped)
        // A stored record the type cannot read is the same error either way.
        let unreadable = #expect(throws: StoreError.self) { try store.record(StrictHoliday.self, id: unset.id) }
        #expect(unreadable?.code == .invalidData)
        #expect(unreadable?.message.contains("Holiday '\(unset.id)'") == true && unreadable?.message.contains("details") == true,
                "\(String(describing: unreadable))")
    }

    @Test("dates: a date field is the calendar day, a date-time ISO 8601 in UTC; both read back")
    func dates() throws {
        let moment = Date(timeIntervalSince1970: 1_798_761_600.25)   // 2027-01-01T00:00:00.250Z
        #expect(JSONValue(moment) == "2027-01-01T00:00:00.250Z")
        #expect(JSONValue(moment).dateValue == moment)
        let day = try Self.day(2027, 3, 14)
        #expect(JSONValue(day: day) == "2027-03-14")
        #expect(JSONValue(day: day).dateValue == day)
        // Zeros pad the year to four digits and the month and day to two, as the schema's `YYYY-MM-DD` asks.
        for (year, month, date, text) in [(2027, 12, 31, "2027-12-31"), (987, 6, 5, "0987-06-05"), (12, 1, 9, "0012-01-09")] {
            #expect(JSONValue(day: try Self.day(year, month, date)) == JSONValue.string(text))
        }
        #expect(JSONValue("not a date").dateValue == nil)
        #expect(JSONValue("2027-02-30").dateValue == nil)
        for text in ["2027-3-14", "2027/03/14", "20a7-03-14", "2027-03-1x", "2027-03-14 ", "\u{FF12}027-03-14", "-027-03-14"] {
            #expect(JSONValue.string(text).dateValue == nil, "\(text)")
        }
        // The digits under every date read: a run too long for an `Int` is no number, not a wrapped one.
        #expect(CalendarDate.number(Array("2027".utf8)) == 2027 && CalendarDate.number(Array("999999999999999999".utf8)) == 999_999_999_999_999_999)
        #expect(CalendarDate.number(Array(repeating: UInt8(ascii: "9"), count: 30)) == nil && CalendarDate.number([UInt8]()) == nil)
    }

    @Test("a date field's day is the one Calendar tells, in zones with odd offsets, at their changes and far from now")
    func daysAsCalendarTellsThem() throws {
        let zones = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Pacific/Kiritimati", "Pacific/Pago_Pago",
                     "Asia/Kolkata", "America/St_Johns", "Europe/Amsterdam", "Africa/Monrovia", "Pacific/Apia"]
        var random = SplitMix64(seed: 24)
        for name in zones {
            let zone = try #require(TimeZone(identifier: name), "\(name)")
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            // Moments from 1400 to 10,100: both sides of where the arithmetic hands over to `Calendar`.
            var moments = (0..<2_000).map { _ in Date(timeIntervalSince1970: Double(random.next() % 274_000_000_000) - 17_700_000_000 + 0.5) }
            // Each side of the zone's offset changes, and of the local midnights around them.
            var moment = Date(timeIntervalSince1970: -2_000_000_000)
            for _ in 0..<60 {
                guard let change = zone.nextDaylightSavingTimeTransition(after: moment) else { break }
                let midnight = calendar.startOfDay(for: change)
                moments += [-1, -0.001, 0, 0.001, 1].flatMap { [change.addingTimeInterval($0), midnight.addingTimeInterval($0)] }
                moment = change.addingTimeInterval(1)
            }
            for moment in moments {
                let parts = calendar.dateComponents([.year, .month, .day], from: moment)
                let expected = String(format: "%04d-%02d-%02d", try #require(parts.year), try #require(parts.month), try #require(parts.day))
                #expect(RecordCoder.day(of: moment, in: zone) == expected, "\(name) \(moment.timeIntervalSince1970)")
            }
        }
    }

    @Test("JSON values from string interpolation")
    func interpolation() {
        let year = 2027
        let value: JSONValue = "Holidays of \(year)"
        #expect(value == .string("Holidays of 2027"))
    }

    @available(*, deprecated, message: "tests a deprecated observation, kept working")
    @Test("observeChanges delivers inserted, updated and deleted records of its entity only")
    func observeChanges() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "kept", fields: ["name": "Kept", "date": "2027-01-01"])
        try store.add("Holiday", id: "gone", fields: ["name": "Gone", "date": "2027-01-02"])
        let (records, seq) = try store.recordsAndSeq("Holiday")
        #expect(records.map(\.id) == ["gone", "kept"])
        #expect(seq == 2)

        var changes = store.observeChanges("holiday", after: seq, every: .milliseconds(10)).makeAsyncIterator()
        try store.add("Birthday", id: "b1", fields: ["name": "Ada", "date": "1815-12-10"])
        try store.add("Holiday", id: "new", fields: ["name": "New", "date": "2027-01-03"])
        var first = try #require(try await changes.next())
        // The Birthday is not a change of Holiday; the new Holiday may come alone or with later changes.
        #expect(first.inserted.map(\.id) == ["new"])
        #expect(first.deleted.isEmpty)

        try store.edit("Holiday", id: "kept", set: ["details": "Still here"])
        try store.delete("Holiday", id: "gone")
        var later = RecordChanges<Record>(seq: first.seq)
        while later.updated.isEmpty || later.deleted.isEmpty {
            let next = try #require(try await changes.next())
            later.updated += next.updated
            later.deleted += next.deleted
            later.inserted += next.inserted
            first = next
        }
        #expect(later.updated.map(\.id) == ["kept"])
        #expect(later.updated.first?.fields["details"] == "Still here")
        #expect(later.deleted == ["gone"])
        #expect(later.inserted.isEmpty)
        #expect(first.seq == 6)
    }

    @available(*, deprecated, message: "tests a deprecated observation, kept working")
    @Test("observeChanges of the app's type decodes what changed")
    func observeTypedChanges() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        var changes = store.observeChanges(Holiday.self, after: 0, every: .milliseconds(10)).makeAsyncIterator()
        let holiday = Holiday(name: "Boxing Day", date: try Self.day(2027, 12, 26))
        try store.add(holiday)
        let first = try #require(try await changes.next())
        #expect(first.inserted == [holiday])
    }

    @Test("a change that leaves a record as it was, and a create then delete in one step, yield nothing")
    func noChange() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "h", fields: ["name": "H", "date": "2027-01-01"])
        try store.add("Holiday", id: "brief", fields: ["name": "Brief", "date": "2027-01-01"])
        try store.delete("Holiday", id: "brief")
        let changes = try store.snapshot { try store.changes(of: store.entity("Holiday"), after: 1, in: $0) }
        #expect(changes.isEmpty)
        #expect(changes.seq == 3)
        let fromStart = try store.snapshot { try store.changes(of: store.entity("Holiday"), after: 0, in: $0) }
        #expect(fromStart.inserted.map(\.id) == ["h"])
    }

    @Test("a field the schema does not declare, written under a wider schema, is carried through edits and typed updates")
    func undeclaredFieldsAreCarried() throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let wider = try TemporaryDirectory("evsync-schemas")
        let holiday = try String(contentsOf: RepositoryRoot.url.appendingPathComponent("Schemas/holiday.schema.json"), encoding: .utf8)
        try holiday.replacingOccurrences(of: #""properties": {"#, with: #""properties": {"emoji": {"type": "string"}, "#)
            .write(toFile: wider.file("holiday.schema.json"), atomically: true, encoding: .utf8)
        let id = Store.newRecordID()
        do {
            let newer = try Store(directory: directory.file("store"), configuration: .init(schemas: try SchemaRegistry(directory: wider.path), create: true))
            try newer.add("Holiday", id: id, fields: ["name": "Carnival", "date": "2027-02-09", "emoji": "🎭"])
        }
        // This app's schema lacks `emoji`: its edits and typed updates keep it, and it may not write it.
        let store = try Store(directory: directory.file("store"))
        try store.edit("Holiday", id: id, set: ["details": "masks"])
        var typed = try #require(try store.record(Holiday.self, id: id))
        typed.name = "Carnival!"
        try store.update(typed)
        #expect(try store.record("Holiday", id: id)?.fields
                == ["name": "Carnival!", "date": "2027-02-09", "details": "masks", "emoji": "🎭"])
        let refused = try #require(throws: StoreError.self) { try store.edit("Holiday", id: id, set: ["emoji": "🎉"]) }
        #expect(refused.message.contains("Holiday has no field 'emoji'"))
    }
}
