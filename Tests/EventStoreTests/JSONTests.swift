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
