import Foundation
import Testing
@testable import EventStore
import TestSupport

@Suite("History and as-of queries")
struct HistoryTests {
    @Test("history lists a record's events oldest first, and as-of shows each state")
    func historyAndAsOf() throws {
        let clock = ManualClock(at: 1_767_225_600_000)
        try withTemporaryStore(clock: clock.now) { store, _ in
            let v1: JSONObject = ["name": "Labour Day", "date": "2026-05-01"]
            let v2: JSONObject = ["name": "Labour Day", "date": "2026-05-01", "details": "Parades", "observedBy": ["FR", "DE"]]
            let v3: JSONObject = ["name": "May Day", "date": "2026-05-01", "observedBy": ["FR", "DE"]]
            let other: JSONObject = ["name": "Other", "date": "2026-06-01"]

            var events: [Event] = []
            events.append(try store.add("Holiday", id: "may", fields: v1))                                        // 1
            clock.advance(by: 1_000)
            events.append(try store.add("Holiday", id: "other", fields: other))                                   // 2
            clock.advance(by: 1_000)
            events.append(try #require(try store.edit("Holiday", id: "may", set: ["details": "Parades", "observedBy": ["FR", "DE"]])))  // 3
            clock.advance(by: 1_000)
            events.append(try #require(try store.edit("Holiday", id: "may", set: ["name": "May Day"], unset: ["details"])))  // 4
            clock.advance(by: 1_000)
            events.append(try store.delete("Holiday", id: "may"))                                                 // 5
            #expect(events.map(\.seq) == [1, 2, 3, 4, 5])

            let history = try store.history(of: "may")
            #expect(history.map(\.seq) == [1, 3, 4, 5])
            #expect(history.map(\.kind) == [.created, .updated, .updated, .deleted])
            #expect(history.allSatisfy { $0.origin == .local && $0.entity == "Holiday" && $0.recordID == "may" })
            #expect(history == [events[0], events[2], events[3], events[4]], "history returns the stored events")
            #expect(history[3].set.isEmpty)
            #expect(history[2].unset == ["details"])
            #expect(try store.history(of: "nobody").isEmpty)

            // As of each sequence number.
            let expected: [UInt64: JSONObject?] = [0: nil, 1: v1, 2: v1, 3: v2, 4: v3, 5: nil, 99: nil]
            for (seq, fields) in expected {
                #expect(try store.record("Holiday", id: "may", asOf: .seq(seq))?.fields == fields, "as of #\(seq)")
            }
            #expect(try store.record("Holiday", id: "may") == nil, "deleted now")
            #expect(try store.recordMap("Holiday", asOf: .seq(0)).isEmpty)
            #expect(try store.recordMap("Holiday", asOf: .seq(1)) == ["may": v1])
            #expect(try store.recordMap("Holiday", asOf: .seq(2)) == ["may": v1, "other": other])
            #expect(try store.recordMap("Holiday", asOf: .seq(3)) == ["may": v2, "other": other])
            #expect(try store.recordMap("Holiday", asOf: .seq(4)) == ["may": v3, "other": other])
            #expect(try store.recordMap("Holiday", asOf: .seq(5)) == ["other": other])
            #expect(try store.recordMap("Holiday") == ["other": other])
            #expect(try store.records("Birthday", asOf: .seq(5)).isEmpty)

            // As of a moment: the events at or before it count.
            #expect(try store.record("Holiday", id: "may", asOf: .time(events[0].at - 1)) == nil)
            let states: [JSONObject?] = [v1, v1, v2, v3, nil]
            for (event, fields) in zip(events, states) {
                #expect(try store.record("Holiday", id: "may", asOf: .time(event.at))?.fields == fields, "as of \(event.at)")
            }
            #expect(try store.recordMap("Holiday", asOf: .time(events[1].at - 1)) == ["may": v1])
            #expect(try store.recordMap("Holiday", asOf: .time(events[3].at)) == ["may": v3, "other": other])
            #expect(try store.recordMap("Holiday", asOf: .time(clock.now() + 60_000)) == ["other": other])
            // The times are the clock's, exactly: one second apart from its start.
            #expect(events.map(\.at) == (0..<5).map { 1_767_225_600_000 + Int64($0) * 1_000 })
            #expect(try store.recordMap("Holiday", asOf: .time(1_767_225_601_500)) == ["may": v1, "other": other])
        }
    }

    @Test("one id in two entities: history shows both, as-of keeps them apart")
    func sameIDInTwoEntities() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "x", fields: ["name": "H", "date": "2026-01-01"])
            try store.add("Birthday", id: "x", fields: ["name": "B", "date": "2000-01-01"])
            try store.edit("Holiday", id: "x", set: ["name": "H2"])
            try store.delete("Birthday", id: "x")
            try store.add("Holiday", id: "x-y", fields: ["name": "prefix neighbour", "date": "2026-01-01"])
            let history = try store.history(of: "x")
            #expect(history.map(\.seq) == [1, 2, 3, 4])
            #expect(history.map(\.entity) == ["Holiday", "Birthday", "Holiday", "Birthday"])
            #expect(try store.record("Birthday", id: "x", asOf: .seq(3))?.fields == ["name": "B", "date": "2000-01-01"])
            #expect(try store.record("Holiday", id: "x", asOf: .seq(2))?.fields == ["name": "H", "date": "2026-01-01"])
            #expect(try store.record("Birthday", id: "x") == nil)
            #expect(try store.history(of: "x-y").map(\.seq) == [5])
        }
    }

    @Test("a record deleted and re-created has one continuous history")
    func recreated() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "r", fields: ["name": "First", "date": "2026-01-01"])
            try store.delete("Holiday", id: "r")
            try store.add("Holiday", id: "r", fields: ["name": "Second", "date": "2026-01-02"])
            #expect(try store.history(of: "r").map(\.kind) == [.created, .deleted, .created])
            #expect(try store.record("Holiday", id: "r", asOf: .seq(1))?.fields["name"] == "First")
            #expect(try store.record("Holiday", id: "r", asOf: .seq(2)) == nil)
            #expect(try store.record("Holiday", id: "r", asOf: .seq(3))?.fields["name"] == "Second")
            #expect(try store.record("Holiday", id: "r")?.fields == ["name": "Second", "date": "2026-01-02"])
        }
    }

    @Test("LogPoint parses sequence numbers, dates and times")
    func logPoints() {
        #expect(LogPoint("0") == .seq(0))
        #expect(LogPoint("42") == .seq(42))
        #expect(LogPoint("2026-01-01") == .time(1_767_225_600_000))
        #expect(LogPoint("2026-01-01T00:00:00.250Z") == .time(1_767_225_600_250))
        #expect(LogPoint("-1") == nil)
        #expect(LogPoint("yesterday") == nil)
        #expect(LogPoint("") == nil)
    }

    @Test("the projection folds every kind of event")
    func projection() {
        func event(_ kind: Event.Kind, _ origin: Event.Origin, set: JSONObject = [:], unset: [String] = [], version: RemoteVersion? = nil,
                   server: RecordState? = nil, resolved: RecordState? = nil) -> Event {
            Event(eventID: "e", at: 0, entity: "Holiday", recordID: "a", kind: kind, origin: origin, author: "t",
                  set: set, unset: unset, version: version, server: server, resolved: resolved)
        }
        var projection = RecordProjection()
        #expect(!projection.isPending)
        projection.apply(event(.created, .local, set: ["name": "A", "details": "d"]))
        #expect(projection == RecordProjection(row: ["name": "A", "details": "d"]))
        #expect(projection.isPending)
        projection.apply(event(.acknowledged, .local, version: 1, server: .present(["name": "A", "details": "d"])))
        #expect(!projection.isPending)
        #expect(projection.version == 1)
        projection.apply(event(.updated, .local, set: ["name": "B"], unset: ["details"]))
        #expect(projection.row == ["name": "B"])
        #expect(projection.isPending)
        // A remote change of another field merges into the local row and moves the shadow.
        projection.apply(event(.updated, .remote, set: ["date": "2026-01-01"], version: 2))
        #expect(projection.row == ["name": "B", "date": "2026-01-01"])
        #expect(projection.shadow == ["name": "A", "details": "d", "date": "2026-01-01"])
        #expect(projection.version == 2)
        projection.apply(event(.conflict, .remote, version: 3, server: .present(["name": "S"]), resolved: .present(["name": "R"])))
        #expect(projection == RecordProjection(row: ["name": "R"], shadow: ["name": "S"], version: 3))
        projection.apply(event(.deleted, .remote, version: 4))
        #expect(projection == RecordProjection(row: nil, shadow: nil, version: 4))
        #expect(!projection.isPending)
        projection.apply(event(.created, .remote, set: ["name": "N"], version: 5))
        #expect(projection == RecordProjection(row: ["name": "N"], shadow: ["name": "N"], version: 5))
        projection.apply(event(.deleted, .local))
        #expect(projection.row == nil)
        #expect(projection.isPending)
        projection.apply(event(.acknowledged, .local, version: 6, server: .absent))
        #expect(projection == RecordProjection(row: nil, shadow: nil, version: 6))
    }
}
