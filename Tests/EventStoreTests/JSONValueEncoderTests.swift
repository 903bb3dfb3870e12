import Testing
@testable import EventStore

@Suite("Encodable results as evsync's JSON")
struct JSONValueEncoderTests {
    /// Declared out of key order: the keys come out sorted all the same.
    struct Inner: Encodable {
        let kind: String
        let seq: UInt64
        init(seq: UInt64, kind: String) { (self.kind, self.seq) = (kind, seq) }
    }

    struct Result: Encodable {
        let zebra: String
        let id: String
        let value: EncodableJSON
        let old: EncodableJSON?
        @NullWhenAbsent var policy: String?
        @NullWhenAbsent var since: Inner?
        let fields: [String: Inner]
        let list: [Inner]
        let flag: Bool
        let ratio: Double
    }

    @Test("keys sorted, numbers as their literals, strings escaped as JSONWriter does, nil left out or null")
    func bytes() throws {
        let value = Result(zebra: "a/b\u{8}", id: "x", value: EncodableJSON(.array([.number(JSONNumber("1.50")!), .null])),
                           old: nil, policy: nil, since: Inner(seq: 7, kind: "created"),
                           fields: ["b": Inner(seq: 2, kind: "updated"), "a": Inner(seq: 1, kind: "created")],
                           list: [], flag: true, ratio: 0.5)
        let text = JSONWriter.string(try JSONValueEncoder.encode(value))
        #expect(text == #"{"fields":{"a":{"kind":"created","seq":1},"b":{"kind":"updated","seq":2}},"flag":true,"id":"x","#
            + #""list":[],"policy":null,"ratio":0.5,"since":{"kind":"created","seq":7},"value":[1.50,null],"zebra":"a/b\u0008"}"#)
    }

    @Test("an object of many members and an array of many elements keep every one, whatever container wrote it")
    func many() throws {
        struct Wide: Encodable {
            struct Key: CodingKey {
                let stringValue: String
                init(stringValue: String) { self.stringValue = stringValue }
                var intValue: Int? { nil }
                init?(intValue: Int) { nil }
            }
            func encode(to encoder: any Encoder) throws {
                var members = encoder.container(keyedBy: Key.self)
                for index in 0..<300 {
                    switch index % 4 {
                    case 0: try members.encode("s\(index)", forKey: Key(stringValue: "m\(index)"))
                    case 1: try members.encode(index, forKey: Key(stringValue: "m\(index)"))
                    case 2: try members.encode(index % 3 == 0, forKey: Key(stringValue: "m\(index)"))
                    default: try members.encodeIfPresent(index % 8 == 3 ? nil : "o\(index)" as String?, forKey: Key(stringValue: "m\(index)"))
                    }
                }
                var list = members.nestedUnkeyedContainer(forKey: Key(stringValue: "list"))
                for index in 0..<1_000 { try list.encode(index) }
            }
        }
        let object = try #require(try JSONValueEncoder.encode(Wide()).objectValue)
        var expected: JSONObject = ["list": .array((0..<1_000).map { .number(JSONNumber($0)) })]
        for index in 0..<300 {
            switch index % 4 {
            case 0: expected["m\(index)"] = .string("s\(index)")
            case 1: expected["m\(index)"] = .number(JSONNumber(index))
            case 2: expected["m\(index)"] = .bool(index % 3 == 0)
            default: if index % 8 != 3 { expected["m\(index)"] = .string("o\(index)") }
            }
        }
        #expect(object == expected)
    }

    @Test("two results encoded into one encoder make one object")
    func merged() throws {
        struct Both: Encodable {
            func encode(to encoder: any Encoder) throws {
                try Inner(seq: 1, kind: "created").encode(to: encoder)
                try ["take": "local"].encode(to: encoder)
            }
        }
        #expect(JSONWriter.string(try JSONValueEncoder.encode(Both())) == #"{"kind":"created","seq":1,"take":"local"}"#)
    }
}
