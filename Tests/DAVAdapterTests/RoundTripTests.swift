import Foundation
import TestSupport
import Testing
@testable import DAVAdapter

/// Items from other clients, read and written again, and patched: what evsync does not own stays as it was.
@Suite("Round trip")
struct RoundTripTests {
    @Test("another client's item read and written again is the same bytes", arguments: DAVSamples.all.map(\.0))
    func byteIdentical(sample: String) throws {
        let text = try #require(DAVSamples.all.first { $0.0 == sample }?.1)
        #expect(try VDocument(parsing: text).serialized() == text)
    }

    @Test("canonical text (CRLF, folded at 75 octets) is rebuilt byte for byte from what was read, not only copied",
          arguments: DAVSamples.all.map(\.0))
    func canonical(sample: String) throws {
        let text = try #require(DAVSamples.all.first { $0.0 == sample }?.1)
        let canonical = try VDocument(parsing: text).serialized(keepingSources: false)
        #expect(canonical.components(separatedBy: "\r\n").allSatisfy { $0.utf8.count <= 75 })
        let read = try VDocument(parsing: canonical)
        #expect(read.serialized() == canonical)
        #expect(read.serialized(keepingSources: false) == canonical)
        #expect(read == (try VDocument(parsing: text)))
    }

    @Test("a record whose fields did not change gives back the server's item, byte for byte", arguments: [
        "Apple holiday", "Google yearly", "Thunderbird holiday", "Nextcloud holiday", "Apple card", "Nextcloud card", "Thunderbird card",
    ])
    func unchangedRecordIsUntouched(sample: String) throws {
        let text = try #require(DAVSamples.all.first { $0.0 == sample }?.1)
        let mapping: any DAVMapping = sample.hasSuffix("card") ? BirthdayMapping() : HolidayMapping()
        let base = try VDocument(parsing: text)
        let read = try mapping.read(base)
        #expect(try mapping.write(uid: read.uid, fields: read.fields, onto: base, now: HolidayMappingTests.now).serialized() == text)
    }

    @Test("bare LF line ends are read, and written back with CRLF, folds kept")
    func bareLF() throws {
        let lf = DAVSamples.googleYearly.replacingOccurrences(of: "\r\n", with: "\n")
        #expect(try VDocument(parsing: lf).serialized() == DAVSamples.googleYearly)
    }

    /// The lines of a text, to compare two texts line by line.
    static func lines(_ text: String) -> [String] {
        text.components(separatedBy: "\r\n")
    }

    @Test("a patch replaces only the lines of the properties it names; every other line stays, in its place")
    func patchKeepsForeignLines() throws {
        var document = try VDocument(parsing: DAVSamples.appleHoliday)
        let calendar = try #require(document.components.first)
        var event = try #require(calendar.components(named: "VEVENT").first)
        event.replaceLines(named: "SUMMARY", with: [ContentLine("SUMMARY", text: "Liberation Day; NL")])
        event.replaceLines(named: "DESCRIPTION", with: [ContentLine("DESCRIPTION", text: "Added")])
        event.removeLines(named: "X-APPLE-TRAVEL-ADVISORY-BEHAVIOR")
        document.components[0].updateComponents(named: "VEVENT") { $0 = event }
        let before = Self.lines(DAVSamples.appleHoliday)
        let after = Self.lines(document.serialized())
        #expect(after.filter { !before.contains($0) } == ["SUMMARY:Liberation Day\\; NL", "DESCRIPTION:Added"])
        #expect(before.filter { !after.contains($0) } == ["SUMMARY:Bevrijdingsdag", "X-APPLE-TRAVEL-ADVISORY-BEHAVIOR:AUTOMATIC"])
        // The new DESCRIPTION goes after the event's last line, before its VALARM (whose DESCRIPTION is untouched).
        let added = try #require(after.firstIndex(of: "DESCRIPTION:Added"))
        #expect(after[added - 1] == "UID:6A1F3C2E-8B9D-4E0F-A1B2-C3D4E5F60718")
        #expect(after[added + 1] == "BEGIN:VALARM")
        #expect(after.contains("DESCRIPTION:Reminder"))
        // SUMMARY kept its place.
        #expect(after.firstIndex(of: "SUMMARY:Liberation Day\\; NL") == before.firstIndex(of: "SUMMARY:Bevrijdingsdag"))
    }

    @Test("replacing lines with equal lines changes no byte, folds included")
    func equalReplacementKeepsSource() throws {
        var document = try VDocument(parsing: DAVSamples.googleYearly)
        try document.components[0].updateComponents(named: "VEVENT") { event in
            let description = try #require(event.line(named: "DESCRIPTION"))
            event.replaceLines(named: "DESCRIPTION", with: [ContentLine("DESCRIPTION", text: description.textValue)])
        }
        #expect(document.serialized() == DAVSamples.googleYearly)
    }

    @Test("several lines of one property: replaced at the first one's place; replaceFirstLine touches one only")
    func severalLines() throws {
        var card = try #require(VDocument(parsing: DAVSamples.googleCard).components.first)
        card.replaceLines(named: "EMAIL", with: [ContentLine("EMAIL", value: "one@example.com")])
        #expect(card.lines.map(\.name) == ["VERSION", "FN", "N", "EMAIL", "X-ABLabel", "TEL", "BDAY", "CATEGORIES"])
        card.replaceFirstLine(where: { $0.isNamed("X-ABLabel") }, with: nil)
        card.replaceFirstLine(where: { $0.isNamed("NOTE") }, with: ContentLine("NOTE", text: "new"))
        #expect(card.lines.map(\.name) == ["VERSION", "FN", "N", "EMAIL", "TEL", "BDAY", "CATEGORIES", "NOTE"])
    }

    @Test("a line made here is folded canonically; the lines read beside it keep their folds")
    func mixedFolds() throws {
        var document = try VDocument(parsing: DAVSamples.nextcloudHoliday)
        let long = String(repeating: "Fête nationale — ", count: 8)
        document.components[0].updateComponents(named: "VEVENT") { $0.replaceLines(named: "SUMMARY", with: [ContentLine("SUMMARY", text: long)]) }
        let text = document.serialized()
        #expect(text.contains("DESCRIPTION:日本の国民の祝日の一つ。建国をしのび、国を愛する心を養う日\r\n 。\r\n"))   // 99 octets, as read
        let summary = Self.lines(text).drop { !$0.hasPrefix("SUMMARY:") }.prefix { $0.hasPrefix("SUMMARY:") || $0.hasPrefix(" ") }
        #expect(summary.count > 1)
        #expect(summary.allSatisfy { $0.utf8.count <= 75 })
        #expect(try VDocument(parsing: text).components[0].components[0].line(named: "SUMMARY")?.textValue == long)
    }
}
