import Foundation
import Testing
@testable import EventStore
import TestSupport

/// `verifyViews` must notice any way the stored views drift from the log,
/// and `rebuildViews` must repair it.
@Suite("View verification")
struct ViewVerificationTests {
    /// A store with a few records: Holiday a (edited), Holiday b, Birthday a, and a deleted Holiday c.
    static func populate(_ store: Store) throws {
        try store.add("Holiday", id: "a", fields: ["name": "A", "date": "2026-01-01"])
        try store.add("Holiday", id: "b", fields: ["name": "B", "date": "2026-02-01"])
        try store.add("Birthday", id: "a", fields: ["name": "Ada", "date": "1815-12-10"])
        try store.add("Holiday", id: "c", fields: ["name": "C", "date": "2026-03-01"])
        try store.edit("Holiday", id: "a", set: ["details": "edited"])
        try store.delete("Holiday", id: "c")
    }

    /// The view entry of a record that exists only here.
    static func entry(row: JSONObject) throws -> [UInt8] {
        try #require(RecordEntry.encode(RecordProjection(row: row)))
    }

    enum Tampering: String, CaseIterable, Sendable {
        case changeRow, deleteRow, addRow, deleteOutboxEntry, addOutboxEntry, deleteHistory, changeShadow
    }

    @Test("tampering is detected, verification changes nothing, and rebuilding repairs", arguments: Tampering.allCases)
    func detectsAndRepairs(tampering: Tampering) throws {
        try withTemporaryStore { store, _ in
            try Self.populate(store)
            #expect(try store.verifyViews().isEmpty)
            let recordsBefore = try store.records("Holiday")
            let statusBefore = try store.status()

            let views = store.log.views
            let expected: ViewDifference = try store.environment.write { transaction in
                switch tampering {
                case .changeRow:
                    try transaction.put(Keys.record(entity: "Holiday", id: "a"), Self.entry(row: ["date": "2026-01-01", "name": "Tampered"]), in: views.records)
                    return ViewDifference(view: "records", key: "holiday/a", problem: "different")
                case .deleteRow:
                    try #require(try transaction.delete(Keys.record(entity: "Holiday", id: "b"), in: views.records))
                    return ViewDifference(view: "records", key: "holiday/b", problem: "missing")
                case .addRow:
                    try transaction.put(Keys.record(entity: "Holiday", id: "zz"), Self.entry(row: ["date": "2026-01-01", "name": "Ghost"]), in: views.records)
                    return ViewDifference(view: "records", key: "holiday/zz", problem: "unexpected")
                case .deleteOutboxEntry:
                    try #require(try transaction.delete(Keys.record(entity: "Birthday", id: "a"), in: views.outbox))
                    return ViewDifference(view: "outbox", key: "birthday/a", problem: "missing")
                case .addOutboxEntry:
                    try transaction.put(Keys.record(entity: "Holiday", id: "c"), [], in: views.outbox)
                    return ViewDifference(view: "outbox", key: "holiday/c", problem: "unexpected")
                case .deleteHistory:
                    // All duplicates of the key: the history of Holiday b (one event).
                    try #require(try transaction.delete(Keys.history(entity: "Holiday", id: "b"), in: views.history))
                    return ViewDifference(view: "history", key: "holiday/b", problem: "missing")
                case .changeShadow:
                    // The row as it is, but a shadow as if the server had heard of it: no longer pending.
                    var projection = try views.projection(entity: "Holiday", id: "a", in: transaction)
                    projection.shadow = projection.row
                    projection.version = 3
                    try transaction.put(Keys.record(entity: "Holiday", id: "a"), try #require(RecordEntry.encode(projection)), in: views.records)
                    return ViewDifference(view: "records", key: "holiday/a", problem: "different")
                }
            }

            let differences = try store.verifyViews()
            #expect(differences == [expected])
            #expect(differences.first?.description == "\(expected.view) \(expected.key): \(expected.problem)")
            // Verifying twice gives the same answer: the first run changed nothing.
            #expect(try store.verifyViews() == differences)

            #expect(try store.rebuildViews() == 6)
            #expect(try store.verifyViews().isEmpty)
            #expect(try store.records("Holiday") == recordsBefore)
            #expect(try store.status() == statusBefore)
        }
    }

    @Test("every difference is reported, up to the limit")
    func manyDifferences() throws {
        try withTemporaryStore { store, _ in
            try Self.populate(store)
            try store.environment.write { transaction in
                try transaction.empty(store.log.views.records)
                try transaction.empty(store.log.views.outbox)
            }
            let differences = try store.verifyViews()
            #expect(differences.map(\.description).sorted() == [
                "outbox birthday/a: missing",
                "outbox holiday/a: missing",
                "outbox holiday/b: missing",
                "records birthday/a: missing",
                "records holiday/a: missing",
                "records holiday/b: missing",
            ])
            #expect(try store.verifyViews(limit: 2).count == 2)
            #expect(try store.records("Holiday").isEmpty, "verification does not repair")
            try store.rebuildViews()
            #expect(try store.records("Holiday").map(\.id) == ["a", "b"])
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("a changed history entry is reported")
    func changedHistoryEntry() throws {
        try withTemporaryStore { store, _ in
            try Self.populate(store)
            try store.environment.write { transaction in
                let key = Keys.history(entity: "Holiday", id: "b")
                try #require(try transaction.delete(key, in: store.log.views.history))
                var forged = Keys.sequence(2)
                forged.append(contentsOf: [2, 0])  // "deleted" instead of "created"
                try transaction.put(key, forged, in: store.log.views.history)
            }
            #expect(try store.verifyViews() == [ViewDifference(view: "history", key: "holiday/b", problem: "different")])
            try store.rebuildViews()
            #expect(try store.verifyViews().isEmpty)
            #expect(try store.history(of: "b").map(\.kind) == [.created])
        }
    }

    @Test("verification adds no database to the store, and its scratch directory is removed")
    func verificationLeavesNoScratch() throws {
        try withTemporaryStore { store, directory in
            try Self.populate(store)
            let names = try store.environment.read { try store.environment.databaseNames(in: $0) }
            #expect(names == ["events", "history", "index-entries", "meta", "outbox", "records"])
            var scratch: String?
            let differences = try store.verifyViews(limit: 100) { directory in
                #expect(FileManager.default.fileExists(atPath: directory + "/data.mdb"))
                scratch = directory
            }
            #expect(differences.isEmpty)
            #expect(try store.environment.read { try store.environment.databaseNames(in: $0) } == names)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["data.mdb", "lock.mdb"])
            let used = try #require(scratch, "the replay happens in a scratch directory")
            #expect(!FileManager.default.fileExists(atPath: used))
        }
    }

    @Test("verification takes no write lock: the store can be written while it runs")
    func verificationDoesNotBlockWriters() throws {
        try withTemporaryStore { store, _ in
            try Self.populate(store)
            let differences = try store.verifyViews(limit: 100) { _ in
                // Another thread writes while the replay's snapshot is open; a
                // verification holding the write lock would keep it waiting.
                let added = DispatchSemaphore(value: 0)
                Thread {
                    _ = try? store.add("Holiday", id: "meanwhile", fields: ["name": "M", "date": "2026-04-01"])
                    added.signal()
                }.start()
                #expect(added.wait(timeout: .now() + 30) == .success, "the add waited for the verification")
            }
            // The verification compared the snapshot it started with.
            #expect(differences.isEmpty)
            #expect(try store.record("Holiday", id: "meanwhile") != nil)
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("rebuilding an intact store changes nothing")
    func rebuildIsIdempotent() throws {
        try withTemporaryStore { store, _ in
            #expect(try store.rebuildViews() == 0)
            try Self.populate(store)
            let snapshot = try Self.dump(store)
            #expect(try store.rebuildViews() == 6)
            #expect(try Self.dump(store) == snapshot)
            #expect(try store.rebuildViews() == 6)
            #expect(try Self.dump(store) == snapshot)
        }
    }

    /// Every entry of every view, as bytes.
    static func dump(_ store: Store) throws -> [[[UInt8]]] {
        try store.environment.read { transaction in
            try store.log.views.all.map { database in
                let cursor = try transaction.cursor(database)
                var entries: [[UInt8]] = []
                var entry = try cursor.first()
                while let current = entry {
                    entries.append(Array(current.key) + [0xFF] + Array(current.value))
                    entry = try cursor.next()
                }
                return entries
            }
        }
    }
}
