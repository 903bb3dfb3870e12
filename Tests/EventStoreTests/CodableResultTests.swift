import Foundation
import Testing
@testable import EventStore
import TestSupport

/// The store's results as `Codable` values an app can keep: through Foundation's JSON coders they come
/// back equal, and an event encodes in the shape `log tail --json` prints.
@Suite("Codable results")
struct CodableResultTests {
    /// Record values of every JSON type, as a server or an app writes them.
    static let fields: JSONObject = [
        "name": "Fête de la musique ☀︎", "date": "2026-06-21", "nothing": .null, "public": true, "guests": 120,
        "budget": .number(JSONNumber("1234.5")!), "big": .number(JSONNumber("18446744073709551615")!), "below": -42,
        "tags": ["music", 3, false, .null, ["nested": [1, 2]]], "empty": [:], "none": [],
    ]

    static let events: [Event] = [
        Event(seq: 1, eventID: "0B0F5A1E-2C36-4F2C-9A53-2D8E0E6C1F01", at: 1_780_000_000_123, entity: "Holiday", recordID: "h1",
              kind: .created, origin: .local, author: "ana@laptop", set: fields),
        Event(seq: 2, eventID: "e2", at: 1_780_000_100_000, entity: "Holiday", recordID: "h1", kind: .updated, origin: .remote,
              author: "https://kinto.example/v1", set: ["details": "Bring a chair"], unset: ["nothing"], version: RemoteVersion(1796076723092)),
        Event(seq: 3, eventID: "e3", at: 1_780_000_200_000, entity: "Holiday", recordID: "h1", kind: .acknowledged, origin: .remote,
              author: "https://kinto.example/v1", version: RemoteVersion("3-917fa2381192822767f010b95b45325b"), server: .present(fields)),
        Event(seq: 4, eventID: "e4", at: 1_780_000_300_000, entity: "Birthday", recordID: "b1", kind: .conflict, origin: .remote,
              author: "account:bob", version: RemoteVersion("-7"), server: .absent, local: .present(["name": "Bob"]),
              resolved: .present(["name": "Bob"]), policy: .clientWins),
        Event(seq: 5, eventID: "e5", at: 0, entity: "Holiday", recordID: "", kind: .skipped, origin: .remote, author: "remote",
              reason: "it has no id: {\"title\": 1}"),
        Event(seq: 6, eventID: "e6", at: 1_780_000_400_000, entity: "Birthday", recordID: "b1", kind: .deleted, origin: .local,
              author: "ana@laptop", resolves: 4),
        Event(seq: 7, eventID: "e7", at: 1_780_000_500_000, entity: "Holiday", recordID: "h1", kind: .rejected, origin: .remote,
              author: "https://kinto.example/v1", reason: "HTTP 400: Invalid parameters: name is too long"),
    ]

    @Test("a sync state comes back equal, with the keys of status --json, and one of fewer members reads with their initial values")
    func syncState() throws {
        var state = SyncState()
        state.remote = "https://kinto.example/v1/buckets/b"
        (state.pendingRecords, state.unacknowledgedEvents, state.rejectedRecords) = (2, 3, 1)
        (state.missingFromServer, state.openConflicts, state.skippedRecords) = (["Holiday": ["h1", "h2"]], 1, 4)
        state.lastSync = LastSync(at: 1_780_000_000_123, result: .failed, startedAfter: 12, error: "cannot reach the server", interrupted: true)
        try expectRoundTrip(state)
        try expectRoundTrip(SyncState())
        let object = try JSONParser.parse(String(decoding: try JSONEncoder().encode(state), as: UTF8.self)).objectValue
        #expect(object?["lastSync"]?.objectValue?["at"] == "2026-05-28T20:26:40.123Z", "\(String(describing: object))")
        #expect(object?["inSync"] == false && object?["summary"]?.stringValue == state.summary, "\(String(describing: object))")
        let old = try JSONDecoder().decode(SyncState.self, from: Data(#"{"pendingRecords": 1}"#.utf8))
        #expect(old.pendingRecords == 1 && old.lastSync == nil && old.summary == "not in sync: never synced, 1 record to push")
    }

    @Test("a record value of every JSON type comes back equal through JSONEncoder and JSONDecoder, null as null")
    func jsonValues() throws {
        try expectRoundTrip(JSONValue.object(Self.fields))
        try expectRoundTrip(Self.fields)
        let data = try JSONEncoder().encode(JSONValue.object(["a": .null]))
        #expect(String(decoding: data, as: UTF8.self) == #"{"a":null}"#)
    }

    @Test("through a Foundation coder a number is an Int64, UInt64 or Double: 1.0 comes back as 1, as documented; evsync's encoder keeps the literal")
    func numberLimits() throws {
        let fraction = JSONValue.number(JSONNumber("1.0")!)
        let back = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(fraction))
        #expect(back == 1)
        #expect(try JSONValueEncoder.encode(["value": fraction]) == ["value": fraction])
        #expect(JSONWriter.string(try JSONValueEncoder.encode(["value": fraction])) == #"{"value":1.0}"#)
    }

    @Test("an event of each kind comes back equal, and encodes as log tail --json prints it", arguments: events)
    func event(_ event: Event) throws {
        try expectRoundTrip(event)
        let printed = try JSONParser.parse(EventJSON.encode(event))
        #expect(try JSONValueEncoder.encode(event) == printed)
        // What the CLI printed decodes as the event.
        #expect(try JSONDecoder().decode(Event.self, from: Data(EventJSON.encode(event))) == event)
    }

    @Test("an event of a newer format is refused")
    func newerEvent() throws {
        var object = try #require(try JSONParser.parse(EventJSON.encode(Self.events[0])).objectValue)
        object["format"] = 2
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Event.self, from: Data(JSONWriter.encode(.object(object)))) }
    }

    @Test("what blame, diff, why, history, revert and a record read give comes back equal")
    func auditResults() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "h1", fields: ["name": "Christmas", "date": "2026-12-25", "details": "Presents"])
            try store.add("Holiday", id: "h2", fields: ["name": "Easter", "date": "2026-04-05"])
            try store.edit("Holiday", id: "h1", set: ["name": "Christmas Day"], unset: ["details"])
            try store.delete("Holiday", id: "h2")

            try expectRoundTrip(try #require(try store.blame("Holiday", id: "h1")))
            var diffs: [RecordDiff] = []
            try store.diff(from: .seq(0)) { diffs.append($0) }
            try store.diff(from: .seq(2)) { diffs.append($0) }
            #expect(Set(diffs.map(\.kind)) == [.added, .changed, .deleted])
            try expectRoundTrip(diffs)
            #expect(try JSONValueEncoder.encode(diffs[0]).objectValue?["change"] == "added")
            try expectRoundTrip(try #require(try store.whyPending("Holiday", id: "h1")))
            try expectRoundTrip(try #require(try store.whyPending("Holiday", id: "h2")))
            try expectRoundTrip(try store.history(of: "h1"))
            try expectRoundTrip(try store.revert("Holiday", id: "h1", to: .seq(1), dryRun: true))
            try expectRoundTrip(try store.revert("Holiday", id: "h2", to: .seq(2)))
            try expectRoundTrip(try store.records("Holiday"))
        }
    }

    @Test("a field that changed to or from null keeps its null, and one absent stays absent")
    func nullFields() throws {
        let change = FieldChange(field: "details", old: .null, new: nil)
        try expectRoundTrip(change)
        #expect(try JSONParser.parse(Array(JSONEncoder().encode(change))) == ["field": "details", "old": .null])
        try expectRoundTrip(PendingField(field: "details", local: nil, server: .null, since: Self.events[0]))
        try expectRoundTrip(RecordProjection(row: ["name": .null], shadow: nil, version: RemoteVersion(12)))
        try expectRoundTrip([SkippedRecord(entity: "Holiday", id: nil, version: RemoteVersion("x"), reason: "no id")])
    }
}
