@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Testing

/// Cancelling the task of `SyncEngine.sync()`: the sync stops after the page
/// or batch at hand and throws `CancellationError`; what it committed stays,
/// whole; the next sync finishes the job, losing and repeating nothing.
/// Against `InMemoryRemote`, cancelled from a remote hook, so the point of
/// cancellation is exact.
@Suite("Sync cancellation", .timeLimit(.minutes(2)))
struct SyncCancellationTests {
    private static func id(_ n: Int) -> String { "r" + String(format: "%03d", n) }

    @Test func cancellingDuringThePullKeepsTheWholePagesPulledAndTheNextSyncFinishes() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = InMemoryRemote(pageSize: 5)
        for n in 0..<200 { remote.put(Self.id(n), holiday("Remote \(n)"), in: "Holiday") }
        for n in 0..<10 { try store.add("Holiday", id: "local\(n)", fields: holiday("Local \(n)")) }
        let canceller = TaskCanceller()
        // Cancelled as Holiday's third page arrives (after Birthday's one, empty): that page is the one at hand, and is kept.
        let engine = SyncEngine(store: store) { HookedRemote(remote, onPage: { if $0 == 4 { canceller.cancel() } }) }

        let task = Task { try await engine.sync() }
        canceller.set(task)
        await #expect(throws: CancellationError.self) { try await task.value }

        let pulled = Set((0..<15).map(Self.id))
        #expect(Set(try store.records("Holiday").map(\.id)) == pulled.union((0..<10).map { "local\($0)" }))
        #expect(try store.lastSeq() == 10 + 15, "one event per pulled record, nothing else")
        #expect(try store.status().pendingRecords == 10, "nothing pushed")
        #expect(remote.records(in: "Holiday").count == 200)
        #expect(try store.verifyViews().isEmpty)

        // The next sync goes on after the last page written.
        let report = try await engine.sync()
        #expect(report.pulled == 185)
        #expect(report.pushed == 10)
        let records = try store.records("Holiday")
        #expect(records.count == 210)
        #expect(Set(records.map(\.id)).count == 210)
        #expect(Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0.fields) }) == remote.records(in: "Holiday"))
        // 200 remote creations, 10 local ones and their 10 acknowledgements: each once.
        #expect(try store.lastSeq() == 220)
        #expect(try store.status().pendingRecords == 0)
        #expect(try store.verifyViews().isEmpty)
    }

    @Test func cancellingDuringThePushKeepsTheAcknowledgedBatchesAndTheNextSyncFinishes() async throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        let remote = InMemoryRemote(pageSize: 5)
        for n in 0..<60 { try store.add("Holiday", id: Self.id(n), fields: holiday("Local \(n)")) }
        let canceller = TaskCanceller()
        // Cancelled once the server has applied the first batch (of 25): its acknowledgements are still logged.
        let engine = SyncEngine(store: store) { HookedRemote(remote, afterPush: { if $0 == 1 { canceller.cancel() } }) }

        let task = Task { try await engine.sync() }
        canceller.set(task)
        await #expect(throws: CancellationError.self) { try await task.value }

        let limit = remote.batchLimit()
        #expect(remote.records(in: "Holiday").count == limit)
        #expect(try store.status().pendingRecords == 60 - limit)
        #expect(try store.lastSeq() == UInt64(60 + limit), "one acknowledgement per record the server applied")
        #expect(try store.verifyViews().isEmpty)

        let report = try await engine.sync()
        #expect(report.pushed == 60 - limit)
        #expect(report.pulled == 0)
        #expect(report.conflicts == 0)
        let local = Dictionary(uniqueKeysWithValues: try store.records("Holiday").map { ($0.id, $0.fields) })
        #expect(local.count == 60)
        #expect(remote.records(in: "Holiday") == local)
        #expect(try store.lastSeq() == 120, "60 creations and 60 acknowledgements: each once")
        #expect(try store.status().pendingRecords == 0)
        #expect(try store.verifyViews().isEmpty)
    }
}
