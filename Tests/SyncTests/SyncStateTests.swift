@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Synchronization
import Testing

/// "Am I in sync?" through a real Kinto: the sync state an app shows, the CLI's `status` that prints the
/// same, and `waitUntilSynced` while the server is down and when it comes back.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SyncStateTests {
    /// The store, an engine on `remote`, and every sync state the store's observer yielded.
    final class World: Sendable {
        let directory: TemporaryDirectory
        let store: Store
        let engine: SyncEngine
        let seen = Mutex<[SyncState]>([])
        /// The bucket URL each sync uses.
        let remote: RemoteURL

        init(remote: String, authFile: String, attempts: Int = 8) throws {
            directory = try TemporaryDirectory("synctests-state")
            store = try Store(directory: directory.file("store"), create: true)
            let credentials = try String(contentsOfFile: authFile, encoding: .utf8).trimmingCharacters(in: .newlines)
            let url = RemoteURL(remote)
            self.remote = url
            engine = SyncEngine(store: store) {
                let kinto = try KintoRemote(bucketURL: url.value.withLock { $0 }, credentials: try Credentials(userPassword: credentials))
                kinto.settings.retry.attempts = attempts
                return kinto
            }
        }

        func holiday(_ id: String, _ name: String, details: String? = nil) throws {
            var fields: JSONObject = ["name": .string(name), "date": "2027-01-01"]
            if let details { fields["details"] = .string(details) }
            try store.add("Holiday", id: id, fields: fields)
        }

        /// Waits until the observer has yielded a state that `done` takes (it fails the test after 60 s).
        func waitForState(_ what: String, _ done: (SyncState) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while !seen.withLock({ $0.contains(where: done) }) {
                try #require(ContinuousClock.now < deadline, "the observer never saw \(what): \(seen.withLock { $0 })",
                             sourceLocation: sourceLocation)
                try await Task.sleep(for: .milliseconds(20))
            }
        }

        /// `evsync status --json` and `status` on the store agree with `syncState()`.
        func expectStatusAgrees(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let cli = Evsync(store: store.directory)
            let state = try store.syncState()
            let json = try #require(try await cli.json(["status", "--json"]).objectValue)
            let counts: [(String, Int)] = [("pendingRecords", state.pendingRecords), ("unacknowledgedEvents", state.unacknowledgedEvents),
                                           ("rejectedRecords", state.rejectedRecords), ("openConflicts", state.openConflicts ?? -1),
                                           ("skippedRecords", state.skippedRecords), ("missingFromServer", state.missingCount)]
            for (key, value) in counts {
                #expect(json[key]?.int64Value == Int64(value), "\(key): \(json)", sourceLocation: sourceLocation)
            }
            #expect(json["inSync"] == .bool(state.isInSync) && json["summary"] == .string(state.summary), "\(json)", sourceLocation: sourceLocation)
            let text = try await cli.ok(["status"])
            #expect(text.contains("\nsync      \(state.summary)\n") || text.hasSuffix("\nsync      \(state.summary)"), "\(text)",
                    sourceLocation: sourceLocation)
        }
    }

    final class RemoteURL: Sendable {
        let value: Mutex<String>
        init(_ url: String) { value = Mutex(url) }
    }

    @Test func theStateFollowsARealSyncThroughAConflictARefusalAndALoss() async throws {
        let kinto = try await OwnKinto()
        // Every sync goes through a proxy that answers 413 to a large request: one record is refused, the rest go.
        let proxy = try await SlowProxy(["--max-body", "16384"], target: kinto.server)
        let world = try World(remote: proxy.url + "/buckets/evsync", authFile: kinto.authFile)
        let store = world.store
        let observer = Task {
            for try await state in store.observeSyncState() { world.seen.withLock { $0.append(state) } }
        }
        defer { observer.cancel() }

        try await world.waitForState("a store never synced") { $0.lastSync == nil && $0.pendingRecords == 0 && !$0.isInSync }
        #expect(try store.syncState().summary == "not in sync: never synced")
        for id in ["h1", "h2", "h3"] { try world.holiday(id, "Holiday \(id)") }
        try await world.waitForState("three records to push") { $0.pendingRecords == 3 && $0.unacknowledgedEvents == 3 }
        #expect(try store.syncState().summary == "not in sync: never synced, 3 records to push")

        let synced = try await world.engine.waitUntilSynced(timeout: .seconds(60))
        #expect(synced.isInSync && synced.pendingRecords == 0 && synced.lastSync?.result == .newData, "\(synced)")
        #expect(synced.summary == "in sync as of the last sync: every local change is on the server")
        try await world.expectStatusAgrees()

        // A conflict: the same field changed here and on the server; the server's value wins, and both sides hold it.
        let web = KintoWebApp(server: kinto.server, credentials: try String(contentsOfFile: kinto.authFile, encoding: .utf8)
            .trimmingCharacters(in: .newlines), bucket: "evsync")
        try store.edit("Holiday", id: "h1", set: ["name": "Local name"])
        _ = try await web.patch("h1", ["name": "Server name"])
        #expect(try await world.engine.sync().conflicts == 1)
        let conflicted = try store.syncState()
        #expect(conflicted.openConflicts == 1 && conflicted.isInSync, "\(conflicted)")
        #expect(conflicted.summary == "in sync as of the last sync: every local change is on the server; 1 conflict decided by policy, to review")
        try await world.waitForState("the open conflict") { $0.openConflicts == 1 && $0.isInSync }
        try await world.expectStatusAgrees()

        // A server record this store cannot hold (Kinto lets an id ending in a newline through): skipped, and out of sync.
        let put = try await web.request("PUT", "/buckets/evsync/collections/holidays/records/abc%0A",
                                        body: ["data": ["name": "Id ending in a newline", "date": "2027-02-01"]])
        #expect([200, 201].contains(put.status), "\(put)")
        #expect(try await world.engine.sync().skipped.count == 1)
        let skipped = try store.syncState()
        #expect(skipped.skippedRecords == 1 && !skipped.isInSync, "\(skipped)")
        #expect(skipped.summary == "not in sync: 1 server record could not be stored here; 1 conflict decided by policy, to review")
        try await world.waitForState("the skipped record") { $0.skippedRecords == 1 }
        try await world.expectStatusAgrees()

        // A refusal: pending, counted, listed with the server's reason; waiting gives up at once, naming it.
        try world.holiday("big", "Oversized", details: String(repeating: "x", count: 20_000))
        let refusedReport = try await world.engine.sync()
        #expect(refusedReport.rejected.map(\.id) == ["big"] && refusedReport.result == .failed, "\(refusedReport)")
        let refused = try store.syncState()
        #expect(refused.pendingRecords == 1 && refused.rejectedRecords == 1 && !refused.isInSync, "\(refused)")
        #expect(refused.summary == "not in sync: 1 record to push (1 refused by the server), 1 server record could not be stored here; "
            + "1 conflict decided by policy, to review")
        let pending = try store.pendingChanges()
        #expect(pending.map(\.id) == ["big"] && pending.first?.state == .createdHere, "\(pending)")
        #expect(pending.first?.lastExchange?.kind == .rejected && pending.first?.lastExchange?.reason?.hasPrefix("HTTP 413") == true)
        do {
            try await world.engine.waitUntilSynced(timeout: .seconds(60))
            Issue.record("waitUntilSynced returned with a refused change left")
        } catch let stuck as StillPending {
            #expect(stuck.reason == .refused && stuck.count == 1 && stuck.records.map(\.id) == ["big"], "\(stuck)")
            #expect(stuck.description.hasPrefix("not in sync (the server refused what is left): 1 record with local changes not acknowledged "
                + "(Holiday/big: created here, not on the server yet, refused: HTTP 413"), "\(stuck.description)")
        }
        try await world.waitForState("the refusal") { $0.rejectedRecords == 1 }
        try await world.expectStatusAgrees()

        // A loss: the server comes back empty; the records it lost are kept here and counted.
        try await kinto.restartEmpty()
        let lossReport = try await world.engine.sync()
        #expect(lossReport.goneFromServer.count == 3, "\(lossReport)")
        let lost = try store.syncState()
        #expect(lost.missingFromServer == ["Holiday": ["h1", "h2", "h3"]] && lost.rejectedRecords == 1 && !lost.isInSync, "\(lost)")
        #expect(lost.summary.hasPrefix("not in sync: 1 record to push (1 refused by the server), 3 records the server lacks"), "\(lost.summary)")
        try await world.waitForState("the loss") { $0.missingCount == 3 }
        try await world.expectStatusAgrees()

        // A change another process makes (the CLI) wakes the observer too.
        _ = try await Evsync(store: store.directory).ok(["add", "Holiday", "--id", "cli1", "name=From the CLI", "date=2027-03-01"])
        try await world.waitForState("the CLI's change") { $0.pendingRecords == 2 && $0.unacknowledgedEvents == 2 }

        // The observer woke only for changes: no state twice in a row.
        let seen = world.seen.withLock { $0 }
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 != $1 }, "\(seen)")
    }

    @Test func waitingGivesUpAtOnceOnCredentialsTheServerRefuses() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let wrong = fx.directory.file("wrong-auth")
        try "evsync-test-nobody:wrong-password".write(toFile: wrong, atomically: true, encoding: .utf8)
        let world = try World(remote: fx.remote, authFile: wrong)
        try world.holiday("h1", "New Year")
        let started = ContinuousClock.now
        do {
            try await world.engine.waitUntilSynced(timeout: .seconds(120))
            Issue.record("waitUntilSynced returned with credentials the server refuses")
        } catch let stuck as StillPending {
            #expect(stuck.reason == .failed && stuck.lastFailure?.code == .unauthorized && stuck.records.map(\.id) == ["h1"], "\(stuck)")
            #expect(stuck.description.hasPrefix("not in sync (a sync failed): 1 record with local changes not acknowledged "
                + "(Holiday/h1: created here, not on the server yet); the last sync failed: "), "\(stuck.description)")
        }
        #expect(ContinuousClock.now - started < .seconds(60), "it gave up without waiting for its timeout")
        #expect(try world.store.syncState().summary == "not in sync: never synced, 1 record to push")
    }

    /// With the scheduler started too (its interval five minutes, so that only the wait's own syncs can be in time),
    /// the wait shares its syncs.
    @Test(arguments: [false, true])
    func waitingForASyncOutlastsAKintoThatIsDownAndEndsWhenItComesBack(scheduled: Bool) async throws {
        let kinto = try await OwnKinto()
        let world = try World(remote: kinto.server + "/buckets/evsync", authFile: kinto.authFile, attempts: 1)
        let store = world.store
        try await kinto.stop()
        if scheduled { world.engine.start(every: .seconds(300)) }
        try world.holiday("h1", "New Year")
        try world.holiday("h2", "Epiphany")

        // Down: the wait ends at its timeout, naming both records and the failure. (Ten seconds: under a loaded
        // suite, a first attempt at the closed port took longer than two, and the wait ended with no failure yet.)
        do {
            try await world.engine.waitUntilSynced(timeout: .seconds(10))
            Issue.record("waitUntilSynced returned while the server was down")
        } catch let stuck as StillPending {
            #expect(stuck.reason == .timedOut && stuck.count == 2 && stuck.records.map(\.id) == ["h1", "h2"], "\(stuck)")
            #expect(stuck.description.hasPrefix("not in sync after 10.0 seconds: 2 records with local changes not acknowledged "
                + "(Holiday/h1: created here, not on the server yet; Holiday/h2: created here, not on the server yet)"), "\(stuck.description)")
            // The failure is named when a sync has failed by then. In three loaded fresh-clone CI runs none had
            // within the timeout, with or without the scheduler (alone, one fails at once; a Kinto still closing
            // its socket is suspected): so only when one has.
            if let failure = stuck.lastFailure {
                #expect(failure.code == .unavailable, "\(stuck)")
                #expect(stuck.description.contains("; the last sync failed: "), "\(stuck.description)")
            }
        }
        let down = try store.syncState()
        #expect(!down.isInSync && down.summary == "not in sync: never synced, 2 records to push", "\(down)")
        try await world.expectStatusAgrees()

        // Still down when the wait starts; it goes on trying, and returns once the server is back.
        let statuses = world.engine.statusUpdates()
        let waiting = Task { try await world.engine.waitUntilSynced(timeout: .seconds(120)) }
        for await status in statuses where status.finishedReport?.failure?.code == .unavailable { break }
        // Tools/kinto creates the account once Kinto listens: a sync in between is refused its credentials, which
        // ends a wait (as it should). So the syncs meet a closed port while Kinto starts, and its own once it has.
        let bucket = kinto.server + "/buckets/evsync"
        world.remote.value.withLock { $0 = "http://127.0.0.1:\((try? ServerTool.freePort()) ?? 9)/v1/buckets/evsync" }
        try await kinto.start()
        world.remote.value.withLock { $0 = bucket }
        let synced = try await waiting.value
        #expect(synced.isInSync && synced.pendingRecords == 0, "\(synced)")
        let web = KintoWebApp(server: kinto.server, credentials: try String(contentsOfFile: kinto.authFile, encoding: .utf8)
            .trimmingCharacters(in: .newlines), bucket: "evsync")
        #expect(try await web.records().keys.sorted() == ["h1", "h2"])
        try await world.expectStatusAgrees()
        #expect(try await Evsync(store: store.directory).ok(["status"]).contains("\nsync      in sync as of the last sync: every local change is on the server"))
        await world.engine.stop()
    }
}
