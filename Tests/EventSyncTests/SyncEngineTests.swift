@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Synchronization
import Testing

/// The engine through the library: status updates, and the sync algorithm
/// against `InMemoryRemote` (no server needed).
struct SyncEngineTests {
    private func makeStore(_ directory: TemporaryDirectory, _ name: String = "store") throws -> Store {
        try Store(directory: directory.file(name), create: true)
    }

    // MARK: 15: status updates

    @Test func statusUpdatesYieldInProgressThenTheFinishedReport() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 2)
        for n in 0..<5 { remote.put("r\(n)", holiday("Remote \(n)"), in: "Holiday") }
        try store.add("Holiday", id: "local", fields: holiday("Local"))
        let engine = SyncEngine(store: store) { remote }

        let updates = engine.statusUpdates()
        async let collected: [SyncStatus] = {
            var statuses: [SyncStatus] = []
            for await status in updates {
                statuses.append(status)
                if case .finished = status { break }
            }
            return statuses
        }()
        let report = try await engine.sync()
        let statuses = await collected

        #expect(report.pulled == 5)
        #expect(report.pushed == 1)
        #expect(report.result == .newData)
        #expect(statuses.first == .inProgress(nil))
        #expect(statuses.last == .finished(report))
        let steps = statuses.dropFirst().dropLast()
        #expect(steps.allSatisfy { if case .inProgress(_?) = $0 { true } else { false } })
        #expect(steps.contains(.inProgress(SyncProgress(phase: .pulling, entity: "Holiday", records: 5, pages: 3, total: 5))))
        #expect(steps.contains { if case .inProgress(let step?) = $0 { step.phase == .pushing && step.records == 1 } else { false } })
        #expect(remote.records(in: "Holiday")["local"] == holiday("Local"))
    }

    @Test func aNewVersionThatChangesNoFieldIsLoggedForItsVersionButPullsNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 2)
        remote.put("r", holiday("Same"), in: "Holiday")
        let engine = SyncEngine(store: store) { remote }
        #expect(try await engine.sync().pulled == 1)

        // Another client saves the record as it was: a new version, no field changed.
        let version = remote.put("r", holiday("Same"), in: "Holiday")
        let report = try await engine.sync()
        #expect(report.pulled == 0 && report.result == .noData, "\(report)")
        let last = try #require(try store.lastEvents(1).first)
        #expect(last.kind == .updated && last.set.isEmpty && last.unset.isEmpty && last.version == version)
        // The next local edit is written on that version.
        try store.edit("Holiday", id: "r", set: ["details": "edited"])
        #expect(try await engine.sync().pushed == 1)
        #expect(remote.records(in: "Holiday")["r"]?["details"] == "edited")
    }

    @Test func aFieldTheServerDoesNotHoldKeepsItsLocalValueThroughAServerChange() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote(pageSize: 2)
        try store.add("Holiday", id: "r", fields: holiday("Local", details: "kept here"))
        let engine = SyncEngine(store: store) { remote }
        #expect(try await engine.sync().pushed == 1)

        // A server that holds no `details` (a DAV item's unmapped field) changes the name: `details` is not unset.
        remote.put("r", holiday("Renamed there"), in: "Holiday", localFields: ["details"])
        #expect(try await engine.sync().pulled == 1)
        #expect(try store.record("Holiday", id: "r")?.fields == holiday("Renamed there", details: "kept here"))
        // Nothing is pending: the next sync has nothing to push.
        #expect(try await engine.sync().result == .noData)
        // Without the mark, the same record unsets it, as a server holding every field means.
        remote.put("r", holiday("Again"), in: "Holiday")
        _ = try await engine.sync()
        #expect(try store.record("Holiday", id: "r")?.fields == holiday("Again"))
    }

    @Test func aFailedSyncStillFinishesItsStatusUpdatesAndWritesNothing() async throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        try store.add("Holiday", id: "local", fields: holiday("Local"))
        let before = try store.status()
        let engine = SyncEngine(store: store) { throw SyncError(.unavailable, "no network in this test") }
        let updates = engine.statusUpdates()
        async let last: SyncStatus? = {
            for await status in updates { if case .finished = status { return status } }
            return nil
        }()
        await #expect(throws: SyncError.self) { try await engine.sync() }
        guard case .finished(let report)? = await last else {
            Issue.record("no .finished status")
            return
        }
        #expect(report.result == .failed)
        #expect(report.error == "no network in this test")
        #expect(try store.status() == before)
    }

    @Test func syncLockIsExclusiveUntilReleased() throws {
        let directory = try TemporaryDirectory()
        var lock: SyncLock? = try SyncLock(directory: directory.path)
        #expect(lock != nil)
        do {
            _ = try SyncLock(directory: directory.path)
            Issue.record("a second lock was granted")
        } catch {
            #expect(error.code == .busy)
            #expect(error.message == "sync already in progress")
        }
        // The engine takes the same lock: a sync while it is held is refused.
        let store = try makeStore(directory, "store")
        let storeLock = try SyncLock(directory: store.directory)
        let engine = SyncEngine(store: store) { InMemoryRemote() }
        #expect { _ = try engine.syncBlocking() } throws: { ($0 as? SyncError)?.code == .busy }
        withExtendedLifetime(storeLock) {}
        lock = nil
        #expect(throws: Never.self) { _ = try SyncLock(directory: directory.path) }
    }

    // MARK: import into a store that has synced

    /// Import's fast path inserts only records the store has no entry for;
    /// here records deleted locally but still on the server, or deleted on
    /// the server, are re-created through the general fold, and the views
    /// still equal a replay of the log.
    @Test func importOverRecordsDeletedHereOrOnTheServer() throws {
        let directory = try TemporaryDirectory()
        let store = try makeStore(directory)
        let remote = InMemoryRemote()
        remote.put("kept", holiday("Kept"), in: "Holiday")
        remote.put("gone", holiday("Gone"), in: "Holiday")
        remote.put("dropped", holiday("Dropped"), in: "Holiday")
        let engine = SyncEngine(store: store) { remote }
        #expect(try engine.syncBlocking().pulled == 3)
        remote.put("dropped", nil, in: "Holiday")
        _ = try engine.syncBlocking()
        #expect(try store.record("Holiday", id: "dropped") == nil)
        try store.delete("Holiday", id: "gone")
        try store.delete("Holiday", id: "kept")
        #expect(try store.status().pendingRecords == 2)

        let lines = [
            #"{"id":"gone","name":"Gone","date":"2026-05-01"}"#,           // as the server has it: in step again
            #"{"id":"kept","name":"Kept anew","date":"2026-05-01"}"#,      // differs from the server: pending
            #"{"id":"dropped","name":"Dropped anew","date":"2026-05-03"}"#,  // the server has a tombstone: pending
            #"{"id":"fresh","name":"Fresh","date":"2026-05-02"}"#,
        ]
        let file = directory.file("import.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: file))
        let descriptor = open(file, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        #expect(try store.importRecords("Holiday", from: descriptor) == 4)

        #expect(try store.record("Holiday", id: "gone")?.fields == holiday("Gone"))
        #expect(try store.record("Holiday", id: "dropped")?.fields["name"] == "Dropped anew")
        #expect(try store.status().pendingRecords == 3)
        #expect(try store.verifyViews().isEmpty)
        let report = try engine.syncBlocking()
        #expect(report.pushed == 3)
        #expect(remote.records(in: "Holiday")["kept"]?["name"] == "Kept anew")
        #expect(remote.records(in: "Holiday")["dropped"]?["name"] == "Dropped anew")
        #expect(remote.records(in: "Holiday")["fresh"]?["name"] == "Fresh")
        #expect(try store.status().pendingRecords == 0)
    }

    // MARK: 15: random edits on two stores and the server converge

    /// Two stores and a web app make random changes to a few shared ids while
    /// the stores sync now and then under random policies. Once the edits
    /// stop, a sync of A, B and A again must leave both stores equal to the
    /// server's live records with nothing pending, and a further sync of
    /// each must find nothing to do.
    @Test(arguments: 1...40 as ClosedRange<UInt64>)
    func randomEditsOnTwoStoresAndTheServerConverge(seed: UInt64) async throws {
        let directory = try TemporaryDirectory()
        let remote = InMemoryRemote(pageSize: 3)
        var world = try RandomWorld(seed: seed, stores: [makeStore(directory, "a"), makeStore(directory, "b")],
                                    server: InMemoryServer(remote: remote)) { remote }
        try await world.run(steps: 80)
    }
}
