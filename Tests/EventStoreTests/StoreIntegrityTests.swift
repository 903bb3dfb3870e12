import Foundation
import Testing
@testable import EventStore
import TestSupport

/// An existing store is never opened as a new one: an emptied data file,
/// lost databases and a log that ends early are `.corrupt`, and opening
/// (even to read) never creates what is missing.
@Suite("Store integrity at opening")
struct StoreIntegrityTests {
    /// A store at `directory/store` holding Holiday `h`, closed again; returns its path.
    static func storeWithOneRecord(in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("store").path
        let store = try Store(directory: path, create: true)
        try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
        return path
    }

    static func size(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    @Test("an empty data file is .corrupt, whether creating or not, and stays empty")
    func emptyDataFile() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            #expect(truncate(path + "/data.mdb", 0) == 0)
            for create in [false, true] {
                let error = try #require(throws: StoreError.self) { try Store(directory: path, create: create) }
                #expect(error.code == .corrupt)
                #expect(error.message == "the store at \(path) is damaged (data.mdb is empty: it holds not even LMDB's header)")
                #expect(error.remedy == .restoreFromBackup)
                #expect(try Self.size(path + "/data.mdb") == 0, "LMDB wrote a new store into the emptied file")
            }
        }
    }

    @Test("a view database that is missing is .corrupt, is not created by opening, and rebuilding repairs it",
          arguments: ViewDatabases.names)
    func missingView(_ name: String) throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            do {
                let store = try Store(directory: path)
                try store.environment.write { transaction in
                    let database = try #require(try store.environment.existingDatabase(name, in: transaction))
                    try transaction.drop(database)
                }
            }
            for create in [false, true] {
                let error = try #require(throws: StoreError.self) { try Store(directory: path, create: create) }
                #expect(error.code == .corrupt)
                #expect(error.message == "the views of the store at \(path) are damaged (its \(name) database is missing)")
                #expect(error.remedy == .rebuildViews)
            }
            do {
                let store = try Store(repairingViews: path)
                #expect(try store.rebuildViews() == 1)
            }
            let store = try Store(directory: path)
            #expect(try store.record("Holiday", id: "h")?.fields["name"] == "Christmas")
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("views replayed as the store opened are not replayed again by rebuildViews until the log grows")
    func repairedViewsAreReplayedOnce() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            func dropOutbox(_ store: Store) throws {
                try store.environment.write { transaction in
                    try transaction.drop(try #require(try store.environment.existingDatabase("outbox", in: transaction)))
                }
            }
            try dropOutbox(try Store(directory: path))
            let store = try Store(repairingViews: path)
            #expect(store.replayedAtOpening == 1)
            // Emptied behind the store's back: only a second replay would fill it again.
            try store.environment.write { transaction in try transaction.empty(store.log.views.outbox) }
            #expect(try store.rebuildViews() == 1)
            #expect(try !store.verifyViews().isEmpty, "the log was replayed a second time")
            try store.edit("Holiday", id: "h", set: ["details": "Presents"])
            #expect(try store.rebuildViews() == 2)
            #expect(try store.verifyViews().isEmpty)
        }
    }

    @Test("a store nothing was ever committed to is not found without create, and nothing is created in it")
    func neverCommitted() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            // What a creator killed between LMDB's first pages and its first commit leaves.
            _ = try Environment(directory: path, mapSize: 1 << 20, maxDatabases: 16)
            let before = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .notFound)
            #expect(error.message == "no store at \(path)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")) == before)
            let store = try Store(directory: path, create: true)
            try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
            #expect(try store.lastSeq() == 1)
        }
    }

    @Test("every commit that appends records where the log ends, in the same transaction")
    func logEndIsRecorded() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
            try store.edit("Holiday", id: "h", set: ["details": "Presents"])
            try store.rememberRemote("http://127.0.0.1:1/v1/buckets/b")
            #expect(try store.snapshot { try store.meta(Store.MetaKey.logEnd, in: $0) } == "2")
        }
    }

    @Test("a log that ends before the last event committed is .corrupt")
    func logEndsEarly() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            do {
                let store = try Store(directory: path)
                // What a tree left from an older commit looks like: the mark of a later one.
                try store.environment.write { try store.setMeta(Store.MetaKey.logEnd, "2000", in: $0) }
            }
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .corrupt)
            #expect(error.message == "the store at \(path) is damaged (its log ends at event 1, but events up to 2000 were committed)")
            #expect(error.remedy == .restoreFromBackup)
        }
    }

    @Test("a log whose count and last number disagree is .corrupt")
    func logWithAGap() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            do {
                let store = try Store(directory: path)
                try store.environment.write { transaction in
                    let event = try #require(try transaction.get(Keys.sequence(1), in: store.log.events))
                    try transaction.put(Keys.sequence(7), event, in: store.log.events)
                }
            }
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .corrupt)
            #expect(error.message == "the store at \(path) is damaged (its log holds 2 events, but its last is event 7)")
            #expect(error.remedy == .restoreFromBackup)
        }
    }

    @Test("a store written by an evsync that kept no log-end mark opens, and its next commit adds the mark")
    func storeWithoutMark() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            do {
                let store = try Store(directory: path)
                try store.environment.write { _ = try $0.delete(Array(Store.MetaKey.logEnd.utf8), in: store.meta) }
            }
            let store = try Store(directory: path)
            #expect(try store.snapshot { try store.meta(Store.MetaKey.logEnd, in: $0) } == nil)
            try store.add("Holiday", id: "n", fields: ["name": "New Year", "date": "2027-01-01"])
            #expect(try store.snapshot { try store.meta(Store.MetaKey.logEnd, in: $0) } == "2")
        }
    }

    @Test("a meta page whose commit number was damaged upwards is .corrupt: LMDB would open an older tree with it")
    func metaPagesDisagree() throws {
        try withTemporaryDirectory { directory in
            let path = try Self.storeWithOneRecord(in: directory)
            let url = URL(fileURLWithPath: path + "/data.mdb")
            var bytes = try Data(contentsOf: url)
            let pageSize = Int(bytes[40]) | Int(bytes[41]) << 8
            let id = { (page: Int) in (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[page * pageSize + 144 + $1]) << (8 * $1) } }
            // The older page's id, raised past the newer one's by a flipped high bit.
            let older = id(0) < id(1) ? 0 : 1
            bytes[older * pageSize + 144 + 4] ^= 0x01
            try bytes.write(to: url)
            let error = try #require(throws: StoreError.self) { try Store(directory: path) }
            #expect(error.code == .corrupt)
            #expect(error.message.hasPrefix("the store at \(path) is damaged (its meta pages disagree: page 0 holds commit "))
        }
    }

    @Test("a new store is its owner's only, whatever the umask: directory 0700, files 0600")
    func newStorePermissions() throws {
        try withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("store").path
            let previous = umask(0)
            defer { umask(previous) }
            _ = try Store(directory: path, create: true)
            #expect(try Self.mode(path) == 0o700)
            #expect(try Self.mode(path + "/data.mdb") == 0o600)
            #expect(try Self.mode(path + "/lock.mdb") == 0o600)
        }
    }

    @Test("verifying views replays into a scratch directory only the owner can read")
    func scratchDirectoryPermissions() throws {
        try withTemporaryStore { store, _ in
            try store.add("Holiday", id: "h", fields: ["name": "Christmas", "date": "2026-12-25"])
            let previous = umask(0)
            defer { umask(previous) }
            var scratchMode: Int?
            _ = try store.verifyViews(limit: 10) { scratchMode = try Self.mode($0) }
            #expect(scratchMode == 0o700)
        }
    }

    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}
