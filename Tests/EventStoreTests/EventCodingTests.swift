import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("Event encoding")
struct EventCodingTests {
    static let fields: JSONObject = ["name": "Fête \"nationale\"\n", "date": "2026-07-14", "observedBy": ["FR", "😀"], "n": 1.5]

    /// Events of every kind and origin, with each optional field present and absent.
    static var samples: [Event] {
        var events: [Event] = []
        var seq: UInt64 = 1
        func event(_ kind: Event.Kind, _ origin: Event.Origin, at: Int64 = 1_795_000_000_123, set: JSONObject = [:],
                   unset: [String] = [], version: RemoteVersion? = nil, server: RecordState? = nil, local: RecordState? = nil,
                   resolved: RecordState? = nil, policy: ConflictPolicy? = nil, reason: String? = nil, id: String? = nil,
                   resolves: UInt64? = nil, baseline: Baseline? = nil, archive: ArchiveInfo? = nil) {
            events.append(Event(seq: seq, eventID: RecordID.generate(), at: at, entity: archive == nil ? "Holiday" : "",
                                recordID: id ?? (archive == nil ? "rec-\(seq)" : ""),
                                kind: kind, origin: origin, author: origin == .local ? "me@host" : "https://kinto.example/v1/buckets/b",
                                set: set, unset: unset, version: version, server: server, local: local, resolved: resolved,
                                policy: policy, reason: reason, resolves: resolves, baseline: baseline, archive: archive))
            seq += 1
        }
        // A server record skipped: with its id and version, and without (no usable id, none given).
        event(.skipped, .remote, version: 11, reason: "it cannot be read (nesting deeper than 256)")
        event(.skipped, .remote, reason: #"its id "bad id!" is not a valid Kinto id"#, id: "")
        // A push the server refused; local changes made by `resolve`, linked to their conflict.
        event(.rejected, .remote, reason: "HTTP 413: the record is larger than the server accepts in one request")
        event(.updated, .local, set: ["name": "mine"], resolves: 3)
        event(.deleted, .local, resolves: 1 << 40)
        for origin in Event.Origin.allCases {
            event(.created, origin, set: fields)
            event(.created, origin, set: fields, version: origin == .remote ? 17 : nil)
            event(.created, origin, set: [:])
            event(.updated, origin, set: ["details": "x"])
            event(.updated, origin, unset: ["details", "image"])
            event(.updated, origin, set: ["name": ""], unset: ["details"], version: 3)
            event(.deleted, origin)
            event(.deleted, origin, version: 1_700_000_000_000)
            event(.acknowledged, origin, version: 5, server: .present(fields))
            event(.acknowledged, origin, version: 6, server: .absent)
            event(.acknowledged, origin, version: 7, server: .present([:]))
            for policy in ConflictPolicy.allCases {
                event(.conflict, origin, version: 8, server: .present(fields), local: .present(["name": "mine", "date": "2026-01-01"]),
                      resolved: .present(fields), policy: policy)
                event(.conflict, origin, version: 9, server: .absent, local: .present(fields), resolved: .absent, policy: policy)
                event(.conflict, origin, version: 10, server: .present(fields), local: .absent, resolved: .present(fields), policy: policy)
            }
            event(.conflict, origin, server: .absent, local: .absent, resolved: .absent)
        }
        // A compaction's seal, and the baselines it left: of a record, and of one deleted (no row).
        event(.compacted, .local, archive: ArchiveInfo(file: "events-1-40.evarchive", store: "s", first: 1, last: 40, count: 38,
                                                       sha256: String(repeating: "ab", count: 32), bytes: 900, cut: 41, records: 9))
        let summary = EventSummary(Event(seq: 7, eventID: "", at: 1_795_000_000_000, entity: "Holiday", recordID: "r", kind: .acknowledged,
                                         origin: .remote, author: "https://kinto.example/v1/buckets/b", version: 12))
        event(.baseline, .local, set: fields, version: 12,
              baseline: Baseline(compaction: 1, covers: [3, 7], setters: ["name": summary], lastExchange: summary, lastEvent: summary))
        event(.baseline, .local, local: .absent, baseline: Baseline(compaction: 1, covers: [4], setters: [:], lastExchange: nil, lastEvent: summary))
        // Times around the epoch and far out.
        for at: Int64 in [0, 1, 999, 1000, -1, -1000, -86_400_001, 951_782_400_000, 253_402_300_799_999] {
            event(.created, .local, at: at, set: fields)
        }
        // Kinds added after `StoredFormatTests`' digests were made go last.
        event(.left, .remote, reason: "no longer shared with you")
        return events
    }

    @Test("every event round-trips, in the stored format and as JSON (format 1, as older stores hold it)")
    func roundTrip() throws {
        let samples = Self.samples
        #expect(Set(samples.map(\.kind)) == Set(Event.Kind.allCases))
        #expect(Set(samples.map(\.origin)) == Set(Event.Origin.allCases))
        for event in samples {
            for encode in [EventCoding.encode(_:encodedSet:), EventJSON.encode(_:encodedSet:)] {
                let bytes = encode(event, nil)
                let decoded = try EventCoding.decode(bytes)
                #expect(decoded == event, "\(bytes)")
                // Encoding is deterministic.
                #expect(encode(decoded, nil) == bytes)
            }
        }
    }

    @Test("optional fields are written only when present")
    func optionalFields() throws {
        let bare = Event(seq: 3, eventID: "e", at: 0, entity: "Holiday", recordID: "a", kind: .deleted, origin: .local, author: "me")
        let text = String(decoding: EventJSON.encode(bare), as: UTF8.self)
        #expect(text == #"{"format":1,"seq":3,"event":"e","at":"1970-01-01T00:00:00.000Z","entity":"Holiday","id":"a","kind":"deleted","origin":"local","by":"me"}"#)

        let full = Event(seq: 4, eventID: "e", at: 1, entity: "Holiday", recordID: "a", kind: .conflict, origin: .remote, author: "srv",
                         set: ["x": 1], unset: ["y"], version: 2, server: .absent, local: .present(["z": true]),
                         resolved: .present([:]), policy: .clientWins)
        let object = try #require(try JSONParser.parse(EventJSON.encode(full)).objectValue)
        #expect(object["server"] == .null)
        #expect(object["local"] == .object(["z": true]))
        #expect(object["resolved"] == .object([:]))
        #expect(object["unset"] == ["y"])
        #expect(object["version"] == 2)
        #expect(object["policy"] == "client-wins")
        #expect(object["at"] == "1970-01-01T00:00:00.001Z")
        let decoded = try EventCoding.decode(EventCoding.encode(full))
        #expect(decoded.server == .absent)
        #expect(decoded.local == .present(["z": true]))
        #expect(decoded.resolved == .present([:]))
    }

    @Test("events as JSON use exactly the envelope of Schemas/event.schema.json")
    func matchesEventSchema() throws {
        let schemaURL = RepositoryRoot.url.appendingPathComponent("Schemas/event.schema.json")
        let schema = try #require(try JSONParser.parse(Array(Data(contentsOf: schemaURL))).objectValue)
        let properties = Set(try #require(schema["properties"]?.objectValue).keys)
        let required = Set(try #require(schema["required"]?.arrayValue).compactMap(\.stringValue))
        let kinds = Set(try #require(schema["properties"]?.objectValue?["kind"]?.objectValue?["enum"]?.arrayValue).compactMap(\.stringValue))
        let origins = Set(try #require(schema["properties"]?.objectValue?["origin"]?.objectValue?["enum"]?.arrayValue).compactMap(\.stringValue))
        #expect(kinds == Set(Event.Kind.allCases.map(\.rawValue)))
        #expect(origins == Set(Event.Origin.allCases.map(\.rawValue)))
        var seen = Set<String>()
        for event in Self.samples {
            let object = try #require(try JSONParser.parse(EventJSON.encode(event)).objectValue)
            let keys = Set(object.keys)
            #expect(keys.isSubset(of: properties), "unknown keys \(keys.subtracting(properties))")
            #expect(required.isSubset(of: keys), "missing keys \(required.subtracting(keys))")
            #expect(object["format"] == 1, "the JSON shape stays format 1, whatever the stored form")
            seen.formUnion(keys)
        }
        // `timeWrong` is one `history --json` adds to an event stamped while the clock ran ahead (ClockJumpCLITests).
        #expect(seen.union(["timeWrong"]) == properties, "the samples should exercise every property")
    }

    @Test("refuses JSON events of a newer format")
    func newerFormat() throws {
        let event = Self.samples[0]
        let text = String(decoding: EventJSON.encode(event), as: UTF8.self)
        #expect(text.hasPrefix(#"{"format":1,"#))
        let newer = text.replacingOccurrences(of: #"{"format":1,"#, with: #"{"format":2,"#)
        let error = try #require(throws: EventDecodingError.self) { try EventCoding.decode(Array(newer.utf8)) }
        #expect(error.description.contains("newer"))
        // An older or equal format is read.
        #expect(throws: Never.self) { try EventCoding.decode(Array(text.utf8)) }
    }

    @Test("refuses malformed events", arguments: [
        "[]",
        "{}",
        #"{"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":"1","seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":0,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"yesterday","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"renamed","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"elsewhere","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local"}"#,
        #"{"format":1,"seq":1,"at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","id":"a","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","kind":"created","origin":"local","by":"me"}"#,
        #"{"format":1,"seq":1,"event":"e","at":"2026-01-01T00:00:00.000Z","entity":"H","id":"a","kind":"created","origin":"local","by":"me""#,
    ])
    func malformed(text: String) {
        #expect(throws: (any Error).self) { try EventCoding.decode(Array(text.utf8)) }
    }

    @Test("refuses a compaction's event whose baseline or archive is damaged, naming it")
    func damagedCompactionMembers() throws {
        for event in Self.samples where event.kind == .baseline || event.kind == .compacted {
            let text = String(decoding: EventJSON.encode(event), as: UTF8.self)
            let member = event.kind == .baseline ? "baseline" : "archive"
            let start = try #require(text.range(of: #","\#(member)":"#))
            let damaged = text[..<start.upperBound] + #"{"compaction":"one"}}"#
            let error = try #require(throws: EventDecodingError.self) { try EventCoding.decode(Array(damaged.utf8)) }
            #expect(error.description.contains("'\(member)'"), "\(error)")
        }
    }

    /// A baseline as evsync wrote it before `sharedBaseline` (tag 10), taken from a store of `Tools/bench` case 14,
    /// and the same event as `log tail --json` printed it.
    static let firstFormatBaseline = """
        029650f8afe7a649c2b5bcc1c7681c03720db05ee3ba44549e3544c2b5482b3c07486f6c69646179ffb60561be1f4b55be5a237df37f0e
        0e07726f6f7440766d9b027b2264617465223a22313937362d30392d3135222c2264657461696c73223a22656469742031303a20656469
        7420393a206564697420383a206564697420373a206564697420363a206564697420353a206564697420343a206564697420333a206564
        697420323a206564697420313a204570697068616e792c205765646e65736461792c2053657074656d6265722031352c20313937363a20
        7075626c696320686f6c6964617920696e2044452e222c226e616d65223a224570697068616e792028444520393930353629222c226f62
        7365727665644279223a5b224445225d2c2277696b6970656469614c696e6b223a2268747470733a2f2f656e2e77696b6970656469612e
        6f72672f77696b692f4570697068616e79227d02fdb3dee0a3340ac999430b9e8d06a18d06a08d06a08d06a08d06a08d069f8d06899506
        a08d06a08d06a08d06029e8d06b6b2cbc0c7680133687474703a2f2f3132372e302e302e313a383839372f76312f6275636b6574732f63
        6f6d706163742d3137393633303335373101a5b7a1e0a334c79943809adcc0c7680533687474703a2f2f3132372e302e302e313a383839
        372f76312f6275636b6574732f636f6d706163742d3137393633303335373101fdb3dee0a334050464617465000764657461696c730104
        6e616d65000a6f627365727665644279000d77696b6970656469614c696e6b000001
        """
    static let firstFormatBaselineJSON = #"{"format":1,"seq":1200999,"event":"720db05e-e3ba-4454-9e35-44c2b5482b3c","at":"2026-12-03T13:28:26.209Z","entity":"Holiday","id":"ffb60561-be1f-4b55-be5a-237df37f0e0e","kind":"baseline","origin":"local","by":"root@vm","set":{"date":"1976-09-15","details":"edit 10: edit 9: edit 8: edit 7: edit 6: edit 5: edit 4: edit 3: edit 2: edit 1: Epiphany, Wednesday, September 15, 1976: public holiday in DE.","name":"Epiphany (DE 99056)","observedBy":["DE"],"wikipediaLink":"https://en.wikipedia.org/wiki/Epiphany"},"version":1796304509437,"baseline":{"compaction":1101001,"covers":[99998,199999,299999,399999,499999,599999,699998,800999,900999,1000999,1100999],"lastEvent":{"at":"2026-12-03T13:15:18.016Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"updated","origin":"remote","seq":1100999,"version":1796304509437},"setters":{"date":{"at":"2026-12-03T13:13:00.315Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"created","origin":"remote","seq":99998,"version":1796303510437},"details":{"at":"2026-12-03T13:15:18.016Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"updated","origin":"remote","seq":1100999,"version":1796304509437},"name":{"at":"2026-12-03T13:13:00.315Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"created","origin":"remote","seq":99998,"version":1796303510437},"observedBy":{"at":"2026-12-03T13:13:00.315Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"created","origin":"remote","seq":99998,"version":1796303510437},"wikipediaLink":{"at":"2026-12-03T13:13:00.315Z","by":"http://127.0.0.1:8897/v1/buckets/compact-1796303571","kind":"created","origin":"remote","seq":99998,"version":1796303510437}}}}"#

    @Test("a baseline in the first stored form (tag 10) still reads as it did; written again it takes the smaller form")
    func firstFormatBaselineStillReads() throws {
        let hex = Array(Self.firstFormatBaseline.utf8.filter { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: " ") })
        let stored = try stride(from: 0, to: hex.count, by: 2).map { index in
            try #require(UInt8(String(decoding: hex[index..<index + 2], as: UTF8.self), radix: 16))
        }
        let event = try EventCoding.decode(stored)
        #expect(event == (try EventCoding.decode(Array(Self.firstFormatBaselineJSON.utf8))))
        #expect(event.baseline?.covers.count == 11 && event.baseline?.setters.count == 5)
        let rewritten = EventCoding.encode(event)
        #expect(try EventCoding.decode(rewritten) == event)
        #expect(rewritten.count + 80 < stored.count, "\(rewritten.count) bytes, where the first form took \(stored.count)")
    }

    @Test("timestamps format and parse", arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"),
        (1, "1970-01-01T00:00:00.001Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_795_000_000_123, "2026-11-18T11:06:40.123Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func timestamps(milliseconds: Int64, text: String) {
        #expect(Timestamp.iso8601(milliseconds: milliseconds) == text)
        #expect(Timestamp.parse(text) == milliseconds)
    }

    @Test("formatting agrees with the C library's calendar for random instants")
    func timestampsAgreeWithGmtime() {
        var random = SplitMix64(seed: 1970)
        for _ in 0..<2_000 {
            // From 1601 to 9999, where four-digit years hold.
            let milliseconds = Int64.random(in: -11_644_473_600_000...253_402_300_799_999, using: &random)
            var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let millis = Int(milliseconds - Int64(seconds) * 1000)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                                  Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
            #expect(Timestamp.iso8601(milliseconds: milliseconds) == expected)
        }
    }

    @Test("timestamp parsing accepts offsets and dates and refuses nonsense")
    func timestampParsing() {
        #expect(Timestamp.parse("2026-01-01") == 1_767_225_600_000)
        #expect(Timestamp.parse("2026-01-01T01:30:00+01:30") == 1_767_225_600_000)
        #expect(Timestamp.parse("2025-12-31T22:00:00-02:00") == 1_767_225_600_000)
        #expect(Timestamp.parse("2026-01-01T00:00:00.5Z") == 1_767_225_600_500)
        #expect(Timestamp.parse("2026-01-01 00:00:00Z") == 1_767_225_600_000)
        for bad in ["", "2026", "2026-13-01", "2026-02-29", "2026-00-10", "2026-01-32", "2026-01-01T", "2026-01-01T00:00:00",
                    "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:00Zjunk", "2026-01-01T00:00:00+0100",
                    "26-01-01", "2026/01/01", "yesterday"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("record ids follow the server's rule")
    func recordIDs() {
        for good in ["a", "Z", "0", "a-b_C9", "0123-abc", String(repeating: "x", count: 128), RecordID.generate()] {
            #expect(RecordID.isValid(good), "\(good)")
        }
        for bad in ["", "a/b", "../x", "-a", "_a", "a b", "a.b", "é", "a\u{0}b", String(repeating: "x", count: 129), "a?", "%41"] {
            #expect(!RecordID.isValid(bad), "\(bad)")
        }
        // Every byte after the first, against the rule spelled out.
        for byte in UInt8.min...UInt8.max {
            let allowed = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x5F || byte == 0x2D
            #expect([UInt8(ascii: "a"), byte].withUnsafeBytes { RecordID.isValid($0) } == allowed, "byte \(byte)")
        }
    }

    @Test("a new id is its 128 bits spelt as Foundation spells a UUID, in lower case, and a version 4 UUID")
    func newIDs() throws {
        var random = SplitMix64(seed: 4)
        let samples: [(UInt64, UInt64)] = [(0, 0), (.max, .max), (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210)]
            + (0..<200).map { _ in (random.next(), random.next()) }
        for (high, low) in samples {
            let bytes = withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Array($0) }
            let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                                   bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            #expect(UUIDv4.text(high: high, low: low) == uuid.uuidString.lowercased())
        }
        let id = RecordID.generate()
        let parsed = try #require(UUID(uuidString: id))
        #expect(parsed.uuidString.lowercased() == id && RecordID.isValid(id))
        #expect(Array(id.utf8)[14] == UInt8(ascii: "4") && "89ab".utf8.contains(Array(id.utf8)[19]))
    }
}
