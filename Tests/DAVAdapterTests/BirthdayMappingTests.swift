import EventStore
import Foundation
import TestSupport
import Testing
@testable import DAVAdapter

/// Birthday ⇄ vCard 3.0 and 4.0 both ways, year-less birthdays, skips, and patches of other clients' cards.
@Suite("Birthday mapping")
struct BirthdayMappingTests {
    static let mapping = BirthdayMapping()
    static let now = HolidayMappingTests.now
    static let jpeg = "/9j/4AAQSkZJRgABAQAASABIAAD/4QBMRXhpZgAATU0AKgAAAAgAAYdpAAQAAAABAAAAGgAAAAAAA6ABAAMAAAABAAEAAKACAAQAAAABAAAAAaADAAQAAAABAAAAAQAAAAD/7QA4UGhvdG9zaG9w"
    static let ada: JSONObject = [
        "name": "Ada Lovelace", "date": "1815-12-10", "giftIdeas": "Notes; a loom, punched cards",
        "facebook": "https://www.facebook.com/ada", "image": .string(jpeg),
    ]

    static func lines(_ text: String) -> [String] { text.components(separatedBy: "\r\n") }

    static func card(_ version: String, _ lines: String...) -> String {
        (["BEGIN:VCARD", "VERSION:\(version)"] + lines + ["END:VCARD", ""]).joined(separator: "\r\n")
    }

    @Test("a record becomes a new vCard 3.0, line by line")
    func writeNew() throws {
        let document = try Self.mapping.write(uid: "b-1", fields: Self.ada, onto: nil, now: Self.now)
        let expected = [
            "BEGIN:VCARD", "VERSION:3.0", "PRODID:-//evsync//evsync//EN", "UID:b-1", "FN:Ada Lovelace", "N:Lovelace;Ada;;;",
            "BDAY:1815-12-10", "NOTE:Notes\\; a loom\\, punched cards", "X-SOCIALPROFILE;TYPE=facebook:https://www.facebook.com/ada",
            Folding.fold("PHOTO;ENCODING=b;TYPE=JPEG:" + Self.jpeg), "REV:20270115T080000Z", "END:VCARD", "",
        ]
        #expect(document.serialized() == expected.joined(separator: "\r\n"))
        #expect(try Self.mapping.read(document) == DAVMappedItem(uid: "b-1", fields: Self.ada))
    }

    @Test("N from the one name: the last word the family name, the words before it the given name", arguments: [
        ("Ada Lovelace", "Lovelace;Ada;;;"), ("Ludwig van Beethoven", "Beethoven;Ludwig van;;;"), ("Madonna", ";Madonna;;;"),
        ("Jansen, Pieter", "Pieter;Jansen\\,;;;"),
    ])
    func n(name: String, n: String) throws {
        let document = try Self.mapping.write(uid: "u", fields: ["name": .string(name), "date": "2000-01-01"], onto: nil, now: Self.now)
        #expect(document.components.first?.line(named: "N")?.value == n)
    }

    @Test("a birthday without a year is written in Apple's vCard 3 form and read back as year 1604")
    func yearlessNew() throws {
        let document = try Self.mapping.write(uid: "u", fields: ["name": "Ada", "date": "1604-12-10"], onto: nil, now: Self.now)
        #expect(Self.lines(document.serialized()).contains("BDAY;X-APPLE-OMIT-YEAR=1604:1604-12-10"))
        #expect(try Self.mapping.read(document).fields == ["name": "Ada", "date": "1604-12-10"])
    }

    @Test("other clients' cards are read, vCard 3.0 and 4.0", arguments: [
        ("Apple card", "D2E4F6A8-1B3C-4D5E-8F90-A1B2C3D4E5F6", [
            "name": "Ada Lovelace", "date": "1604-12-10", "giftIdeas": "A first edition of Menabrea's notes, or a slide rule.",
            "facebook": "https://www.facebook.com/ada.lovelace", "image": .string(jpeg),
        ]),
        ("Nextcloud card", "5f4c7e2a-9b1d-4c3e-a5f6-7b8c9d0e1f2a", [
            "name": "Alan Turing", "date": "1912-06-23", "giftIdeas": "Chess set; a bicycle chain.",
            "facebook": "https://www.facebook.com/alan.turing", "image": .string(HolidayMappingTests.png),
        ]),
        ("Thunderbird card", "0c5e8d1a-2b3f-4a6c-9e7d-8f0a1b2c3d4e", ["name": "Ada Lovelace", "date": "1604-12-10"]),
    ] as [(String, String, JSONObject)])
    func readSamples(sample: String, uid: String, fields: JSONObject) throws {
        let text = try #require(DAVSamples.all.first { $0.0 == sample }?.1)
        #expect(try Self.mapping.read(text: text) == DAVMappedItem(uid: uid, fields: fields))
    }

    @Test("BDAY in the forms clients write", arguments: [
        ("3.0", "BDAY:1985-04-12", "1985-04-12"), ("3.0", "BDAY;VALUE=date:1985-04-12", "1985-04-12"),
        ("3.0", "BDAY:19850412", "1985-04-12"), ("3.0", "BDAY:1985-04-12T00:00:00Z", "1985-04-12"),
        ("3.0", "BDAY:--04-12", "1604-04-12"), ("3.0", "BDAY;X-APPLE-OMIT-YEAR=1604:1604-04-12", "1604-04-12"),
        ("3.0", "BDAY;X-APPLE-OMIT-YEAR=1604:1985-04-12", "1985-04-12"),     // the year given is not the one omitted
        ("4.0", "BDAY:19850412", "1985-04-12"), ("4.0", "BDAY:--0412", "1604-04-12"), ("4.0", "BDAY:--0229", "1604-02-29"),
        ("4.0", "BDAY:19531015T231000Z", "1953-10-15"),
    ])
    func birthdayForms(version: String, line: String, date: String) throws {
        let text = Self.card(version, "UID:u", "FN:x", line)
        #expect(try Self.mapping.read(text: text).fields == ["name": "x", "date": .string(date)])
    }

    @Test("what a birthday cannot be is skipped, with its kind and reason", arguments: [
        (DAVSamples.googleCard, .noUID, "VCARD has no UID"),
        (DAVSamples.appleHoliday, .wrongComponent, "no VCARD (the item holds VCALENDAR)"),
        (DAVSamples.googleCard + DAVSamples.thunderbirdCard, .wrongComponent, "2 VCARDs in one item"),
        (card("4.0", "UID:u", "FN:x"), .missingProperty, "vCard u (x) has no BDAY"),
        (card("4.0", "UID:u", "BDAY:--0412"), .missingProperty, "vCard u has no FN"),
        (card("4.0", "UID:u", "FN:", "N:;;;;"), .missingProperty, "vCard u has no FN"),
        (card("4.0", "UID:u", "FN:x", "BDAY;VALUE=text:circa 1800"), .invalidValue, "vCard u's BDAY is text ('circa 1800'), not a date"),
        (card("4.0", "UID:u", "FN:x", "BDAY:--12"), .invalidValue, "vCard u's BDAY '--12' has no month and day evsync can hold"),
        (card("4.0", "UID:u", "FN:x", "BDAY:1985"), .invalidValue, "vCard u's BDAY '1985' has no month and day evsync can hold"),
        (card("4.0", "UID:u", "FN:x", "BDAY:--0230"), .invalidValue, "vCard u's BDAY '--0230' has no month and day evsync can hold"),
        (card("2.1", "UID:u", "FN:x", "BDAY:19850412"), .unsupportedVersion, "vCard 2.1 (evsync reads 3.0 and 4.0)"),
        ("BEGIN:VCARD\r\nUID:u\r\nFN:x\r\nEND:VCARD\r\n", .unsupportedVersion, "a vCard with no VERSION"),
        (card("4.0", "UID:", "FN:x", "BDAY:--0412"), .noUID, "VCARD has no UID"),
    ] as [(String, DAVSkip.Kind, String)])
    func skipped(text: String, kind: DAVSkip.Kind, reason: String) {
        #expect(throws: DAVSkip(kind, reason)) { try Self.mapping.read(text: text) }
    }

    @Test("no FN: the name N spells (given, additional, family)")
    func nameFromN() throws {
        let text = Self.card("3.0", "UID:u", "N:Turing;Alan;Mathison;;", "BDAY:1912-06-23")
        #expect(try Self.mapping.read(text: text).fields["name"] == "Alan Mathison Turing")
    }

    @Test("an edit of Apple's vCard 3: the changed fields' lines and REV; groups, labels, TEL, ADR stay")
    func patchApple() throws {
        let base = try VDocument(parsing: DAVSamples.appleCard)
        var fields = try Self.mapping.read(base).fields
        fields["name"] = "Augusta Ada King"
        fields["date"] = "1604-12-11"
        fields["facebook"] = "https://www.facebook.com/augusta.ada"
        let patched = try Self.mapping.write(uid: "D2E4F6A8-1B3C-4D5E-8F90-A1B2C3D4E5F6", fields: fields, onto: base, now: Self.now)
        let before = Self.lines(DAVSamples.appleCard), after = Self.lines(patched.serialized())
        #expect(before.filter { !after.contains($0) } == [
            "N:Lovelace;Ada;;;", "FN:Ada Lovelace", "BDAY;X-APPLE-OMIT-YEAR=1604:1604-12-10",
            "item2.X-SOCIALPROFILE;type=facebook;x-user=ada.lovelace:https://www.facebook", " .com/ada.lovelace", "REV:2026-04-12T08:15:02Z",
        ])
        #expect(after.filter { !before.contains($0) } == [
            "N:King;Augusta Ada;;;", "FN:Augusta Ada King", "BDAY;X-APPLE-OMIT-YEAR=1604:1604-12-11",
            "item2.X-SOCIALPROFILE;TYPE=facebook:https://www.facebook.com/augusta.ada", "REV:20270115T080000Z",
        ])
        #expect(try Self.mapping.read(patched).fields == fields)
    }

    @Test("an edit of a vCard 4 keeps version 4's forms: --MMDD, SOCIALPROFILE, a data: URI")
    func patchVersion4() throws {
        let base = try VDocument(parsing: DAVSamples.thunderbirdCard)
        let fields: JSONObject = ["name": "Ada Lovelace", "date": "1604-12-11", "facebook": "ada", "image": .string(HolidayMappingTests.png)]
        let patched = try Self.mapping.write(uid: "0c5e8d1a-2b3f-4a6c-9e7d-8f0a1b2c3d4e", fields: fields, onto: base, now: Self.now)
        let lines = Self.lines(patched.serialized(keepingSources: false))
        #expect(lines.contains("BDAY:--1211"))
        #expect(lines.contains("SOCIALPROFILE;SERVICE-TYPE=Facebook;VALUE=TEXT:ada"))
        #expect(lines.contains { $0.hasPrefix("PHOTO:data:image/png;base64,iVBOR") })
        #expect(lines.contains("EMAIL;PREF=1:ada@example.org"))
        #expect(try Self.mapping.read(patched).fields == fields)
        var dated = fields
        dated["date"] = "1815-12-10"
        let withYear = try Self.mapping.write(uid: "0c5e8d1a-2b3f-4a6c-9e7d-8f0a1b2c3d4e", fields: dated, onto: patched, now: Self.now)
        #expect(Self.lines(withYear.serialized()).contains("BDAY:18151210"))
    }

    @Test("removing gift ideas removes the first NOTE only; removing the photo leaves a linked one")
    func patchRemove() throws {
        let text = Self.card("3.0", "UID:u", "FN:x", "BDAY:2000-01-01", "NOTE:gift", "NOTE:second note",
                             "PHOTO;VALUE=uri:https://example.com/x.jpg", "PHOTO;ENCODING=b;TYPE=GIF:R0lGODlhAQABAAAAACw=")
        let base = try VDocument(parsing: text)
        #expect(try Self.mapping.read(base).fields == ["name": "x", "date": "2000-01-01", "giftIdeas": "gift", "image": "R0lGODlhAQABAAAAACw="])
        let patched = try Self.mapping.write(uid: "u", fields: ["name": "x", "date": "2000-01-01"], onto: base, now: Self.now).serialized()
        #expect(Self.lines(patched).contains("NOTE:second note"))
        #expect(Self.lines(patched).contains("PHOTO;VALUE=uri:https://example.com/x.jpg"))
        #expect(!patched.contains("R0lGOD"))
        // The second NOTE is now the first: the gift ideas as read.
        #expect(try Self.mapping.read(text: patched).fields["giftIdeas"] == "second note")
    }

    @Test("REV, PRODID, another client's TEL, a reordering are not edits; BDAY's form alone is not either")
    func edits() throws {
        let original = try VDocument(parsing: DAVSamples.appleCard)
        var rewritten = original
        rewritten.components[0].replaceLines(named: "REV", with: [ContentLine("REV", value: "20270301T000000Z")])
        rewritten.components[0].replaceLines(named: "PRODID", with: [ContentLine("PRODID", value: "-//Sabre//Sabre VObject 4.5.4//EN")])
        rewritten.components[0].replaceLines(named: "TEL", with: [ContentLine("TEL", value: "+44 20 7946 0000")])
        rewritten.components[0].children.swapAt(2, 3)
        // Another client writing the same year-less day in vCard 3's other form.
        rewritten.components[0].replaceLines(named: "BDAY", with: [ContentLine("BDAY", value: "--12-10")])
        #expect(!Self.mapping.isEdit(from: original, to: rewritten))
        rewritten.components[0].replaceLines(named: "NOTE", with: [ContentLine("NOTE", text: "a new idea")])
        #expect(Self.mapping.isEdit(from: original, to: rewritten))
    }
}
