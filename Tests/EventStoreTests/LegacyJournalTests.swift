import Foundation
import Testing
@testable import EventStore
import TestSupport

/// Stores of the former journal design (layouts 6 and 7) as they open now (`LegacyJournal`).
///
/// `Fixtures/journal-store` was written by evsync 3ac00ba's `GuardProbe writer` (single adds, edits and deletes
/// through the library, one transaction each), killed with SIGKILL after 61 acknowledged steps (`said.txt`):
/// a checkpoint at its first commit, then 55 entries. Its `data.mdb` holds every commit, as the page cache did.
@Suite("stores of the journal design")
struct LegacyJournalTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/journal-store")

    /// What the writer was told is stored: the records there (added and not deleted), those edited, and those deleted.
    static func acknowledged() throws -> (present: Set<String>, edited: Set<String>, deleted: Set<String>) {
        var present = Set<String>(), edited = Set<String>(), deleted = Set<String>()
        for line in try String(contentsOf: fixture.appendingPathComponent("said.txt"), encoding: .utf8).split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard words.count == 2 else { continue }
            switch words[0] {
            case "add": present.insert(words[1])
            case "edit": edited.insert(words[1])
            case "delete": present.remove(words[1]); deleted.insert(words[1])
            default: break
            }
        }
        return (present, edited.intersection(present), deleted)
    }

    /// A copy of the fixture store in `directory`.
    static func copyFixture(to directory: URL) throws -> String {
        let store = directory.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        for name in ["data.mdb", "journal"] {
            try FileManager.default.copyItem(at: fixture.appendingPathComponent(name), to: store.appendingPathComponent(name))
        }
        return store.path
    }

    /// Makes the journal's newest checkpoint one of another boot, as after a power cut, and of this copy's data file
    /// (a checkpoint names its file's inode: a store copied by file tools was read as it is), its checksum made anew.
    static func markCutOff(_ store: String) throws {
        let path = store + "/journal"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let newest = [0, 4096].max { bytes.u64($0 + 8) < bytes.u64($1 + 8) } ?? 0
        var status = stat()
        #expect(stat(store + "/data.mdb", &status) == 0)
        withUnsafeBytes(of: UInt64(status.st_ino).littleEndian) { bytes.replaceSubrange(newest + 40 ..< newest + 48, with: $0) }
        for index in newest + 48 ..< newest + 88 { bytes[index] = 0xA5 }
        let checksum = bytes[newest ..< newest + 352].withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes.replaceSubrange(newest + 352 ..< newest + 356, with: $0) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func expectEverythingAcknowledged(in path: String) throws {
        let store = try Store(directory: path)
        let (present, edited, deleted) = try acknowledged()
        let records = try store.recordMap("Holiday")
        // A write the writer was killed before acknowledging may be there or not: its entry is in the journal.
        #expect(present.subtracting(records.keys).isEmpty, "every acknowledged add is there")
        #expect(deleted.intersection(records.keys).isEmpty, "no acknowledged delete is undone")
        for id in edited { #expect(records[id]?["details"] == "edited", "edit of \(id)") }
        #expect(try store.verifyLog().damage == nil)
        #expect(try store.verifyViews().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path + "/journal"), "the journal is gone once migrated")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasPrefix(".data.mdb") }
        #expect(leftovers.isEmpty)
        // The next write marks the layout of a store without a journal, which an evsync of the journal design refuses.
        try store.add("Holiday", id: "after", fields: ["name": "After", "date": "2027-01-01"])
        #expect(try store.snapshot { try store.meta("layout", in: $0) } == Store.layoutVersion)
        #expect(Store.layoutVersion == "8")
    }

    @Test("a store the journal design left after a clean exit or a kill opens as it is, every acknowledged write in it")
    func killedWriterOpensAsItIs() throws {
        try withTemporaryDirectory { directory in
            let store = try Self.copyFixture(to: directory)
            let inode = try #require(try FileManager.default.attributesOfItem(atPath: store + "/data.mdb")[.systemFileNumber] as? Int)
            try Self.expectEverythingAcknowledged(in: store)
            let after = try FileManager.default.attributesOfItem(atPath: store + "/data.mdb")[.systemFileNumber] as? Int
            #expect(after == inode, "flushed in place, not restored")
        }
    }

    @Test("a store the journal design left cut off by a power cut is restored once, on a copy, from its checkpoint and entries")
    func cutOffStoreIsRestored() throws {
        try withTemporaryDirectory { directory in
            let store = try Self.copyFixture(to: directory)
            try Self.markCutOff(store)
            let inode = try #require(try FileManager.default.attributesOfItem(atPath: store + "/data.mdb")[.systemFileNumber] as? Int)
            try Self.expectEverythingAcknowledged(in: store)
            let after = try FileManager.default.attributesOfItem(atPath: store + "/data.mdb")[.systemFileNumber] as? Int
            #expect(after != inode, "the restored copy was renamed in: nothing but LMDB wrote the store's data.mdb")
        }
    }

    @Test("a cut-off store opened read-only is refused, not read as it is")
    func cutOffReadOnlyRefused() throws {
        try withTemporaryDirectory { directory in
            let store = try Self.copyFixture(to: directory)
            try Self.markCutOff(store)
            let error = try #require(throws: StorageError.self) { try LegacyJournal.refuseIfCutOff(store) }
            #expect(error.reason == LegacyJournal.cutOffReason)
            #expect(FileManager.default.fileExists(atPath: store + "/journal"))
        }
    }

    @Test("beside an evsync of the journal design that has the store open, the migration refuses in one line and changes nothing")
    func refusedBesideAnOlderEvsync() throws {
        try withTemporaryDirectory { directory in
            let store = try Self.copyFixture(to: directory)
            // A process holding LMDB's shared lock on lock.mdb's first byte, as every process with the store open does.
            try Data(count: 8192).write(to: URL(fileURLWithPath: store + "/lock.mdb"))
            let holder = try RunningProcess(executable: "/usr/bin/python3", arguments: ["-c", """
                import fcntl, os, sys, time
                fd = os.open(sys.argv[1], os.O_RDWR)
                fcntl.lockf(fd, fcntl.LOCK_SH, 1, 0)
                print("locked", flush=True)
                time.sleep(60)
                """, store + "/lock.mdb"], environment: ProcessInfo.processInfo.environment)
            defer { holder.signal(SIGKILL) }
            let deadline = ContinuousClock.now + .seconds(20)
            while !holder.outputSoFar().stdout.contains("locked") && ContinuousClock.now < deadline { usleep(10_000) }
            let before = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            let error = try #require(throws: StoreError.self) { try Store(directory: store) }
            #expect(error.message.contains("an evsync older than this one (pid \(holder.pid)) has the store open"), "\(error.message)")
            #expect(!error.message.contains("\n"))
            #expect(FileManager.default.fileExists(atPath: store + "/journal"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == before)
        }
    }
}
