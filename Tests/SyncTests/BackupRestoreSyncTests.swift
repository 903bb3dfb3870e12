@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A store restored from `evsync backup` syncs cleanly with a real Kinto: what the backup still had to
/// push, and was pushed after it was made, is not pushed again; what the server got since comes down.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct BackupRestoreSyncTests {
    @Test func aStoreRestoredFromAnOlderBackupSyncsWithoutPushingTwiceOrLosingAnything() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (synced, edited, created, deleted, fromServer, afterRestore) = (newID(), newID(), newID(), newID(), newID(), newID())
        try await fx.cli.add(id: synced, ["name=Synced", "date=2026-01-01"])
        try await fx.cli.add(id: edited, ["name=Edited", "date=2026-01-02"])
        try await fx.cli.add(id: deleted, ["name=Deleted", "date=2026-01-03"])
        #expect(try await fx.syncReport().pushed == 3)

        // Pending when the backup is made: an edit, a creation and a deletion.
        try await fx.cli.edit(edited, ["details=Changed before the backup"])
        try await fx.cli.add(id: created, ["name=Created", "date=2026-01-04"])
        try await fx.cli.delete(deleted)
        let backup = fx.directory.file("backup")
        let events = try await fx.cli.status().events
        let made = try JSONParser.parse(try await fx.cli.ok(["backup", backup, "--json"])).objectValue
        #expect(made?["events"]?.int64Value.map(Int.init) == events)

        // The store pushes them after the backup, and the server gets another change meanwhile.
        let pushed = try await fx.syncReport()
        #expect(pushed.pushed == 2 && pushed.deletedThere == 1, "\(pushed)")
        try await fx.web.put(fromServer, holiday("From the web app"))
        let versions = (try await fx.web.get(edited)?.version, try await fx.web.get(created)?.version)

        // The store is lost: the backup is copied in its place.
        try FileManager.default.moveItem(atPath: fx.cli.store, toPath: fx.directory.file("lost-store"))
        try FileManager.default.copyItem(atPath: backup, toPath: fx.cli.store)
        #expect(try await fx.cli.status().pendingRecords == 3, "the backup still had its three changes to push")

        let restored = try await fx.syncReport()
        #expect(restored.pushed == 0 && restored.deletedThere == 0 && restored.conflicts == 0, "nothing pushed twice: \(restored)")
        #expect(restored.rejected.isEmpty)
        let after = (try await fx.web.get(edited)?.version, try await fx.web.get(created)?.version)
        #expect(after == versions, "the server's records were not written again")
        let server = try await fx.web.records()
        #expect(Set(server.keys) == [synced, edited, created, fromServer])
        #expect(try await fx.cli.records() == server, "nothing lost: the restored store holds what the server holds")
        #expect(try await fx.cli.status().pendingRecords == 0)
        #expect(try await fx.syncReport().result == "noData")

        // It goes on syncing as a store does.
        try await fx.cli.add(id: afterRestore, ["name=After the restore", "date=2026-01-05"])
        #expect(try await fx.syncReport().pushed == 1)
        #expect(try await fx.web.get(afterRestore)?.fields == holiday("After the restore", date: "2026-01-05"))
        #expect(try await fx.cli.verifyViews().status == 0)
    }
}
