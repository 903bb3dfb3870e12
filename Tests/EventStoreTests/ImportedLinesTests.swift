import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `import` reads a plain line straight from its bytes and any other through
/// the parser and `EntitySchema.validate`: both must make the same event.
@Suite("Imported lines: the plain way and the general way")
struct ImportedLinesTests {
    private let holiday: EntitySchema

    init() throws {
        holiday = try SchemaRegistry().schema(named: "Holiday")
    }

    /// What the plain way makes of `line`, checked against the general way; nil if it left the line to it.
    private func plainCreation(_ line: String, schema: EntitySchema? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation) -> Event? {
        let schema = schema ?? holiday
        var lines = ImportedLines(schema: schema, at: 1_700_000_000_000, author: "tester")
        let bytes = Array(line.utf8)
        let plain = bytes.withUnsafeBytes { lines.plainCreation($0) }
        let general = bytes.withUnsafeBytes {
            try? Store.importedCreation($0, number: 1, schema: schema, at: 1_700_000_000_000, author: "tester")
        }
        guard var general else {
            #expect(plain == nil, "the plain way took a line the general way refuses: \(line)", sourceLocation: sourceLocation)
            return nil
        }
        general.seq = 1
        guard var plain else { return nil }
        plain.event.eventID = general.eventID
        if (try? JSONParser.parse(line))?.objectValue?["id"] == nil {
            #expect(RecordID.isValid(plain.event.recordID), sourceLocation: sourceLocation)
            plain.event.recordID = general.recordID
        }
        #expect(plain.event == general, "\(line)", sourceLocation: sourceLocation)
        #expect(plain.set == JSONWriter.encodeObject(general.set), "\(line)", sourceLocation: sourceLocation)
        return plain.event
    }

    @Test("a typical line goes the plain way, with its fields stored canonically")
    func typicalLine() throws {
        let line = #"{"id":"3052aa3e-99ac-413f-80ca-eb034c2c4ba2","name":"Victoria Day 2067","date":"2067-12-17","#
            + #""details":"Victoria Day, Saturday.","observedBy":["CN","FR"],"wikipediaLink":"https://en.wikipedia.org/wiki/Victoria_Day"}"#
        let event = try #require(plainCreation(line))
        #expect(event.recordID == "3052aa3e-99ac-413f-80ca-eb034c2c4ba2")
        #expect(event.kind == .created && event.origin == .local && event.author == "tester" && event.seq == 1)
        #expect(event.set["observedBy"] == .array(["CN", "FR"]))
        // Without an id, with white space, keys out of order: still plain, and given a new id.
        #expect(plainCreation(#" { "date" : "2027-01-01", "name" : "New Year" } "#) != nil)
        // Values with escapes or beyond ASCII are built and checked one by one, and still stored as the general way stores them.
        #expect(plainCreation(#"{"name":"Caf\u00e9 \"D\u00e9j\u00e0\" \ud83d\ude00","date":"2027-02-03"}"#)?.set["name"]
                == .string("Café \"Déjà\" 😀"))
        #expect(plainCreation(#"{"name":"東京\t","date":"2027-02-03","observedBy":[]}"#) != nil)
    }

    @Test("lines the plain way leaves to the general way", arguments: [
        #"{"name":"A","date":"2027-02-30"}"#,  // not a date
        #"{"name":"","date":"2027-02-03"}"#,  // too short
        #"{"name":"A"}"#,  // a required field missing
        #"{"name":"A","date":"2027-02-03","colour":"red"}"#,  // not a field
        #"{"name":"A","date":"2027-02-03","wikipediaLink":"not a url"}"#,
        #"{"name":"A","date":"2027-02-03","observedBy":"US"}"#,  // not an array
        #"{"name":"A","date":"2027-02-03","observedBy":["US",1]}"#,
        #"{"name":"A","date":"2027-02-03","image":"aGVsbG8="}"#,  // base64: the general way checks it
        #"{"n\u0061me":"A","date":"2027-02-03"}"#,  // an escaped key
        #"{"name":"A","date":"2027-02-03","id":5}"#,
        #"{"name":"A","date":"2027-02-03","id":"bad id"}"#,
        #"{"name":"A","date":"2027-02-03","id":"a","id":"b"}"#,
        #"{"name":"A","date":"2027-02-03","name":"B"}"#,
        #"{"name":"A","date":"2027-02-03"} x"#,
        #"["name"]"#,
        #"{"id":"only"}"#,
    ])
    func leftToTheGeneralWay(line: String) {
        #expect(plainCreation(line) == nil)
    }

    @Test("lengths are counted in characters, however many bytes they take")
    func lengths() throws {
        let schema = try EntitySchema(json: #"""
            {"title": "Code", "type": "object", "required": ["code"],
             "properties": {"code": {"type": "string", "minLength": 3, "maxLength": 4}, "note": {"maxLength": 2}}}
            """#, source: "code.schema.json")
        for (code, passes) in [("abc", true), ("abcd", true), ("ab", false), ("abcde", false), ("é é", true), ("éééé", true),
                               ("ééééé", false), ("éé", false), ("🇫🇷🇫🇷🇫🇷", true), ("🇫🇷🇫🇷", false), ("e\u{301}e\u{301}e\u{301}", true),
                               ("e\u{301}e\u{301}", false)] {
            let line = JSONWriter.string(.object(["code": .string(code)]))
            #expect((plainCreation(line, schema: schema) != nil) == passes, "\(code)")
        }
        #expect(plainCreation(#"{"code":"abc","note":"éé"}"#, schema: schema) != nil)
        #expect(plainCreation(#"{"code":"abc","note":"ééé"}"#, schema: schema) == nil)
        #expect(plainCreation(#"{"code":"abc","note":7}"#, schema: schema) != nil)
    }

    @Test("the two ways agree on thousands of random lines")
    func randomLines() {
        var random = SplitMix64(seed: 0x1A7E_5EED)
        let names = ["name", "date", "details", "wikipediaLink", "observedBy", "image", "id", "other"]
        func fieldValue(_ name: String) -> JSONValue {
            switch Int.random(in: 0..<8, using: &random) {
            case 0: return RandomJSON.value(depth: 1, using: &random)
            case 1: return .string(RandomJSON.string(using: &random))
            default:
                switch name {
                case "date": return .string(["2027-01-31", "2027-02-29", "1999-12-31", "2027-1-1"].randomElement(using: &random)!)
                case "wikipediaLink": return .string(["https://example.com/a", "mailto:x@y", "x", "http://:80"].randomElement(using: &random)!)
                case "observedBy": return .array([.string("US"), .string(RandomJSON.string(using: &random))])
                case "id": return .string(["a-1", "0", "_a", RecordID.generate()].randomElement(using: &random)!)
                default: return .string(["A", "", "Victoria Day 2067", "tab\there"].randomElement(using: &random)!)
                }
            }
        }
        var plain = 0
        for _ in 0..<5_000 {
            var object: JSONObject = [:]
            for name in names {
                let odds = ["name": 15, "date": 15, "other": 1][name] ?? 8
                if Int.random(in: 0..<16, using: &random) < odds { object[name] = fieldValue(name) }
            }
            let line = Bool.random(using: &random) ? JSONWriter.string(.object(object)) : RandomJSON.messy(.object(object), using: &random)
            if plainCreation(line) != nil { plain += 1 }
        }
        // Enough of them went the plain way for the comparison to mean something.
        #expect(plain > 50)
    }
}
