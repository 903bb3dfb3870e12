@testable import EventStore
import EventSync
import Foundation
@testable import Sealing
import Testing
import TestSupport

/// What sealing adds to a sync's write transactions, counted against the same sync in clear: nothing when nothing
/// changes (the keyring's place and current key are written only when they change), one per page pulled with new
/// counters, one per batch pushed. Each is a short transaction of its own, never held across a request.
@Suite struct SealingCommitTests {
    /// The same two-device world twice: sealed and in clear, over servers of their own.
    struct Worlds {
        let directory: TemporaryDirectory
        let sealedServer = InMemoryRemote(pageSize: 2), clearServer = InMemoryRemote(pageSize: 2)
        let sealed: (a: Store, b: Store), clear: (a: Store, b: Store)

        init() throws {
            let directory = try TemporaryDirectory()
            func store(_ name: String) throws -> Store { try Store(directory: directory.file(name), create: true) }
            sealed = (try store("sealed-a"), try store("sealed-b"))
            clear = (try store("clear-a"), try store("clear-b"))
            self.directory = directory
        }

        /// Runs `change` on a store of each world, then syncs `syncing` of each: the write transactions each sync committed,
        /// sealed and in clear.
        func commits(change: (Store) throws -> Void = { _ in }, on changed: Side = .a, syncing: Side) async throws -> (sealed: Int, clear: Int) {
            try change(changed == .a ? sealed.a : sealed.b)
            try change(changed == .a ? clear.a : clear.b)
            let sealedStore = syncing == .a ? sealed.a : sealed.b, clearStore = syncing == .a ? clear.a : clear.b
            let before = (try sealedStore.lastCommit(), try clearStore.lastCommit())
            _ = try await SyncEngine(store: sealedStore) { [sealedServer] in
                SealedRemote(sealedServer, store: sealedStore) { "correct horse battery staple" }
            }.sync()
            _ = try await SyncEngine(store: clearStore) { [clearServer] in clearServer }.sync()
            return (try sealedStore.lastCommit() - before.0, try clearStore.lastCommit() - before.1)
        }

        enum Side { case a, b }
    }

    @Test func sealingWritesOnlyWhatChangesAndInAsFewTransactionsAsItCan() async throws {
        let worlds = try Worlds()
        func add(_ count: Int) -> (Store) throws -> Void {
            { store in for n in 0..<count { _ = try store.add("Holiday", id: "day\(n)", fields: ["name": .string("Day \(n)"), "date": "2027-05-01"]) } }
        }
        // The first syncs make the keyring and record its place: what they add is not counted here.
        _ = try await worlds.commits(change: add(3), syncing: .a)
        _ = try await worlds.commits(syncing: .b)

        let idle = try await worlds.commits(syncing: .a)
        #expect(idle.sealed == idle.clear, "a sync with nothing to do: \(idle)")
        // Four records pushed in one batch: their counters with it, one transaction.
        let pushed = try await worlds.commits(change: { store in
            for n in 0..<3 { _ = try store.edit("Holiday", id: "day\(n)", set: ["details": "edited"]) }
            _ = try store.add("Holiday", id: "day9", fields: ["name": "Day 9", "date": "2027-05-09"])
        }, syncing: .a)
        #expect(pushed.sealed == pushed.clear + 1, "one batch pushed: \(pushed)")
        // Pulled in two pages of two: one transaction of counters each.
        let pulled = try await worlds.commits(syncing: .b)
        #expect(pulled.sealed == pulled.clear + 2, "two pages pulled: \(pulled)")
        #expect(try worlds.sealed.b.record("Holiday", id: "day1")?.fields["details"] == "edited")
        let idleAgain = try await worlds.commits(syncing: .b)
        #expect(idleAgain.sealed == idleAgain.clear, "a sync with nothing to do: \(idleAgain)")
    }
}
