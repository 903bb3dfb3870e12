import Foundation
import Testing
@testable import EventStore

/// The journal's bookkeeping inside one process (`Journal`). What it keeps through a power cut is
/// evsyncTests/JournalPowerCutTests.swift's to show, on a real disk.
@Suite("Journal")
struct JournalTests {
    @Test("single writes are entries after one checkpoint; one that Redo cannot tell is followed by a checkpoint")
    func entriesThenCheckpoints() throws {
        try withTemporaryStore { store, _ in
            let journal = try #require(store.environment.journal)
            try store.add("Holiday", id: "a", fields: ["name": "A", "date": "2026-01-01"])
            let first = try #require(journal.latestCheckpoint())
            for index in 0..<20 { try store.add("Holiday", id: "h\(index)", fields: ["name": "H", "date": "2026-01-01"]) }
            #expect(journal.latestCheckpoint()?.number == first.number, "twenty single writes, no checkpoint")
            try store.rebuildViews()
            let after = try #require(journal.latestCheckpoint())
            #expect(after.number > first.number)
            #expect(after.transaction == UInt64(try store.environment.read { $0.id }), "the rebuild's commit is the checkpoint's")
        }
    }

    @Test("a process that stops writing lets its pin go, and its next write makes a checkpoint first")
    func pinLetGoWhenIdle() throws {
        try withTemporaryStore { store, _ in
            let journal = try #require(store.environment.journal)
            try store.add("Holiday", id: "a", fields: ["name": "A", "date": "2026-01-01"])
            #expect(journal.isPinned)
            let first = try #require(journal.latestCheckpoint()).number
            let deadline = ContinuousClock.now + .seconds(30)
            while journal.isPinned && ContinuousClock.now < deadline { usleep(20_000) }
            #expect(!journal.isPinned, "the pin outlived \(Journal.pinIdleTime) without a commit")
            try store.add("Holiday", id: "b", fields: ["name": "B", "date": "2026-01-01"])
            #expect(journal.isPinned)
            #expect(try #require(journal.latestCheckpoint()).number > first)
        }
    }

    /// A restore compares the checkpoint's device and inode with `stat`'s (`Journal+Restore.swift`): a checkpoint
    /// that named its file otherwise would have every later open restore the store.
    @Test("a checkpoint names the data file as stat does, and the store's own reads of its files leave their access times")
    func filesLookedAtWithoutTheirTimes() throws {
        try withTemporaryStore { store, directory in
            try store.add("Holiday", id: "a", fields: ["name": "A", "date": "2026-01-01"])
            let checkpoint = try #require(store.environment.journal?.latestCheckpoint())
            var status = stat()
            #expect(stat(directory.path + "/data.mdb", &status) == 0)
            #expect(checkpoint.device == UInt64(status.st_dev))
            #expect(checkpoint.inode == UInt64(status.st_ino))

            // O_NOATIME, as /proc/self/fdinfo shows a descriptor's flags (octal), on the journal's and LMDB's descriptors.
            let noAccessTime = 0o1000000
            var flagsByFile: [String: [Int]] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
                      target.hasPrefix(directory.path + "/"),
                      let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + name, encoding: .utf8),
                      let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
                      let flags = Int(line.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
                else { continue }
                flagsByFile[String(target.dropFirst(directory.path.count + 1)), default: []].append(flags)
            }
            let journal = try #require(flagsByFile["journal"])
            #expect(journal.allSatisfy { $0 & noAccessTime != 0 }, "the journal's descriptor")
            #expect(try #require(flagsByFile["data.mdb"]).contains { $0 & noAccessTime != 0 }, "LMDB's descriptor on data.mdb")
        }
    }
}
