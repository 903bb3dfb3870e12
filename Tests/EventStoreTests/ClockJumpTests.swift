import Foundation
import Testing
@testable import EventStore
import TestSupport

/// A clock that jumps back or forward between edits: every reading of the past names one point for one time.
@Suite("Clocks that jump")
struct ClockJumpTests {
    static let hour: Int64 = 3_600_000
    static let noon: Int64 = 1_798_804_800_000   // 2027-01-01T12:00:00Z

    /// What each reading of the past gives for `time`: `record(asOf:)`, `records(asOf:)`, `diff`'s start and `revert`'s point.
    static func readings(_ store: Store, at time: Int64) throws -> (record: JSONObject?, listed: JSONObject?, diffFrom: UInt64, revertTo: UInt64?) {
        let point = LogPoint.time(time)
        return (try store.record("Holiday", id: "h", asOf: point)?.fields,
                try store.records("Holiday", asOf: point).first { $0.id == "h" }?.fields,
                try store.diff(from: point) { _ in }.from,
                try store.revert("Holiday", id: "h", to: point, dryRun: true).point)
    }

    @Test("an edit made while the clock was two hours behind is stamped no earlier than the event before it")
    func stampsNeverGoBack() throws {
        let clock = ManualClock(at: Self.noon)
        try withTemporaryStore(clock: clock.now) { store, _ in
            try store.add("Holiday", id: "h", fields: ["name": "A", "date": "2027-01-01"])
            clock.advance(by: -2 * Self.hour)
            let edit = try #require(try store.edit("Holiday", id: "h", set: ["name": "B"]))
            #expect(edit.at == Self.noon, "stamped as the event before it, not two hours earlier")
            clock.advance(by: 3 * Self.hour)
            #expect(try store.delete("Holiday", id: "h").at == Self.noon + Self.hour)
            let times = try store.history(of: "h").map(\.at)
            #expect(times == times.sorted())
        }
    }

    @Test("every reading of the past agrees on each time, on a store whose clock jumped before the rule (times out of order)")
    func oneAnswerOnAnOlderStore() throws {
        let clock = ManualClock(at: Self.noon)
        try withTemporaryStore(clock: clock.now) { store, directory in
            // Events 1–4: created at noon, edited at 10:00 (the clock two hours behind, as an older evsync
            // stamped it), edited at 13:00, edited at 11:00 (behind again).
            try store.add("Holiday", id: "h", fields: ["name": "A", "date": "2027-01-01"])
            try store.edit("Holiday", id: "h", set: ["name": "B"])
            try store.edit("Holiday", id: "h", set: ["name": "C"])
            try store.edit("Holiday", id: "h", set: ["name": "D"])
            try Self.restamp(store, times: [Self.noon, Self.noon - 2 * Self.hour, Self.noon + Self.hour, Self.noon - Self.hour])
            let reopened = try Store(directory: directory.path)
            // The rule: the log up to the first event stamped after the time.
            let expected: [(Int64, UInt64, String?)] = [
                (Self.noon - 3 * Self.hour, 0, nil),          // before everything
                (Self.noon - 2 * Self.hour, 0, nil),          // event 2's time, but event 1 (noon) comes first and is later
                (Self.noon, 2, "B"),                          // events 1 and 2; event 3 (13:00) is later
                (Self.noon + Self.hour, 4, "D"),              // everything
            ]
            for (time, seq, name) in expected {
                let reading = try Self.readings(reopened, at: time)
                #expect(reading.diffFrom == seq && reading.revertTo == seq, "at \(time): \(reading)")
                #expect(reading.record?["name"]?.stringValue == name && reading.listed == reading.record, "at \(time): \(reading)")
            }
        }
    }

    @Test("on a store stamped in order, a time is found by bisection and names the same point as a scan")
    func bisectionMatchesTheRule() throws {
        let clock = ManualClock(at: Self.noon)
        try withTemporaryStore(clock: clock.now) { store, _ in
            try store.add("Holiday", id: "h", fields: ["name": "N0", "date": "2027-01-01"])
            for n in 1...20 {
                clock.advance(by: n % 3 == 0 ? -Self.hour : 60_000)   // the clock jumps back every third edit
                try store.edit("Holiday", id: "h", set: ["name": .string("N\(n)")])
            }
            let events = try store.history(of: "h")
            for probe in stride(from: Self.noon - Self.hour, through: Self.noon + Self.hour, by: 7 * 60_000) {
                let scanned = events.prefix { $0.at <= probe }.last?.seq ?? 0
                let reading = try Self.readings(store, at: probe)
                #expect(reading.diffFrom == scanned && reading.revertTo == scanned)
                #expect(reading.record?["name"] == events.first { $0.seq == scanned }.map { _ in .string("N\(scanned - 1)") })
                #expect(reading.listed == reading.record)
            }
        }
    }

    @Test("one event made while the clock ran a year ahead does not freeze the store's time: later events are found at their real times, and only it is marked")
    func oneJumpForward() throws {
        let clock = ManualClock(at: Self.noon)
        let year: Int64 = 365 * 24 * Self.hour
        try withTemporaryStore(clock: clock.now) { store, directory in
            try store.add("Holiday", id: "h", fields: ["name": "A", "date": "2027-01-01"])          // 1, noon
            clock.advance(by: year)
            try store.add("Holiday", id: "ahead", fields: ["name": "Ahead", "date": "2027-01-01"])  // 2, a year ahead
            clock.advance(by: -year + Self.hour)
            try store.edit("Holiday", id: "h", set: ["name": "B"])                                  // 3, 13:00
            clock.advance(by: Self.hour)
            try store.edit("Holiday", id: "h", set: ["name": "C"])                                  // 4, 14:00
            #expect(try store.history(of: "h").map(\.at) == [Self.noon, Self.noon + Self.hour, Self.noon + 2 * Self.hour],
                    "stamped at their real times")
            #expect(try store.misstampedEvents() == [2...2], "the one event whose time is wrong")
            for reopened in [store, try Store(directory: directory.path)] {
                let expected: [(Int64, UInt64, String)] = [(Self.noon, 2, "A"), (Self.noon + Self.hour + 1, 3, "B"), (Self.noon + 3 * Self.hour, 4, "C")]
                for (time, seq, name) in expected {
                    let reading = try Self.readings(reopened, at: time)
                    #expect(reading.diffFrom == seq && reading.revertTo == seq, "at \(time): \(reading)")
                    #expect(reading.record?["name"]?.stringValue == name && reading.listed == reading.record, "at \(time): \(reading)")
                }
                #expect(try reopened.records("Holiday", asOf: .time(Self.noon + 3 * Self.hour)).map(\.id).sorted() == ["ahead", "h"])
            }
        }
    }

    @Test("a clock set back (within ten minutes, or with nothing before the last events) still stamps as the last event")
    func clockSetBackStillClamps() throws {
        let clock = ManualClock(at: Self.noon)
        try withTemporaryStore(clock: clock.now) { store, _ in
            try store.add("Holiday", id: "h", fields: ["name": "A", "date": "2027-01-01"])
            clock.advance(by: 2 * Self.hour)
            try store.edit("Holiday", id: "h", set: ["name": "B"])
            clock.advance(by: -5 * 60_000)
            #expect(try store.edit("Holiday", id: "h", set: ["name": "C"])?.at == Self.noon + 2 * Self.hour, "five minutes back: the last event's time")
            #expect(try store.misstampedEvents().isEmpty)
        }
    }

    /// Rewrites the events' times, as an evsync before the rule would have stamped them, and drops the
    /// mark that says they are in order.
    static func restamp(_ store: Store, times: [Int64]) throws {
        try store.environment.write { transaction in
            for (index, time) in times.enumerated() {
                var event = try #require(try store.log.event(seq: UInt64(index + 1), in: transaction))
                event.at = time
                try transaction.put(Keys.sequence(event.seq), EventCoding.encode(event, encodedSet: nil), in: store.log.events)
            }
            _ = try transaction.delete(Array(Store.MetaKey.stampsInOrder.utf8), in: store.meta)
        }
    }
}
