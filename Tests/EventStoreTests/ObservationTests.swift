import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `observeRecords` and `observeEvents`: what they yield, and what they read to do it.
/// Every wait is bounded by the suite's time limit, so a hang fails rather than stalls.
@Suite("Observation", .timeLimit(.minutes(2)))
struct ObservationTests {
    static func holiday(_ name: String) -> JSONObject { ["name": .string(name), "date": "2026-01-01"] }

    @Test("observeRecords reads its table again only when events of its entity were appended")
    func observeRecordsWakesOnlyForItsEntity() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "h1", fields: Self.holiday("One"))

        let (steps, stepsContinuation) = AsyncStream<Store.ObservationStep>.makeStream()
        var stepIterator = steps.makeAsyncIterator()
        var emissions = store.observeRecords("holiday", every: .milliseconds(10), probe: { stepsContinuation.yield($0) })
            .makeAsyncIterator()
        /// The wake-ups up to the one that has seen event `seq`.
        func wakeUps(through seq: UInt64) async -> [Store.ObservationStep] {
            var seen: [Store.ObservationStep] = []
            while let step = await stepIterator.next() {
                seen.append(step)
                if step.seenThrough >= seq { break }
            }
            return seen
        }

        #expect(try await emissions.next()?.map(\.id) == ["h1"])
        #expect(await wakeUps(through: 1) == [Store.ObservationStep(seenThrough: 1, readTable: true)])

        // Other entities' events: looked at, but the table is not read and nothing is yielded.
        try store.add("Birthday", id: "b1", fields: ["name": "Ada", "date": "1815-12-10"])
        try store.edit("Birthday", id: "b1", set: ["name": "Ada Lovelace"])
        try store.add("Birthday", id: "b2", fields: ["name": "Alan", "date": "1912-06-23"])
        let quiet = await wakeUps(through: 4)
        #expect(!quiet.isEmpty)
        #expect(quiet.allSatisfy { !$0.readTable }, "\(quiet)")

        // One of its own: read, and yielded (the next emission, so none came in between).
        try store.edit("Holiday", id: "h1", set: ["details": "First"])
        let woken = await wakeUps(through: 5)
        #expect(woken.last == Store.ObservationStep(seenThrough: 5, readTable: true), "\(woken)")
        #expect(try await emissions.next()?.first?.fields["details"] == "First")

        // Many events of another entity, then one of its own, seen in one wake-up or several: one read.
        let birthdays = (0..<3_000).map { #"{"id":"p\#($0)","name":"P","date":"2000-01-01"}"# }.joined(separator: "\n")
        try Self.withFile(birthdays, in: directory) { _ = try store.importRecords("Birthday", from: $0) }
        try store.delete("Holiday", id: "h1")
        let mixed = await wakeUps(through: 3_006)
        #expect(mixed.filter(\.readTable).count == 1, "\(mixed)")
        #expect(mixed.last?.readTable == true)
        #expect(try await emissions.next() == [])
    }

    @available(*, deprecated, message: "tests a deprecated observation, kept working")
    @Test("observeRecords of an unknown entity fails")
    func observeUnknownEntity() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        await #expect(throws: StoreError.self) {
            for try await _ in store.observeRecords("Unicorn", every: .milliseconds(10)) {}
        }
    }

    @Test("observeEvents yields the log after a point, then each event appended, each once and in order")
    func observeEventsFollowsTheLog() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        for n in 1...3 { try store.add("Holiday", id: "h\(n)", fields: Self.holiday("H\(n)")) }

        var events = store.observeEvents(after: 1, every: .milliseconds(10)).makeAsyncIterator()
        #expect(try await events.next()?.seq == 2)
        #expect(try await events.next()?.seq == 3)

        // More than one batch at once, appended while the consumer waits.
        let lines = (0..<2_500).map { #"{"id":"i\#($0)","name":"I","date":"2026-01-01"}"# }.joined(separator: "\n")
        try Self.withFile(lines, in: directory) { _ = try store.importRecords("Holiday", from: $0) }
        var seqs: [UInt64] = []
        while seqs.count < 2_500, let event = try await events.next() { seqs.append(event.seq) }
        #expect(seqs == Array(4...2_503))

        // An event appended later is yielded as it is.
        try store.add("Birthday", id: "b", fields: ["name": "Ada", "date": "1815-12-10"])
        let last = try await events.next()
        #expect(last?.seq == 2_504)
        #expect(last?.entity == "Birthday" && last?.recordID == "b" && last?.kind == .created)
    }

    @Test("observeEvents ends when its consumer is cancelled")
    func observeEventsEndsOnCancellation() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "h", fields: Self.holiday("H"))
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let consumer = Task {
            var count = 0
            for try await _ in store.observeEvents(after: 0, every: .milliseconds(10)) {
                count += 1
                startedContinuation.yield()
            }
            return count
        }
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        consumer.cancel()
        #expect(try await consumer.value == 1)
    }

    @Test("an event's entity is read from its envelope, not from a field named entity")
    func entityOfAStoredEvent() throws {
        var scratch: [UInt8] = []
        func isHoliday(_ bytes: [UInt8]) throws -> Bool {
            try bytes.withUnsafeBytes { try EventCoding.isEvent($0, of: Array("Holiday".utf8), scratch: &scratch) }
        }
        func isHoliday(_ json: String) throws -> Bool { try isHoliday(Array(json.utf8)) }
        let event = Event(seq: 7, eventID: "e", at: 0, entity: "Birthday", recordID: "b", kind: .created, origin: .local,
                          author: "me", set: ["entity": "Holiday"])
        var holiday = event
        holiday.entity = "Holiday"
        // Both stored forms: format 2, and format 1 (JSON) as older stores hold it.
        for encode in [EventCoding.encode(_:encodedSet:), EventJSON.encode(_:encodedSet:)] {
            #expect(try !isHoliday(encode(event, nil)))
            #expect(try isHoliday(encode(holiday, nil)))
            for uuid in [RecordID.generate(), "Holiday", "Holidays"] {
                var other = holiday
                other.eventID = uuid
                other.recordID = uuid
                #expect(try isHoliday(encode(other, nil)))
            }
        }
        // Members in another order, nested objects and escapes before `entity` are read right.
        #expect(try isHoliday(#"{"set":{"entity":"Birthday","x":[1,{"y":"\""}]},"seq":1,"entity":"Hol\u0069day","id":"a"}"#))
        #expect(try !isHoliday(#"{"set":{"entity":"Holiday"},"entity":"Birthday"}"#))
        #expect(throws: EventDecodingError.self) { try isHoliday(#"{"seq":1}"#) }
    }

    /// Calls `body` with a descriptor reading a file holding `text`.
    @Test("a commit in this process wakes observers at once: with an hour between looks, each write is still seen")
    func commitWakesObservers() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        var seqs = store.logChanges(every: .seconds(3_600)).makeAsyncIterator()
        #expect(try await seqs.next() == 0)
        for n in 1...3 {
            try store.add("Holiday", id: "h\(n)", fields: Self.holiday("H\(n)"))
            #expect(try await seqs.next() == UInt64(n))
        }
        _ = try await store.write { try $0.add("Holiday", id: "h4", fields: Self.holiday("H4")) }
        #expect(try await seqs.next() == 4)
    }

    @available(*, deprecated, message: "tests a deprecated observation, kept working")
    @Test("observe yields every record first, then after each commit the records with what was inserted, updated and deleted")
    func observeKeepsTheTableCurrent() async throws {
        let directory = try TemporaryDirectory("evsync-tests")
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "b", fields: Self.holiday("B"))
        try store.add("Holiday", id: "d", fields: Self.holiday("D"))
        var updates = store.observe("holiday").makeAsyncIterator()
        let first = try #require(try await updates.next())
        #expect(first.records.map(\.id) == ["b", "d"])
        #expect(first.changes.inserted.map(\.id) == ["b", "d"] && first.changes.seq == 2)

        _ = try await store.write { transaction in
            try transaction.add("Holiday", id: "c", fields: Self.holiday("C"))
            try transaction.add("Holiday", id: "a", fields: Self.holiday("A"))
            try transaction.edit("Holiday", id: "d", set: ["details": "changed"])
            try transaction.delete("Holiday", id: "b")
        }
        let second = try #require(try await updates.next())
        #expect(second.records.map(\.id) == ["a", "c", "d"], "\(second)")
        #expect(second.records.last?.fields["details"] == "changed")
        #expect(second.changes.inserted.map(\.id).sorted() == ["a", "c"] && second.changes.updated.map(\.id) == ["d"])
        #expect(second.changes.deleted == ["b"] && second.changes.seq == 6)
        // Another entity's commit changes nothing here: the next element is the Holiday one after it.
        try store.add("Birthday", id: "p", fields: ["name": "Ada", "date": "1815-12-10"])
        try store.delete("Holiday", id: "a")
        let third = try #require(try await updates.next())
        #expect(third.records.map(\.id) == ["c", "d"] && third.changes.deleted == ["a"] && third.changes.seq == 8)
        // What observe keeps is what the store holds.
        #expect(third.records == (try store.records("Holiday")))
    }

    static func withFile<T>(_ text: String, in directory: TemporaryDirectory, _ body: (Int32) throws -> T) throws -> T {
        let path = directory.file("input-\(UUID().uuidString).jsonl")
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        return try body(descriptor)
    }
}
