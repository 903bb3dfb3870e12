import Foundation
import Synchronization
import Testing
@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport

/// A Kinto list response read into a page without building its records:
/// their fields re-encoded straight into the log's canonical JSON.
@Suite("Kinto pages")
struct KintoPageTests {
    // MARK: Re-encoding without building (a pull's records)

    @Test("a Kinto page's fields come out as the writer writes them", arguments: [
        #"{"b": 1, "a" : [1, 2.50, -0, 1e2, 1E-2, 0.0], "c":{"z":null,"y":true}}"#,
        #"{"n":123456789012345,"m":1234567890123456,"o":-123456789012345,"p":9007199254740993}"#,
        #"{"x":12345678901234567891,"f":1.2345678901234567891e19,"t":1733011200123456,"a":1.0,"b":1E+3}"#,
        #"{"s":"caf\u00e9 \/ \"q\" \ud83d\ude00","t":"tab\there","u":"δ raw"}"#,
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
        #expect(entry.version == RemoteVersion(7))
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
                let name = oddNames ? RandomJSON.string(using: &random)
                    : ["name", "date", "details", "a", "b", "Z", "x_1", "observedBy"][Int.random(in: 0..<8, using: &random)]
                fields[name] = RandomJSON.value(depth: 2, using: &random)
            }
            for reserved in ["id", "last_modified", "deleted", "schema"] { fields[reserved] = nil }
            // Half the records with keys as the writer writes them, which a pull copies.
            let plainKeys = Bool.random(using: &random)
            func key(_ name: String) -> String {
                plainKeys ? JSONWriter.string(.string(name)) : RandomJSON.messy(.string(name), using: &random)
            }
            var members = fields.map { "\(key($0.key)):\(RandomJSON.messy($0.value, using: &random))" }
            members.shuffle(using: &random)
            members.insert(#""id":"r\#(index)""#, at: Int.random(in: 0...members.count, using: &random))
            members.insert(#""last_modified":\#(index)"#, at: Int.random(in: 0...members.count, using: &random))
            records.append("{ " + members.joined(separator: " ,\n") + " }")
            expected.append(fields)
        }
        let body = Array(#"{"data": ["#.utf8) + Array(records.joined(separator: ",").utf8) + Array(#"], "x": 1}"#.utf8)
        let page = try KintoRemote.page(from: body, collection: "things")
        #expect(page.entries.count == expected.count)
        #expect(page.cursor == RemoteCursor("299"), "the newest last_modified")
        for (entry, fields) in zip(page.entries, expected) {
            #expect(Array(page.bytes[try #require(entry.fields)]) == JSONWriter.encodeObject(fields), "\(page.id(of: entry))")
        }
    }

    @Test("a record whose field nests to the limit is read, on a worker thread as a pull reads it")
    func deepestRecord() throws {
        let limit = JSONValue.maxFieldNesting
        let value = String(repeating: #"{"k":["#, count: limit / 2) + "1" + String(repeating: "]}", count: limit / 2)
        let body = Array(#"{"data":[{"id":"deep","last_modified":1,"v":\#(value)}]}"#.utf8)
        let result = Mutex<Result<RemotePage, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        // A Thread like the pipeline's and the engine's (their stacks are the default size).
        Thread {
            result.withLock { $0 = Result { try KintoRemote.page(from: body, collection: "things") } }
            done.signal()
        }.start()
        done.wait()
        let page = try #require(result.withLock { $0 }).get()
        let entry = try #require(page.entries.first)
        let fields = try #require(try page.record(entry).fields)
        #expect(JSONWriter.string(try #require(fields["v"])) == value)
        #expect(fields["v"]?.nests(deeperThan: limit) == false && fields["v"]?.nests(deeperThan: limit - 1) == true)
    }

    @Test("a page's tombstones, bad records and bad JSON")
    func pageEdges() throws {
        let page = try KintoRemote.page(from: Array(#"{"data":[{"deleted":true,"id":"gone","last_modified":9}]}"#.utf8), collection: "c")
        #expect(page.entries.count == 1 && page.entries[0].fields == nil && page.id(of: page.entries[0]) == "gone")
        for (body, message) in [
            (#"{"items":[]}"#, "has no data array"),
            (#"{"data":[{"id":"a","last_modified":9,"b":01}]}"#, "invalid JSON"),
            ("{\"data\":[{\"id\":\"a\",\"last_modified\":9,\"b\":\"\u{01}\"}]}", "invalid JSON"),
            ("{\"data\":[{\"id\":\"a\",\"last_modified\":9,\"\u{01}\":1}]}", "invalid JSON"),
        ] {
            #expect {
                try KintoRemote.page(from: Array(body.utf8), collection: "c")
            } throws: { error in
                (error as? HTTPRemoteError)?.message.contains(message) == true
            }
        }
        // A key given twice is not guessed at: that record is skipped, the page's others are read.
        for (record, key) in [
            (#"{"id":"a","last_modified":9,"b":1,"b":2}"#, "b"),
            (#"{"id":"a","id":"b","last_modified":9}"#, "id"),
            (#"{"id":"a","last_modified":9,"c":{"k":1,"k":[3]}}"#, "k"),
            (#"{"id":"a","last_modified":9,"é":1,"é":2}"#, "é"),
        ] {
            let page = try KintoRemote.page(from: Array(#"{"data":[\#(record),{"id":"ok","last_modified":10}]}"#.utf8), collection: "c")
            #expect(page.entries.map { page.id(of: $0) } == ["ok"], "\(record)")
            #expect(page.skipped.count == 1 && page.skipped[0].reason.contains("duplicate key '\(key)'"), "\(page.skipped)")
            #expect(page.cursor == RemoteCursor("10"))
        }
    }

    @Test("a record the store cannot hold is skipped with its reason; the rest of the page is read")
    func poisonRecordsAreSkipped() throws {
        let levels = JSONParser.maxDepth + 1
        let deep = String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels)
        let records = [
            #"{"id":"good1","last_modified":10,"name":"A"}"#,
            #"{"last_modified":11,"a":1}"#,
            #"{"id":"bad id!","last_modified":12}"#,
            #"{"id":"abc\n","last_modified":13}"#,
            #"{"id":7,"last_modified":14}"#,
            #"{"id":"noversion","name":"B"}"#,
            #"{"id":"textversion","last_modified":"15"}"#,
            #"42"#, #""text""#, #"null"#, #"[{"id":"inarray","last_modified":16}]"#,
            #"{"id":"deep1","last_modified":17,"deep":\#(deep)}"#,
            #"{"deep":\#(deep),"last_modified":18}"#,
            #"{"é":1,"id":"bad id?","last_modified":19}"#,
            #"{"id":"good2","last_modified":20,"name":"C"}"#,
            #"{"id":"late","last_modified":30,"deep":\#(deep)}"#,
        ]
        let body = Array(#"{"data":["#.utf8) + Array(records.joined(separator: ",").utf8) + Array("]}".utf8)
        let page = try KintoRemote.page(from: body, collection: "things")
        #expect(page.entries.map { page.id(of: $0) } == ["good1", "good2"])
        #expect(try page.record(page.entries[1]).fields == ["name": "C"])
        let expected: [(String?, Int64?, String)] = [
            (nil, 11, "it has no id"),
            (nil, 12, #"its id "bad id!" is not a valid Kinto id"#),
            (nil, 13, #"its id "abc\n" is not a valid Kinto id"#),
            (nil, 14, "its id is not a string"),
            ("noversion", nil, "it has no last_modified"),
            ("textversion", nil, "its last_modified is not a whole number"),
            (nil, nil, "it is not a JSON object"), (nil, nil, "it is not a JSON object"),
            (nil, nil, "it is not a JSON object"), (nil, nil, "it is not a JSON object"),
            ("deep1", 17, "it cannot be read (nesting deeper than"),
            (nil, 18, "it cannot be read (nesting deeper than"),
            (nil, 19, #"its id "bad id?" is not a valid Kinto id"#),
            ("late", 30, "it cannot be read (nesting deeper than"),
        ]
        #expect(page.skipped.count == expected.count)
        for (skipped, (id, version, reason)) in zip(page.skipped, expected) {
            #expect(skipped.id == id, "\(skipped)")
            #expect(skipped.version == version.map { RemoteVersion($0) }, "\(skipped)")
            #expect(skipped.reason.hasPrefix(reason), "\(skipped)")
            #expect(skipped.reason.components(separatedBy: "cannot be read").count <= 2, "said once: \(skipped)")
        }
        #expect(page.skipped.count > 11 && page.skipped[11].reason.hasSuffix("); it has no id"), "both reasons, each once")
        #expect(page.cursor == RemoteCursor("30"), "the cursor moves past skipped records too")
        // Invalid JSON inside a record is still a broken page, not a record to skip.
        #expect(throws: HTTPRemoteError.self) {
            try KintoRemote.page(from: Array(#"{"data":[{"id":"a","last_modified":9,"b":[1,}]}"#.utf8), collection: "c")
        }
    }

    @Test("a batch answer that cannot be read refuses its own write only")
    func unreadableBatchAnswer() throws {
        let levels = JSONParser.maxDepth + 1
        let deep = String(repeating: "[", count: levels) + "1" + String(repeating: "]", count: levels)
        let body = #"{"responses":[{"status":201,"body":{"data":{"id":"a","last_modified":5,"name":"A"}}},"#
            + #"{"status":412,"body":{"details":{"existing":{"id":"b","last_modified":6,"deep":\#(deep)}}}},"#
            + #"{"status":412,"body":{"details":{"existing":{"id":"c","last_modified":7,"k":1,"k":2}}}}]}"#
        let sent: [RemoteOperation] = [.create(id: "a", fields: ["name": "A"]),
                                       .update(id: "b", fields: ["name": "B"], version: RemoteVersion(1)),
                                       .update(id: "c", fields: ["name": "C"], version: RemoteVersion(1))]
        let outcomes = try KintoRemote.outcomes(ofBatch: Array(body.utf8), for: sent, collection: "things")
        #expect(outcomes.first == .applied(version: RemoteVersion(5)))
        for (outcome, why) in zip(outcomes.dropFirst(), ["nesting deeper than", "duplicate key 'k'"]) {
            guard case .rejected(let status, let message) = outcome else { Issue.record("\(outcome)"); continue }
            #expect(status == 412 && message.contains("cannot be read") && message.contains(why), "\(message)")
        }
    }

    @Test("a write answered with another record than the one sent is not acknowledged")
    func answeredWithAnotherRecord() throws {
        let sent = RemoteOperation.update(id: "a", fields: ["name": "mine"], version: RemoteVersion(4))
        func answer(_ data: String) throws -> RemoteOutcome {
            try KintoRemote.outcome(of: sent, try #require(JSONParser.parse(#"{"status":200,"body":{"data":\#(data)}}"#).objectValue))
        }
        #expect(try answer(#"{"id":"a","last_modified":5,"name":"mine","schema":3}"#) == .applied(version: RemoteVersion(5)))
        #expect(try answer(#"{"id":"a","last_modified":5,"name":"theirs"}"#)
                == .appliedDifferently(current: RemoteRecord(id: "a", version: RemoteVersion(5), fields: ["name": "theirs"])))
        #expect(try answer(#"{"id":"a","last_modified":5,"name":"mine","extra":1}"#)
                == .appliedDifferently(current: RemoteRecord(id: "a", version: RemoteVersion(5), fields: ["name": "mine", "extra": 1])))
        #expect(try answer(#"{"id":"a","last_modified":5,"deleted":true}"#)
                == .appliedDifferently(current: RemoteRecord(id: "a", version: RemoteVersion(5), fields: nil)))
    }

    // MARK: Kinto's names

    @Test("an entity's collection is its x-evsync-collection, else its name lower-cased and pluralised")
    func collectionNames() throws {
        #expect(KintoRemote.pluralise("book") == "books")
        #expect(KintoRemote.pluralise("party") == "parties")
        #expect(KintoRemote.pluralise("day") == "days")
        #expect(KintoRemote.pluralise("box") == "boxes")
        #expect(KintoRemote.pluralise("match") == "matches")
        let registry = SchemaRegistry()
        #expect(KintoRemote.collection(for: try registry.schema(named: "Holiday")) == "holidays")
        let named = try EntitySchema(json: #"{"title": "Book", "properties": {}, "x-evsync-collection": "library"}"#, source: "t")
        #expect(KintoRemote.collection(for: named) == "library")
    }

    @Test("an entity Kinto cannot hold is refused before anything is sent", arguments: [
        (#"{"title": "Book", "properties": {"last_modified": {"type": "integer"}}}"#, "'last_modified', which Kinto keeps"),
        (#"{"title": "Book", "properties": {"deleted": {"type": "boolean"}}}"#, "'deleted', which Kinto keeps"),
        (#"{"title": "Book", "properties": {}, "x-evsync-collection": "my books"}"#, "'my books' is not a valid Kinto id"),
    ])
    func refusedEntities(schema: String, message: String) throws {
        // Port 9 (discard) on loopback: a request, if one were sent, would fail differently.
        let remote = try KintoRemote(bucketURL: "http://127.0.0.1:9/v1/buckets/b", credentials: nil)
        let entity = try EntitySchema(json: schema, source: "t")
        let error = try #require(throws: HTTPRemoteError.self) { try remote.prepare([(entity, nil)]) }
        #expect(error.syncCode == .invalidData)
        #expect(error.message.contains(message), "\(error)")
    }
}
