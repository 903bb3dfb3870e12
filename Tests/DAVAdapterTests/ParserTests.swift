import Foundation
import TestSupport
import Testing
@testable import DAVAdapter

/// Content lines, parameters, components, and input that is not iCalendar or vCard.
@Suite("Content lines")
struct ParserTests {
    static func line(_ text: String) throws -> ContentLine {
        try #require(VDocument(parsing: "BEGIN:X\r\n" + text + "\r\nEND:X\r\n").components.first?.lines.first)
    }

    @Test("name, group, parameters and value")
    func parts() throws {
        let line = try Self.line(#"item1.X-SOCIALPROFILE;type=facebook;x-user=ada:https://www.facebook.com/ada"#)
        #expect(line.group == "item1")
        #expect(line.name == "X-SOCIALPROFILE")
        #expect(line.parameters.map(\.name) == ["type", "x-user"])
        #expect(line.parameter("TYPE") == ["facebook"])
        #expect(line.hasParameter("Type", value: "FACEBOOK"))
        #expect(line.value == "https://www.facebook.com/ada")    // the first unquoted ':' ends the name part
    }

    @Test("quoted parameter values may hold ; : and , and keep their quotes when written")
    func quoted() throws {
        let text = #"ATTENDEE;CN="Jansen, Pieter";DELEGATED-FROM="mailto:a@example.com","mailto:b@example.com";ROLE=CHAIR:mailto:p@example.com"#
        let line = try Self.line(text)
        #expect(line.parameter("CN") == ["Jansen, Pieter"])
        #expect(line.parameter("DELEGATED-FROM") == ["mailto:a@example.com", "mailto:b@example.com"])
        #expect(line.parameters.map { $0.values.map(\.quoted) } == [[true], [true, true], [false]])
        #expect(line.value == "mailto:p@example.com")
        #expect(line.render() == text)
    }

    @Test("several values, an empty value, a bare vCard 2.1 parameter, and the value with ':' and ';' in it")
    func values() throws {
        let line = try Self.line("TEL;TYPE=voice,cell;X-EMPTY=;WORK:tel:+31;ext=2")
        #expect(line.parameter("type") == ["voice", "cell"])
        #expect(line.parameter("X-EMPTY") == [""])
        #expect(line.parameter("WORK") == [])
        #expect(line.value == "tel:+31;ext=2")
        #expect(line.render() == "TEL;TYPE=voice,cell;X-EMPTY=;WORK:tel:+31;ext=2")
    }

    @Test("a parameter made here is quoted when it must be, and loses what it cannot hold")
    func madeParameters() {
        #expect(ContentLineParameter("CN", "Doe, Jane").render() == #"CN="Doe, Jane""#)
        #expect(ContentLineParameter("FMTTYPE", "image/png").render() == "FMTTYPE=image/png")
        #expect(ContentLineParameter("X-A", "say \"hi\"\n").render() == "X-A=say  hi  ")
        #expect(ContentLine("SUMMARY", parameters: [.init("LANGUAGE", "nl")], text: "A; b").render() == "SUMMARY;LANGUAGE=nl:A\\; b")
    }

    @Test("names keep their case, are found ignoring it, and an empty value is a value")
    func names() throws {
        let document = try VDocument(parsing: "begin:vcalendar\r\nversion:2.0\r\nX-Empty:\r\nend:VCALENDAR\r\n")
        let calendar = try #require(document.components(named: "VCALENDAR").first)
        #expect(calendar.name == "vcalendar")
        #expect(calendar.line(named: "VERSION")?.name == "version")
        #expect(calendar.line(named: "x-empty")?.value == "")
        #expect(document.serialized() == "begin:vcalendar\r\nversion:2.0\r\nX-Empty:\r\nend:VCALENDAR\r\n")
    }

    @Test("components nest, and lines and components keep their order")
    func nesting() throws {
        let document = try VDocument(parsing: DAVSamples.googleMeeting)
        let calendar = try #require(document.components.first)
        #expect(calendar.components.map(\.name) == ["VTIMEZONE", "VEVENT"])
        #expect(calendar.components[0].components.map(\.name) == ["DAYLIGHT", "STANDARD"])
        let event = calendar.components[1]
        #expect(event.components.map(\.name) == ["VALARM"])
        #expect(event.lines.prefix(5).map(\.name) == ["DTSTART", "DTEND", "DTSTAMP", "ORGANIZER", "UID"])
        #expect(event.lines(named: "ATTENDEE").map { $0.parameter("CN") } == [["Jansen, Pieter"], ["ada@example.org"]])
        #expect(event.components[0].line(named: "TRIGGER")?.value == "-P0DT0H10M0S")
    }

    @Test("several vCards in one text are several components")
    func severalCards() throws {
        let document = try VDocument(parsing: DAVSamples.googleCard + DAVSamples.thunderbirdCard)
        #expect(document.components.map { $0.line(named: "FN")?.value } == ["Grace Hopper", "Ada Lovelace"])
    }

    @Test("what is not iCalendar or vCard is an error with its line and a reason, never a crash", arguments: [
        ("", nil, "no BEGIN line: not iCalendar or vCard"),
        ("\r\n\r\n", nil, "no BEGIN line: not iCalendar or vCard"),
        ("VERSION:2.0\r\n", 1, "'VERSION' outside any BEGIN/END"),
        ("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nEND:VCALENDAR\r\n", 3, "END:VCALENDAR closes BEGIN:VEVENT (line 2)"),
        ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n", 1, "BEGIN:VCALENDAR is never closed"),
        ("END:VCARD\r\n", 1, "END:VCARD with no BEGIN"),
        ("BEGIN:\r\nEND:\r\n", 1, "BEGIN needs a component name, not ''"),
        ("BEGIN:VCARD\r\nFN Ada\r\nEND:VCARD\r\n", 2, "' Ada' where ':' and the value of FN should be"),
        ("BEGIN:VCARD\r\nFN\r\nEND:VCARD\r\n", 2, "FN has no ':' and no value"),
        ("BEGIN:VCARD\r\n:Ada\r\nEND:VCARD\r\n", 2, "no property name before ':Ada'"),
        ("BEGIN:VCARD\r\nFN;:Ada\r\nEND:VCARD\r\n", 2, "an empty parameter name in FN"),
        ("BEGIN:VCARD\r\nFN;X=\"Ada:x\r\nEND:VCARD\r\n", 2, "parameter X of FN opens a quote it never closes"),
        ("BEGIN:VCARD\r\nFN;X=a\"b:x\r\nEND:VCARD\r\n", 2, "a '\"' inside the unquoted parameter X of FN"),
        (" FN:Ada\r\n", 1, "a folded continuation with no line before it"),
        ("BEGIN:VCARD\r\nFN:A\u{01}da\r\nEND:VCARD\r\n", 2, "control character 0x1 in the line"),
        ("BEGIN:VCARD\r\nFN:A\rda\r\nEND:VCARD\r\n", 2, "control character 0xD in the line"),
        ("BEGIN:VCARD\r\nFN:Ada\u{7F}\r\nEND:VCARD\r\n", 2, "control character 0x7F in the line"),
        ("BEGIN:VCARD\r\nFN.:Ada\r\nEND:VCARD\r\n", 2, "no property name before ':Ada'"),
    ] as [(String, Int?, String)])
    func malformed(text: String, line: Int?, reason: String) {
        #expect(throws: VCodecError(line: line, reason)) { try VDocument(parsing: text) }
    }

    @Test("bytes that are not UTF-8 are an error")
    func notUTF8() {
        let bytes = Array("BEGIN:VCARD\r\nFN:".utf8) + [0xFF, 0xFE] + Array("\r\nEND:VCARD\r\n".utf8)
        #expect(throws: VCodecError(line: 2, "not UTF-8 text")) { try VDocument(parsing: bytes) }
    }

    @Test("nesting deeper than the bound is refused, not recursed into")
    func tooDeep() {
        let depth = VDocument.maxDepth + 1
        let text = (0..<depth).map { "BEGIN:X\($0)\r\n" }.joined() + (0..<depth).reversed().map { "END:X\($0)\r\n" }.joined()
        #expect(throws: VCodecError(line: depth, "components nest deeper than \(VDocument.maxDepth)")) { try VDocument(parsing: text) }
        let fits = (0..<(depth - 1)).map { "BEGIN:X\($0)\r\n" }.joined() + (0..<(depth - 1)).reversed().map { "END:X\($0)\r\n" }.joined()
        #expect((try? VDocument(parsing: fits)) != nil)
    }

    @Test("a UTF-8 byte order mark and blank lines are forgiven; the description names the line")
    func forgiven() throws {
        let document = try VDocument(parsing: [0xEF, 0xBB, 0xBF] + Array("BEGIN:VCARD\r\n\r\nFN:Ada\r\nEND:VCARD".utf8))
        #expect(document.serialized() == "BEGIN:VCARD\r\nFN:Ada\r\nEND:VCARD\r\n")
        #expect(VCodecError(line: 3, "FN has no ':' and no value").description == "line 3: FN has no ':' and no value")
    }

    @Test("mangled samples (seeded: bytes dropped, repeated, replaced) give a document or an error, never a crash")
    func mangled() {
        var random = SplitMix(seed: 5545)
        let samples = DAVSamples.all.map { Array($0.1.utf8) }
        let nasty: [UInt8] = [0x0A, 0x0D, 0x20, 0x3A, 0x3B, 0x2C, 0x22, 0x3D, 0x5C, 0xC3, 0xFF, 0x00, 0x09]
        var parsed = 0
        for round in 0..<3000 {
            var bytes = samples[round % samples.count]
            for _ in 0..<(1 + Int(random.next() % 6)) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + Int(random.next() % 40))], at: at)
                default: bytes[at] = nasty[Int(random.next() % UInt64(nasty.count))]
                }
            }
            if let document = try? VDocument(parsing: bytes) {
                parsed += 1
                // What was read is written and read again to the same lines.
                #expect((try? VDocument(parsing: document.serialized())) == document)
            }
        }
        #expect(parsed > 0)
    }
}
