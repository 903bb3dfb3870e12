import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Damage to the log is found and named by the event it is in: a changed
/// byte (the checksum), an event out of place, a gap; and the events older
/// evsyncs stored, without a checksum, stay readable.
@Suite("Log verification")
struct LogVerificationTests {
    static let christmas: JSONObject = ["name": "Christmas", "date": "2026-12-25", "observedBy": ["FR", "DE"]]

    /// Three events: h created, h edited (its event 2), k created.
    static func seed(_ path: String) throws {
        let store = try Store(directory: path, create: true)
        try store.add("Holiday", id: "h", fields: christmas)
        try store.edit("Holiday", id: "h", set: ["details": "Presents"], unset: ["observedBy"])
        try store.add("Holiday", id: "k", fields: ["name": "Kings", "date": "2027-01-06"])
    }

    @Test("a store of format-1 events (an older evsync's) reads and verifies, and takes format-2 events after them")
    func format1Store() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let old: [Event]
            do {
                let store = try Store(directory: path, create: true)
                let id = RecordID.generate()
                func event(_ kind: Event.Kind, _ origin: Event.Origin = .local, id: String, set: JSONObject = [:], unset: [String] = [],
                           version: RemoteVersion? = nil, server: RecordState? = nil) -> Event {
                    Event(eventID: RecordID.generate(), at: 1_795_000_000_000, entity: "Holiday", recordID: id, kind: kind, origin: origin,
                          author: "me@old", set: set, unset: unset, version: version, server: server)
                }
                old = try store.appendAsFormat1([
                    event(.created, id: id, set: Self.christmas),
                    event(.updated, id: id, set: ["details": "Presents"], unset: ["observedBy"]),
                    event(.acknowledged, id: id, version: 7, server: .present(["name": "Christmas", "date": "2026-12-25", "details": "Presents"])),
                    event(.created, .remote, id: "srv", set: ["name": "Server", "date": "2026-05-01"], version: 8),
                    event(.deleted, .remote, id: "srv", version: 9),
                ])
                #expect(try store.storedEvent(1)?.first == UInt8(ascii: "{"))
            }
            let store = try Store(directory: path)
            #expect(try store.verifyLog() == LogVerification(eventsChecked: 5, withoutChecksum: 5, damage: nil))
            #expect(try store.lastEvents(10) == old)
            #expect(try store.history(of: old[0].recordID) == Array(old[0...2]))
            #expect(try store.record("Holiday", id: old[0].recordID, asOf: .seq(1))?.fields == Self.christmas)
            #expect(try store.layout() == "2", "reading changes nothing")

            // Appending: format 2 after format 1, and the store says so to older evsyncs.
            try store.edit("Holiday", id: old[0].recordID, set: ["name": "Noël"])
            try store.add("Holiday", id: "new", fields: ["name": "New", "date": "2027-01-01"])
            #expect(try store.storedEvent(6)?.first == 2)
            #expect(try store.layout() == Store.layoutVersion)
            #expect(try store.verifyLog() == LogVerification(eventsChecked: 7, withoutChecksum: 5, damage: nil))
            #expect(try store.lastEvents(10).map(\.seq) == Array(1...7))
            #expect(try store.history(of: old[0].recordID).map(\.seq) == [1, 2, 3, 6])
            #expect(try store.record("Holiday", id: old[0].recordID)?.fields["name"] == "Noël")
            #expect(try store.verifyViews().isEmpty)
            #expect(try store.rebuildViews() == 7)
            #expect(try store.records("Holiday").map(\.id) == [old[0].recordID, "new"].sorted())
        }
    }

    @Test("any one byte of a stored event changed: verifyLog names it, and every read of the log fails naming it")
    func everyByteOfAStoredEvent() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory.appendingPathComponent("pristine").path
            try Self.seed(pristine)
            let stored = try #require(try Store(directory: pristine).storedEvent(2))
            #expect(stored.first == 2)
            for position in stored.indices {
                let path = directory.appendingPathComponent("damaged-\(position)").path
                try FileManager.default.copyItem(atPath: pristine, toPath: path)
                defer { try? FileManager.default.removeItem(atPath: path) }
                var changed = stored
                changed[position] ^= position.isMultiple(of: 2) ? 0x01 : 0x80
                #expect(try patchDataFile(ofStore: path, stored, changed) > 0)
                let store = try Store(directory: path)
                let result = try store.verifyLog()
                #expect(result.eventsChecked == 1, "byte \(position)")
                let damage = try #require(result.damage, "byte \(position)")
                #expect(damage.seq == 2 && !damage.isNewerFormat, "byte \(position): \(damage)")
                let reads: [(String, () throws -> Void)] = [
                    ("history", { _ = try store.history(of: "h") }),
                    ("lastEvents", { _ = try store.lastEvents(2) }),
                    ("events(after:)", { _ = try store.events(after: 0) }),
                    ("record asOf", { _ = try store.record("Holiday", id: "h", asOf: .seq(3)) }),
                    ("records asOf", { _ = try store.records("Holiday", asOf: .seq(3)) }),
                    ("verifyViews", { _ = try store.verifyViews() }),
                    ("rebuildViews", { try store.rebuildViews() }),
                ]
                for (name, read) in reads {
                    let error = try #require(throws: StoreError.self, "\(name), byte \(position)") { try read() }
                    #expect(error.code == .corrupt, "\(name), byte \(position)")
                    #expect(error.message.contains("is damaged (corrupt event 2 in the log: "), "\(name), byte \(position): \(error.message)")
                }
                // The views are intact, and still answer.
                #expect(try store.record("Holiday", id: "h")?.fields["details"] == "Presents")
            }
        }
    }

    @Test("an event missing from the log, or stored under another's seq, is damage named by its seq")
    func outOfPlace() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            try Self.seed(path)
            let store = try Store(directory: path)
            let third = try #require(try store.storedEvent(3))
            try store.environment.write { transaction in
                _ = try transaction.delete(Keys.sequence(2), in: store.log.events)
            }
            var result = try store.verifyLog()
            #expect(result.damage == LogVerification.Damage(seq: 2, problem: "event is missing (the log goes on at event 3)", isNewerFormat: false))
            #expect(result.eventsChecked == 1)
            for read in [{ _ = try store.lastEvents(5) }, { _ = try store.events(after: 1) }, { try store.rebuildViews() }] {
                let error = try #require(throws: StoreError.self) { try read() }
                #expect(error.message.contains("corrupt event 2 in the log: event is missing"), "\(error.message)")
            }

            // Event 3's bytes under key 2.
            try store.environment.write { transaction in
                try transaction.put(Keys.sequence(2), third, in: store.log.events)
            }
            result = try store.verifyLog()
            #expect(result.damage == LogVerification.Damage(seq: 2, problem: "event stored as 2 says it is event 3", isNewerFormat: false))
            let error = try #require(throws: StoreError.self) { try store.history(of: "h") }
            #expect(error.message.contains("corrupt event 2 in the log: event stored as 2 says it is event 3"), "\(error.message)")
        }
    }

    @Test("verifyLog writes nothing")
    func readOnly() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            try Self.seed(path)
            let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
            let store = try Store(directory: path)
            #expect(try store.verifyLog() == LogVerification(eventsChecked: 3, withoutChecksum: 0, damage: nil))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
        }
    }
}

extension Store {
    /// The layout mark in `meta`.
    func layout() throws -> String? {
        try environment.read { try $0.get(Array("layout".utf8), in: meta) }.map { String(decoding: $0, as: UTF8.self) }
    }
}
