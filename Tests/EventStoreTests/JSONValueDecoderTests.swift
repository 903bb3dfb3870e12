import Foundation
import Testing
@testable import EventStore

private struct Inner: Codable, Equatable {
    var label: String
    var tags: [String]
    var weights: [String: Double]
}

private enum Kind: String, Codable { case public_, bank }

/// A type using most of what `Codable` offers: nesting, optionals, arrays of objects, dictionaries,
/// raw-value enums, and the types Foundation's coders treat their own way.
private struct Everything: Codable, Equatable {
    var text: String
    var flag: Bool
    var small: Int8
    var count: Int
    var big: UInt64
    var ratio: Double
    var single: Float
    var maybe: String?
    var absent: Int?
    var inner: Inner
    var list: [Inner]
    var matrix: [[Int]]
    var kind: Kind
    var blob: Data
    var link: URL
    var amount: Decimal
}

private struct One<Value: Codable & Equatable>: Codable, Equatable { var v: Value }

/// `JSONValueDecoder` and `JSONValueEncoder`'s Foundation mode read and write what Foundation's JSON
/// coders do, without bytes, and refuse what they cannot hold with an error, never a crash.
@Suite("JSON values as Codable")
struct JSONValueDecoderTests {
    fileprivate static let everything = Everything(
        text: "ümlaut \"quoted\" / \u{1}", flag: true, small: -128, count: 42, big: UInt64.max, ratio: 0.1, single: 0.1,
        maybe: nil, absent: nil, inner: Inner(label: "a", tags: ["x", "y"], weights: ["w": 1.5]),
        list: [Inner(label: "b", tags: [], weights: [:])], matrix: [[1, 2], [], [3]], kind: .bank,
        blob: Data([0, 1, 2, 250]), link: URL(string: "https://example.org/a?b=c")!, amount: Decimal(string: "12.345")!)

    /// What Foundation's coders make of `value`, as a `JSONValue`.
    static func foundation(_ value: some Encodable) throws -> JSONValue {
        try JSONParser.parse(Array(JSONEncoder().encode(value)))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ json: JSONValue) throws -> T {
        try JSONValueDecoder().decode(type, from: json)
    }

    @Test("a value encoded without bytes is what JSONEncoder writes, and decodes back equal, as JSONDecoder reads it")
    func roundTrip() throws {
        let value = try JSONValueEncoder.encode(Self.everything, foundationDates: { date, _ in .string("\(date)") })
        #expect(value == (try Self.foundation(Self.everything)))
        #expect(value.objectValue?["maybe"] == nil, "a nil optional is left out, as encodeIfPresent does")
        #expect(try Self.decode(Everything.self, value) == Self.everything)
        let viaBytes = try JSONDecoder().decode(Everything.self, from: Data(JSONWriter.encode(value)))
        #expect(viaBytes == Self.everything)
    }

    @Test("doubles and floats are spelt as JSONEncoder spells them (1.0 as 1), so an unchanged record stays unchanged")
    func numbersAsFoundation() throws {
        for double in [1.0, -0.0, 0.1, 1e-7, 1e300, 123_456_789_012.0, 2e20, Double.leastNonzeroMagnitude] {
            let ours = try JSONValueEncoder.encode(One(v: double), foundationDates: { _, _ in .null })
            #expect(ours == (try Self.foundation(One(v: double))), "\(double)")
            #expect(ours.objectValue?["v"]?.numberValue?.text == (try Self.foundation(One(v: double))).objectValue?["v"]?.numberValue?.text)
        }
        for float in [Float(0.1), 3, 1e30] {
            let ours = try JSONValueEncoder.encode(One(v: float), foundationDates: { _, _ in .null })
            #expect(ours.objectValue?["v"]?.numberValue?.text == (try Self.foundation(One(v: float))).objectValue?["v"]?.numberValue?.text)
        }
        #expect(throws: EncodingError.self) { try JSONValueEncoder.encode(One(v: Double.nan), foundationDates: { _, _ in .null }) }
    }

    @Test("a date is decoded by the rule given, and one the rule refuses names the text and the path")
    func dates() throws {
        var decoder = JSONValueDecoder(date: { $0 == "day one" ? Date(timeIntervalSince1970: 86_400) : nil })
        decoder.dateProblem = { "'\($0)' is no day" }
        #expect(try decoder.decode(One<Date>.self, from: ["v": "day one"]).v == Date(timeIntervalSince1970: 86_400))
        #expect(try decoder.decode(One<[Date]>.self, from: ["v": ["day one"]]).v.count == 1)
        Self.expect(try decoder.decode(One<Date>.self, from: ["v": "someday"]), corrupted: "'someday' is no day", at: "v")
        Self.expect(try decoder.decode(One<Date>.self, from: ["v": 3]), mismatch: "String", at: "v")
        // The path a date rule sees is JSONEncoder's: the field, or an array element's index.
        var paths: [String] = []
        _ = try JSONValueEncoder.encode(One(v: [Date()]), foundationDates: { _, path in
            paths.append(path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: "."))
            return .null
        })
        #expect(paths == ["v.[0]"])
    }

    @Test("a missing key, a wrong type, a null and the end of an array are the DecodingError JSONDecoder throws, with the path")
    func structuralErrors() throws {
        Self.expect(try Self.decode(Inner.self, ["tags": [], "weights": [:]]), missing: "label")
        Self.expect(try Self.decode(Inner.self, ["label": 1, "tags": [], "weights": [:]]), mismatch: "String", at: "label")
        Self.expect(try Self.decode(Inner.self, ["label": "a", "tags": ["x", 2], "weights": [:]]), mismatch: "String", at: "tags.[1]")
        Self.expect(try Self.decode(Inner.self, ["label": "a", "tags": [:], "weights": [:]]), mismatch: "Array<Any>", at: "tags")
        Self.expect(try Self.decode(One<Inner>.self, ["v": []]), mismatch: "Dictionary<String, Any>", at: "v")
        Self.expect(try Self.decode(Inner.self, ["label": nil, "tags": [], "weights": [:]]), mismatch: "String", null: true, at: "label")
        Self.expect(try Self.decode(One<Bool>.self, ["v": 1]), mismatch: "Bool", at: "v")
        Self.expect(try Self.decode(One<Int>.self, ["v": true]), mismatch: "Int", at: "v")
        Self.expect(try Self.decode(One<Kind>.self, ["v": "other"]), corrupted: "", at: "v")
        Self.expect(try Self.decode(One<Data>.self, ["v": "not base64!"]), corrupted: "Base64", at: "v")
        // An optional: absent or null is nil, a wrong type is still an error.
        struct Optional: Decodable { var v: Int? }
        #expect(try Self.decode(Optional.self, [:]).v == nil)
        #expect(try Self.decode(Optional.self, ["v": nil]).v == nil)
        #expect(try Self.decode(Optional.self, ["v": 1]).v == 1)
        Self.expect(try Self.decode(Optional.self, ["v": "1"]), mismatch: "Int", at: "v")
        struct OptionalText: Decodable { var v: String?; var w: Inner? }
        #expect(try Self.decode(OptionalText.self, ["v": nil]).v == nil)
        #expect(try Self.decode(OptionalText.self, ["v": "x", "w": ["label": "l", "tags": [], "weights": [:]]]).w?.label == "l")
        Self.expect(try Self.decode(OptionalText.self, ["v": 1]), mismatch: "String", at: "v")
        Self.expect(try Self.decode(OptionalText.self, ["w": ["tags": [], "weights": [:]]]), missing: "label")
        // A tuple-like type reading past the end of its array.
        struct Pair: Decodable {
            init(from decoder: any Decoder) throws {
                var elements = try decoder.unkeyedContainer()
                _ = try elements.decode(Int.self)
                _ = try elements.decode(Int.self)
            }
        }
        #expect(throws: DecodingError.self) { try Self.decode(Pair.self, [1]) }
        #expect((try? Self.decode(Pair.self, [1, 2])) != nil)
    }

    @Test("numbers of any size: what the type holds exactly is read, anything else is a clear error, never a crash")
    func numbers() throws {
        #expect(try Self.decode(One<Int>.self, ["v": .number(JSONNumber("1e2")!)]).v == 100)
        #expect(try Self.decode(One<Int>.self, ["v": .number(JSONNumber("3.0")!)]).v == 3)
        #expect(try Self.decode(One<Int64>.self, ["v": .number(JSONNumber("-9223372036854775808")!)]).v == .min)
        #expect(try Self.decode(One<UInt64>.self, ["v": .number(JSONNumber("18446744073709551615")!)]).v == .max)
        #expect(try Self.decode(One<Double>.self, ["v": 3]).v == 3)
        #expect(try Self.decode(One<Double>.self, ["v": .number(JSONNumber("1e-400")!)]).v == 0)
        #expect(try Self.decode(One<Decimal>.self, ["v": .number(JSONNumber("12345678901234567890.5")!)]).v
                == Decimal(string: "12345678901234567890.5"))
        let literal = JSONNumber("123456789012345678901234567890.000")!
        #expect(try Self.decode(One<JSONNumber>.self, ["v": .number(literal)]).v.text == literal.text, "a JSONNumber keeps its literal")
        for (text, type) in [("1.5", "Int"), ("300", "Int8"), ("-1", "UInt"), ("12345678901234567890123", "Int"), ("1e999999999", "Int"),
                             ("1e400", "Double"), ("-1e400", "Float")] {
            let value: JSONValue = ["v": .number(JSONNumber(text)!)]
            let error: (any Error)?
            switch type {
            case "Int8": error = Self.error { try Self.decode(One<Int8>.self, value) }
            case "UInt": error = Self.error { try Self.decode(One<UInt>.self, value) }
            case "Double": error = Self.error { try Self.decode(One<Double>.self, value) }
            case "Float": error = Self.error { try Self.decode(One<Float>.self, value) }
            default: error = Self.error { try Self.decode(One<Int>.self, value) }
            }
            guard case DecodingError.dataCorrupted(let context)? = error else {
                Issue.record("\(text) as \(type): \(String(describing: error))")
                continue
            }
            #expect(context.debugDescription == "Number \(text) is not representable as \(type)")
            #expect(context.codingPath.map(\.stringValue) == ["v"])
        }
    }

    // MARK: Helpers

    static func error(_ body: () throws -> Any) -> (any Error)? {
        do { _ = try body(); return nil } catch { return error }
    }

    static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }

    static func expect(_ body: @autoclosure () throws -> Any, missing key: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case DecodingError.keyNotFound(let found, _)? = error(body) else {
            Issue.record("expected keyNotFound \(key)", sourceLocation: sourceLocation)
            return
        }
        #expect(found.stringValue == key, sourceLocation: sourceLocation)
    }

    /// `typeMismatch` of `type` at `path`, or with `null`, `valueNotFound`.
    static func expect(_ body: @autoclosure () throws -> Any, mismatch type: String, null: Bool = false, at path: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        let found: (Any.Type, DecodingError.Context)?
        switch error(body) {
        case DecodingError.typeMismatch(let type, let context)? where !null: found = (type, context)
        case DecodingError.valueNotFound(let type, let context)? where null: found = (type, context)
        default: found = nil
        }
        guard let (foundType, context) = found else {
            Issue.record("expected \(null ? "valueNotFound" : "typeMismatch") \(type) at \(path)", sourceLocation: sourceLocation)
            return
        }
        #expect("\(foundType)" == type, sourceLocation: sourceLocation)
        #expect(Self.path(context) == path, sourceLocation: sourceLocation)
    }

    static func expect(_ body: @autoclosure () throws -> Any, corrupted words: String, at path: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        guard case DecodingError.dataCorrupted(let context)? = error(body) else {
            Issue.record("expected dataCorrupted at \(path)", sourceLocation: sourceLocation)
            return
        }
        #expect(words.isEmpty || context.debugDescription.contains(words), "\(context.debugDescription)", sourceLocation: sourceLocation)
        #expect(Self.path(context) == path, sourceLocation: sourceLocation)
    }
}
