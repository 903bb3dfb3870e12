import Foundation
import Testing
@testable import EventSync

@Suite("JSON parser and writer")
struct JSONTests {
    // MARK: Parsing valid documents

    @Test("parses every kind of value", arguments: [
        ("null", JSONValue.null),
        ("true", .bool(true)),
        ("false", .bool(false)),
        ("0", .number(0)),
        ("-0", .number(0)),
        ("42", .number(42)),
        ("-17", .number(-17)),
        ("3.25", .number(3.25)),
        ("-0.5", .number(-0.5)),
        ("1e3", .number(1000)),
        ("1E+3", .number(1000)),
        ("-2.5e-3", .number(-0.0025)),
        ("123456789012345", .number(123_456_789_012_345)),
        ("-123456789012345", .number(-123_456_789_012_345)),
        ("9007199254740992", .number(9_007_199_254_740_992)),
        ("12345678901234567890", .number(12_345_678_901_234_567_890.0)),
        ("1.7976931348623157e308", .number(1.7976931348623157e308)),
        ("5e-324", .number(Double.leastNonzeroMagnitude)),
        ("\"\"", .string("")),
        ("\"plain\"", .string("plain")),
        ("[]", .array([])),
        ("{}", .object([:])),
        (" \t\r\n[1 , \"a\" ,null,{ \"k\" : [ ] }] \n", .array([1, "a", .null, .object(["k": .array([])])])),
    ])
    func parsesValues(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test("decodes every escape")
    func escapes() throws {
        let text = #""\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC\u0000""#
        #expect(try JSONParser.parse(text) == .string("\"\\/\u{8}\u{C}\n\r\tA\u{E9}\u{20AC}\u{0}"))
        // Escapes in keys, and text around escapes.
        #expect(try JSONParser.parse(#"{"a\nb":"x\ty\"z"}"#) == .object(["a\nb": "x\ty\"z"]))
    }

    @Test("decodes surrogate pairs and raw UTF-8")
    func unicode() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""\uD834\uDD1E clef""#) == .string("𝄞 clef"))
        #expect(try JSONParser.parse("\"😀 Zürich 東京\"") == .string("😀 Zürich 東京"))
        #expect(try JSONParser.parse("\"a\\u00e9😀\\n\"") == .string("aé😀\n"))
    }

    @Test("parses nested documents")
    func nested() throws {
        let text = #"{"a":{"b":[1,[2,[3,{"c":null}]]],"d":true},"e":[{"f":"g"}]}"#
        let expected: JSONValue = ["a": ["b": [1, [2, [3, ["c": nil]]]], "d": true], "e": [["f": "g"]]]
        #expect(try JSONParser.parse(text) == expected)
        let deepest = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        #expect(throws: Never.self) { try JSONParser.parse(deepest) }
    }

    @Test("parses from bytes and from a raw buffer alike")
    func parsesBytes() throws {
        let bytes = Array(#"{"name":"Noël","n":[1,2.5]}"#.utf8)
        let fromArray = try JSONParser.parse(bytes)
        let fromBuffer = try bytes.withUnsafeBytes { try JSONParser.parse($0) }
        #expect(fromArray == fromBuffer)
        #expect(fromArray == ["name": "Noël", "n": [1, 2.5]])
    }

    // MARK: Rejecting invalid documents

    @Test("rejects invalid documents", arguments: [
        "",
        "   ",
        "nul",
        "tru",
        "truex",
        "True",
        "NaN",
        "Infinity",
        "-Infinity",
        "'single'",
        "1 2",
        "[1] x",
        "{} {}",
        "01",
        "-",
        "+1",
        ".5",
        "1.",
        "1.e3",
        "1e",
        "1e+",
        "0x10",
        "1e309",
        "-1e309",
        "[1,]",
        "[1 2]",
        "[,1]",
        "[1",
        "[",
        "]",
        "{",
        "{\"a\"}",
        "{\"a\" 1}",
        "{\"a\":1,}",
        "{\"a\":1 \"b\":2}",
        "{1:2}",
        "{a:1}",
        "\"abc",
        "\"abc\\",
        "\"\\x\"",
        "\"\\U0041\"",
        "\"\\u12\"",
        "\"\\u12G4\"",
        "\"\\ud800\"",
        "\"\\ud800x\"",
        "\"\\ud800\\u0041\"",
        "\"\\udc00\"",
        "\"a\u{01}b\"",
        "\"tab\there\"",
        "\"new\nline\"",
        "\"escape \\n then raw \u{1F}\"",
    ])
    func rejectsInvalid(text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test("rejects invalid UTF-8 in strings", arguments: [
        [0x22, 0xFF, 0x22],
        [0x22, 0xC0, 0xAF, 0x22],              // overlong '/'
        [0x22, 0xED, 0xA0, 0x80, 0x22],        // an encoded surrogate
        [0x22, 0xE2, 0x82, 0x22],              // truncated sequence
        [0x22, 0x5C, 0x6E, 0xFF, 0x22],        // after an escape (the slow path)
    ] as [[UInt8]])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(bytes) }
    }

    @Test("limits nesting depth")
    func depthLimit() {
        let arrays = String(repeating: "[", count: 257) + String(repeating: "]", count: 257)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(arrays) }
        let objects = String(repeating: "{\"a\":", count: 257) + "1" + String(repeating: "}", count: 257)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(objects) }
        // Hostile depth fails cleanly instead of exhausting the stack.
        let hostile = String(repeating: "[", count: 1_000_000)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(hostile) }
    }

    @Test("reports where the error is", arguments: [
        ("[1,]", 3),
        ("1 x", 2),
        ("{\"a\" 1}", 5),
        ("\"ab\\q\"", 5),
    ])
    func errorOffsets(text: String, offset: Int) throws {
        let error = try #require(throws: JSONParseError.self) { try JSONParser.parse(text) }
        #expect(error.offset == offset)
        #expect(error.description.contains("byte \(offset)"))
    }

    // MARK: Writing

    @Test("writes compact JSON with sorted keys")
    func canonicalForm() throws {
        let value = try JSONParser.parse(#" { "b" : 1 , "a" : [ true , false , null ] , "c" : { "z" : "" , "y" : -2.5 } } "#)
        #expect(JSONWriter.string(value) == #"{"a":[true,false,null],"b":1,"c":{"y":-2.5,"z":""}}"#)
        // Equal values encode to equal bytes, whatever the insertion order.
        var left: JSONObject = [:]
        var right: JSONObject = [:]
        for key in (0..<50).map({ "k\($0)" }) { left[key] = .number(1) }
        for key in (0..<50).map({ "k\($0)" }).reversed() { right[key] = .number(1) }
        #expect(JSONWriter.encodeObject(left) == JSONWriter.encodeObject(right))
    }

    @Test("escapes what JSON requires and nothing else")
    func writesEscapes() throws {
        let value = JSONValue.string("quote\" backslash\\ slash/ nl\n cr\r tab\t bell\u{7} nul\u{0} us\u{1F} del\u{7F} é 😀")
        let text = JSONWriter.string(value)
        #expect(text == "\"quote\\\" backslash\\\\ slash/ nl\\n cr\\r tab\\t bell\\u0007 nul\\u0000 us\\u001f del\u{7F} é 😀\"")
        #expect(try JSONParser.parse(text) == value)
    }

    @Test("writes numbers", arguments: [
        (JSONValue.number(0), "0"),
        (.number(-0.0), "0"),
        (.number(7), "7"),
        (.number(-7), "-7"),
        (.number(1.5), "1.5"),
        (.number(-0.001), "-0.001"),
        (.number(999_999_999_999_999), "999999999999999"),
        (.number(-999_999_999_999_999), "-999999999999999"),
    ])
    func writesNumbers(value: JSONValue, text: String) throws {
        #expect(JSONWriter.string(value) == text)
        #expect(try JSONParser.parse(text) == value)
    }

    @Test("large, tiny and exponent numbers survive a round trip", arguments: [
        1e15, -1e15, 1e20, 1.5e300, -1.7976931348623157e308, 2.2250738585072014e-308, Double.leastNonzeroMagnitude, 1e-7,
        9_007_199_254_740_992, 0.1, 1.0 / 3.0, 123_456_789.123_456_79,
    ])
    func numberRoundTrip(number: Double) throws {
        let text = JSONWriter.string(.number(number))
        #expect(try JSONParser.parse(text) == .number(number), "written as \(text)")
    }

    @Test("random doubles survive a round trip")
    func randomDoubles() throws {
        var random = SplitMix64(seed: 0xD0_0B1E)
        for _ in 0..<5_000 {
            let candidates = [
                Double(bitPattern: random.next()),
                Double(Int64.random(in: -(1 << 53)...(1 << 53), using: &random)),
                Double.random(in: -1e6...1e6, using: &random),
            ]
            for number in candidates where number.isFinite {
                let text = JSONWriter.string(.number(number))
                let parsed = try JSONParser.parse(text)
                #expect(parsed == .number(number), "\(number) written as \(text)")
            }
        }
    }

    @Test("random documents survive a round trip and encode canonically")
    func randomDocuments() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<500 {
            let value = Self.randomValue(depth: 0, using: &random)
            let bytes = JSONWriter.encode(value)
            let parsed = try JSONParser.parse(bytes)
            #expect(parsed == value)
            #expect(JSONWriter.encode(parsed) == bytes)
        }
    }

    // MARK: Re-encoding without building (a pull's records)

    @Test("a Kinto page's fields come out as the writer writes them", arguments: [
        #"{"b": 1, "a" : [1, 2.50, -0, 1e2, 1E-2, 0.0], "c":{"z":null,"y":true}}"#,
        #"{"n":123456789012345,"m":1234567890123456,"o":-123456789012345,"p":9007199254740993}"#,
        #"{"s":"caf\u00e9 \/ \"q\" \ud83d\ude00","t":"tab\there","u":"δ raw"}"#,
        #"{"a":1,"a":2,"b":{"k":1,"k":[3]}}"#,
        #"{"\u0061b":1,"aa":2}"#,
        #"{"é":1,"e":2,"f":{"ü":[]}}"#,
        #"{"x":{}, "y":[], "z":[[],[{}]]}"#,
    ])
    func canonicalFields(fields: String) throws {
        let body = Array(#"{"data":[{"id":"r1","last_modified":7,"#.utf8) + Array(fields.utf8.dropFirst()) + Array("]}".utf8)
        let page = try KintoRemote.page(from: body, collection: "things")
        let entry = try #require(page.entries.first)
        let expected = try JSONParser.parse(fields)
        #expect(page.id(of: entry) == "r1")
        #expect(entry.version == 7)
        #expect(try page.record(entry).fields == expected.objectValue)
        #expect(Array(page.bytes[try #require(entry.fields)]) == JSONWriter.encode(expected))
    }

    @Test("random records, written every way JSON allows, re-encode as the writer writes them")
    func randomCanonicalRecords() throws {
        var random = SplitMix64(seed: 7)
        var records: [String] = []
        var expected: [JSONObject] = []
        for index in 0..<300 {
            // Field names as schemas have them, and (one record in four) any string at all.
            let oddNames = Int.random(in: 0..<4, using: &random) == 0
            var fields: JSONObject = [:]
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let name = oddNames ? Self.randomString(using: &random)
                    : ["name", "date", "details", "a", "b", "Z", "x_1", "observedBy"][Int.random(in: 0..<8, using: &random)]
                fields[name] = Self.randomValue(depth: 2, using: &random)
            }
            for reserved in ["id", "last_modified", "deleted", "schema"] { fields[reserved] = nil }
            // Half the records with keys as the writer writes them, which a pull copies.
            let plainKeys = Bool.random(using: &random)
            func key(_ name: String) -> String {
                plainKeys ? JSONWriter.string(.string(name)) : Self.messy(.string(name), using: &random)
            }
            var members = fields.map { "\(key($0.key)):\(Self.messy($0.value, using: &random))" }
            members.shuffle(using: &random)
            if let first = fields.keys.first, Bool.random(using: &random) {
                // A key given twice: the last one counts.
                members.insert("\(key(first)):\"overridden\"", at: 0)
            }
            members.insert(#""id":"r\#(index)""#, at: Int.random(in: 0...members.count, using: &random))
            members.insert(#""last_modified":\#(index)"#, at: Int.random(in: 0...members.count, using: &random))
            records.append("{ " + members.joined(separator: " ,\n") + " }")
            expected.append(fields)
        }
        let body = Array(#"{"data": ["#.utf8) + Array(records.joined(separator: ",").utf8) + Array(#"], "x": 1}"#.utf8)
        let page = try KintoRemote.page(from: body, collection: "things")
        #expect(page.entries.count == expected.count)
        for (entry, fields) in zip(page.entries, expected) {
            #expect(Array(page.bytes[try #require(entry.fields)]) == JSONWriter.encodeObject(fields), "\(page.id(of: entry))")
        }
    }

    @Test("a page's tombstones, bad records and bad JSON")
    func pageEdges() throws {
        let page = try KintoRemote.page(from: Array(#"{"data":[{"deleted":true,"id":"gone","last_modified":9}]}"#.utf8), collection: "c")
        #expect(page.entries.count == 1 && page.entries[0].fields == nil && page.id(of: page.entries[0]) == "gone")
        for (body, message) in [
            (#"{"data":[{"last_modified":9,"a":1}]}"#, "record without id or last_modified"),
            (#"{"data":[{"id":"bad id!","last_modified":9}]}"#, "record without id or last_modified"),
            (#"{"items":[]}"#, "has no data array"),
            (#"{"data":[{"id":"a","last_modified":9,"b":01}]}"#, "invalid JSON"),
            ("{\"data\":[{\"id\":\"a\",\"last_modified\":9,\"b\":\"\u{01}\"}]}", "invalid JSON"),
            ("{\"data\":[{\"id\":\"a\",\"last_modified\":9,\"\u{01}\":1}]}", "invalid JSON"),
        ] {
            #expect {
                try KintoRemote.page(from: Array(body.utf8), collection: "c")
            } throws: { error in
                (error as? SyncError)?.message.contains(message) == true
            }
        }
    }

    /// `value` as JSON text written any valid way: white space, escapes where
    /// none are needed, numbers with fractions and exponents.
    static func messy(_ value: JSONValue, using random: inout SplitMix64) -> String {
        let spaces = ["", " ", "\n  ", "\t"]
        func space() -> String { spaces[Int.random(in: 0..<spaces.count, using: &random)] }
        switch value {
        case .null, .bool: return JSONWriter.string(value)
        case .number(let number):
            guard number.rounded() == number, abs(number) < 1e15 else { return "\(number)" }
            let whole = Int64(number)
            let forms = ["\(whole)", "\(whole).0", "\(whole)e0", "\(whole)00E-2", whole == 0 ? "-0" : "\(whole)"]
            return forms[Int.random(in: 0..<forms.count, using: &random)]
        case .string(let string):
            var text = "\""
            for scalar in string.unicodeScalars {
                let mustEscape = scalar.value < 0x20 || scalar == "\"" || scalar == "\\"
                if !mustEscape, Bool.random(using: &random) {
                    text.unicodeScalars.append(scalar)
                } else if scalar == "/" {
                    text += "\\/"
                } else {
                    for unit in String(scalar).utf16 { text += "\\u" + String(format: "%04X", unit) }
                }
            }
            return text + "\""
        case .array(let elements):
            return "[" + space() + elements.map { messy($0, using: &random) }.joined(separator: space() + "," + space()) + space() + "]"
        case .object(let members):
            let texts = members.map { messy(.string($0.key), using: &random) + space() + ":" + space() + messy($0.value, using: &random) }
            return "{" + space() + texts.joined(separator: "," + space()) + space() + "}"
        }
    }

    /// A random JSON value, with strings drawn from ASCII, escapes, control
    /// characters, accented letters and astral characters.
    static func randomValue(depth: Int, using random: inout SplitMix64) -> JSONValue {
        let choice = Int.random(in: 0..<(depth >= 4 ? 5 : 7), using: &random)
        switch choice {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .number(Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / [1, 10, 1000][Int.random(in: 0..<3, using: &random)])
        case 3, 4: return .string(randomString(using: &random))
        case 5:
            return .array((0..<Int.random(in: 0...5, using: &random)).map { _ in randomValue(depth: depth + 1, using: &random) })
        default:
            var object: JSONObject = [:]
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                object[randomString(using: &random)] = randomValue(depth: depth + 1, using: &random)
            }
            return .object(object)
        }
    }

    static func randomString(using random: inout SplitMix64) -> String {
        let pools: [[Unicode.Scalar]] = [
            Array("abcXYZ019 _-".unicodeScalars),
            ["\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{8}", "\u{C}", "\u{1F}", "\u{7F}"],
            ["é", "ß", "Ω", "東", "€", "\u{FEFF}", "\u{FFFD}"],
            ["😀", "𝄞", "\u{10FFFF}", "\u{1F1EB}"],
        ]
        var scalars = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &random) {
            let pool = pools[Int.random(in: 0..<pools.count, using: &random)]
            scalars.append(pool[Int.random(in: 0..<pool.count, using: &random)])
        }
        return String(scalars)
    }

    // MARK: Accessors

    @Test("typed accessors")
    func accessors() {
        #expect(JSONValue.number(3).int64Value == 3)
        #expect(JSONValue.number(3.5).int64Value == nil)
        #expect(JSONValue.number(1e300).int64Value == nil)
        #expect(JSONValue.string("x").stringValue == "x")
        #expect(JSONValue.number(1).stringValue == nil)
        #expect(JSONValue.array([1]).arrayValue == [1])
        #expect(JSONValue.object(["a": 1]).objectValue == ["a": 1])
        #expect(JSONValue.bool(true).boolValue == true)
        #expect(JSONValue.null.typeName == "null")
        #expect(JSONValue.object([:]).typeName == "object")
    }
}
