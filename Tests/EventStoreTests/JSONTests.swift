import Foundation
import Testing
@testable import EventStore
import TestSupport

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
        ("1e3", .number(1000.0)),
        ("1E+3", .number(1000.0)),
        ("-2.5e-3", .number(-0.0025)),
        ("123456789012345", .number(123_456_789_012_345)),
        ("-123456789012345", .number(-123_456_789_012_345)),
        ("9007199254740992", .number(9_007_199_254_740_992)),
        ("1.7976931348623157e308", .number(1.7976931348623157e308)),
        ("5e-324", .number(JSONNumber("5e-324")!)),
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
        let deepest = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
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
        "1e1234567890",
        "-1e-0001234567890",
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

    @Test("a string's end, escape, control character or non-ASCII byte is found wherever it falls in an eight-byte word")
    func stringRunsAtEveryOffset() throws {
        for length in 0..<20 {
            for position in 0...length {
                let before = String(repeating: "a", count: position), after = String(repeating: "b", count: length - position)
                #expect(try JSONParser.parse("\"\(before)\(after)\"") == .string(before + after))
                #expect(try JSONParser.parse("\"\(before)\\\"\(after)\"") == .string(before + "\"" + after))
                #expect(try JSONParser.parse("\"\(before)é\(after)\"") == .string(before + "é" + after))
                let control = try #require(throws: JSONParseError.self) { try JSONParser.parse("\"\(before)\u{1F}\(after)\"") }
                #expect(control.offset == 1 + position)
                #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22] + Array(before.utf8) + [0xFF] + Array(after.utf8) + [0x22]) }
                // Passing over a string with an escaped quote stops after its closing quote, not at the escaped one.
                let escaped = Array("\"\(before)\\\"\(after)\" ".utf8)
                let end = escaped.withUnsafeBytes { buffer in
                    var parser = JSONParser(bytes: buffer)
                    return (try? parser.skipValue(startingAt: 0)).map { _ in parser.offset }
                }
                #expect(end == escaped.count - 1)
            }
        }
    }

    @Test("a key given twice is an error, reported where the second one is; skipValue passes over it")
    func duplicateKeys() throws {
        for (text, offset) in [(#"{"a":1,"a":2}"#, 7), (#"[{"b":{"k":1, "k":[3]}}]"#, 14), (#"{"é":1,"e\u0301":2}"#, 8)] {
            let error = try #require(throws: JSONParseError.self) { try JSONParser.parse(text) }
            #expect(error.offset == offset && error.reason.hasPrefix("duplicate key"), "\(text): \(error)")
        }
        // A reader that refuses one element can rewind and skip it, then go on with the next.
        let bytes = Array(#"{"list":[{"a":1,"a":2},{"b":[3]}]}"#.utf8)
        var read: [JSONValue] = []
        var skipped = 0
        try bytes.withUnsafeBytes { buffer in
            try JSONParser.parseObject(buffer) { _, parser in
                try parser.forEachElement { parser in
                    let start = parser.offset
                    do {
                        read.append(try parser.value())
                    } catch let error as JSONParseError where error.isDuplicateKey {
                        try parser.skipValue(startingAt: start)
                        skipped += 1
                    }
                }
            }
        }
        #expect(read == [["b": [3]]] && skipped == 1)
    }

    @Test("limits nesting depth")
    func depthLimit() {
        let over = JSONParser.maxDepth + 1
        let arrays = String(repeating: "[", count: over) + String(repeating: "]", count: over)
        #expect(throws: JSONParseError.self) { try JSONParser.parse(arrays) }
        let objects = String(repeating: "{\"a\":", count: over) + "1" + String(repeating: "}", count: over)
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

    @Test("numbers keep their literal, through parsing, writing and re-encoding", arguments: [
        "0", "-0", "7", "-7", "1.5", "-0.001", "1.0", "1.50", "100.00", "1e3", "1E+3", "-2.5E-03", "0.0", "-0.0",
        "9007199254740993", "-9007199254740993", "12345678901234567891", "1733011200123456",
        "123456789012345678901234567890123456789012345678901234567890",
        "0.1000000000000000000000000000000000000001", "3.14159265358979323846264338327950288419716939937510",
        "1.2345678901234567891e19", "1e400", "-1e-400", "1e0000000000001",
    ])
    func numberLiterals(text: String) throws {
        let parsed = try JSONParser.parse(text)
        #expect(parsed.numberValue?.text == text)
        #expect(JSONWriter.string(parsed) == text)
        #expect(JSONWriter.string(["n": parsed, "a": [parsed]]) == #"{"a":[\#(text)],"n":\#(text)}"#)
        // A pull's re-encoding without building copies it too.
        let record = Array(#"{"n":\#(text),"a":[\#(text)]}"#.utf8)
        var writer = JSONWriter()
        try record.withUnsafeBytes { buffer in
            try JSONParser.parseObject(buffer) { _, parser in try parser.writeCanonical(to: &writer) }
        }
        #expect(String(decoding: writer.bytes, as: UTF8.self) == text + "[" + text + "]")
    }

    @Test("numbers are equal when of the same kind and the same exact value", arguments: [
        ("1", "1", true), ("0", "-0", true), ("1.0", "1.00", true), ("1.0", "1e0", true), ("1e3", "1000.0", true),
        ("0.0", "-0.0", true), ("1.5", "15e-1", true), ("100", "1e2", false), ("1", "1.0", false),
        ("9007199254740993", "9007199254740992", false), ("12345678901234567891", "12345678901234567890", false),
        ("0.1000000000000000000000000001", "0.1", false), ("1e400", "1e401", false), ("1e400", "10e399", true),
    ])
    func numberEquality(a: String, b: String, equal: Bool) throws {
        let (x, y) = (try #require(JSONNumber(a)), try #require(JSONNumber(b)))
        #expect((x == y) == equal)
        if equal { #expect(x.hashValue == y.hashValue) }
        #expect((JSONValue.number(x) == .number(y)) == equal)
    }

    @Test("numbers order by exact value, however long")
    func numberOrder() throws {
        let ordered = ["-1e400", "-12345678901234567892", "-12345678901234567891", "-1", "-0.5", "0", "1e-400",
                       "0.1", "0.10000000000000000000001", "1", "1.5", "9007199254740992", "9007199254740993", "1e400"]
        let numbers = try ordered.map { try #require(JSONNumber($0)) }
        for (a, b) in zip(numbers, numbers.dropFirst()) {
            #expect(a < b, "\(a) < \(b)")
            #expect(!(b < a), "not \(b) < \(a)")
        }
        #expect(!(JSONNumber(1) < JSONNumber(1.0)) && !(JSONNumber(1.0) < JSONNumber(1)))
    }

    @Test("a number literal is checked against JSON's grammar")
    func numberGrammar() {
        for bad in ["", "-", "01", "1.", ".5", "+1", "1e", "1e+", "0x1", "1 ", " 1", "NaN", "inf", "1e1234567890"] {
            #expect(JSONNumber(bad) == nil, "\(bad)")
        }
        #expect(JSONNumber("1e000000000000000000001")?.doubleValue == 10)
    }

    @Test("random documents survive a round trip and encode canonically")
    func randomDocuments() throws {
        var random = SplitMix64(seed: 42)
        for _ in 0..<500 {
            let value = RandomJSON.value(depth: 0, using: &random)
            let bytes = JSONWriter.encode(value)
            let parsed = try JSONParser.parse(bytes)
            #expect(parsed == value)
            #expect(JSONWriter.encode(parsed) == bytes)
        }
    }

    // MARK: Accessors

    @Test("typed accessors")
    func accessors() {
        #expect(JSONValue.number(3).int64Value == 3)
        #expect(JSONValue.number(3.0).int64Value == 3)
        #expect(JSONNumber("3e2")?.int64Value == 300)
        #expect(JSONNumber("-0.0")?.int64Value == 0)
        #expect(JSONNumber("9223372036854775807")?.int64Value == .max)
        #expect(JSONNumber("9223372036854775808")?.int64Value == nil)
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
