@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Synchronization
import Testing

/// What a sync leaves for `status` and the next plain `sync`, and what it tells
/// a progress line: against `InMemoryRemote`, failed on purpose by a hook.
struct SyncOutcomeRecordTests {
    @Test func aFailedSyncIsRecordedWithItsErrorAndItsRemoteIsNotRemembered() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        try store.add("Holiday", id: "r1", fields: holiday("Local"))
        let failing = SyncEngine(store: store) {
            HookedRemote(InMemoryRemote(), beforePush: { throw SyncError(.unavailable, "the server went away") })
        }
        #expect(throws: SyncError.self) { _ = try failing.syncBlocking() }
        #expect(try store.rememberedRemote() == nil, "a remote is remembered only once a sync with it went through")
        let failure = try #require(try store.lastSync())
        #expect(failure.result == .failed)
        #expect(failure.error?.contains("the server went away") == true, "\(failure)")
        #expect(try store.status().pendingRecords == 1)

        let remote = InMemoryRemote()
        let report = try SyncEngine(store: store) { remote }.syncBlocking()
        #expect(report.pushed == 1)
        #expect(try store.rememberedRemote() == remote.address)
        let success = try #require(try store.lastSync())
        #expect(success.result == .newData && success.error == nil && !success.interrupted)
    }

    @Test func pushProgressCountsAgainstTheRecordsWaiting() throws {
        let directory = try TemporaryDirectory()
        let store = try Store(directory: directory.file("store"), create: true)
        for n in 0..<60 { try store.add("Holiday", id: "r\(n)", fields: holiday("Local \(n)")) }
        let steps = Mutex<[SyncProgress]>([])
        let remote = InMemoryRemote()
        _ = try SyncEngine(store: store) { remote }.syncBlocking(progress: { step in steps.withLock { $0.append(step) } })
        let pushing = steps.withLock { $0 }.filter { $0.phase == .pushing }
        let limit = remote.batchLimit()
        #expect(pushing.count == (60 + limit - 1) / limit, "\(pushing)")
        #expect(pushing.allSatisfy { $0.total == 60 }, "\(pushing)")
        #expect(pushing.last?.records == 60)
    }
}
