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
}
