@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// Many records, and syncs killed with SIGKILL halfway: the log must only
/// ever hold whole pages and whole batches, and the next sync must converge
/// to exactly the server's records, each once.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct LargeAndCrashSyncTests {
    private static func holidays(_ count: Int, prefix: String = "h") -> [(id: String, fields: JSONObject)] {
        (0..<count).map { n in
            (id: "\(prefix)\(String(format: "%05d", n))",
             fields: ["name": .string("Holiday \(n)"), "date": .string("2026-\(String(format: "%02d", n % 12 + 1))-15"),
                      "details": .string("seeded record number \(n)")])
        }
    }

    /// Local records equal the server's, each once; views match the log.
    private func expectConverged(_ fx: SyncFixture, store: Evsync? = nil, count: Int,
                                 sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let cli = store ?? fx.cli
        let server = try await fx.web.records()
        #expect(server.count == count, sourceLocation: sourceLocation)
        #expect(try await fx.web.count() == count, sourceLocation: sourceLocation)
        let local = try await cli.list("Holiday")
        #expect(local.ids.count == count, "no duplicates", sourceLocation: sourceLocation)
        #expect(Set(local.ids).count == local.ids.count, sourceLocation: sourceLocation)
        #expect(local.records == server, sourceLocation: sourceLocation)
        let status = try await cli.status()
        #expect(status.records["Holiday"] == count, sourceLocation: sourceLocation)
        #expect(status.pendingRecords == 0, sourceLocation: sourceLocation)
        #expect(status.unacknowledgedEvents == 0, sourceLocation: sourceLocation)
        let verify = try await cli.verifyViews()
        #expect(verify.status == 0, "\(verify)", sourceLocation: sourceLocation)
    }

    /// Starts `evsync sync` and SIGKILLs it as soon as the store's log has grown past `seq`.
    /// Returns the log's length after the kill; fails the test if the sync ended on its own first.
    /// `extra`: more arguments for the sync (`--encrypt`, …).
    private func killSync(_ fx: SyncFixture, on cli: Evsync? = nil, store: Store, afterSeq seq: UInt64, extra: [String] = [],
                          beforeKill: (() async throws -> Void)? = nil) async throws -> UInt64 {
        let process = try (cli ?? fx.cli).start(["sync", "--remote", fx.remote, "--auth-file", fx.authFile, "--json"] + extra)
        while !process.hasExited {
            if try store.lastSeq() > seq {
                try await beforeKill?()
                process.signal(SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let output = await process.wait()
        try #require(output.killedBySignal && output.status == SIGKILL, "the sync was not killed midway: \(output)")
        return try store.lastSeq()
    }

    // MARK: 9 and 10: a large pull, and one killed midway

    /// One seeded collection of 10,000 records (seeding costs the server more
    /// than anything else here) and two stores: one pulls it all in one go,
    /// the other is killed once its first pages are committed, and then resumes.
    /// On a Kinto of its own: on the shared one it was the suite's last test to end, by 50 s.
    @Test func pullOfTenThousandRecordsAndAPullKilledMidway() async throws {
        let kinto = try await OwnKinto()
        defer { withExtendedLifetime(kinto) {} }   // its deinit stops the server
        let fx = try SyncFixture(on: kinto)
        try await fx.web.createBucket()
        let total = 10_000
        let seeded = Self.holidays(total)
        try await fx.web.seed(seeded)
        #expect(try await fx.web.count() == total)

        // 9: the whole collection, many pages, in one sync.
        let report = try await fx.syncReport()
        #expect(report.result == "newData")
        #expect(report.pulled == total)
        try await expectConverged(fx, count: total)
        #expect(try await fx.cli.status().events == total, "one event per record: no page was applied twice")
        #expect(try await fx.cli.show("Holiday", "h09999") == seeded[9_999].fields)
        let again = try await fx.syncReport()
        #expect(again.result == "noData")
        #expect(again.pulled == 0)
        #expect(try await fx.cli.status().events == total)

        // 10: a second store, its sync killed with SIGKILL once the first page is in its log.
        let crashed = fx.secondStore()
        let killedAt: UInt64
        do {
            let store = try Store(directory: crashed.store, create: true)
            killedAt = try await killSync(fx, on: crashed, store: store, afterSeq: 0)
        }
        #expect(killedAt > 0 && killedAt < UInt64(total), "killed after \(killedAt) events")
        // Only whole pages were kept (pages are committed with their cursor, a few to a transaction),
        // and every event is one whole record, as the server has it.
        let pageSize = try KintoRemote(bucketURL: fx.remote, credentials: nil).pageSize
        #expect(killedAt % UInt64(pageSize) == 0, "\(killedAt) events is not a whole number of \(pageSize)-record pages")
        let partial = try await crashed.list("Holiday")
        #expect(partial.ids.count == Int(killedAt))
        let server = try await fx.web.records()
        #expect(partial.records.allSatisfy { server[$0.key] == $0.value })
        #expect(try await crashed.verifyViews().status == 0)

        // Meanwhile the web app changes a record already pulled and deletes one not yet pulled.
        let pulledID = try #require(partial.ids.first)
        let notPulledID = try #require(server.keys.sorted().last { partial.records[$0] == nil })
        try await fx.web.patch(pulledID, ["details": "changed after the crash"])
        try await fx.web.delete(notPulledID)

        let resumed = try await fx.syncReport(store: crashed)
        // The rest (less the deleted one) plus the changed one; the deleted one was never here.
        #expect(resumed.pulled == total - Int(killedAt))
        #expect(resumed.deletedHere == 0)
        try await expectConverged(fx, store: crashed, count: total - 1)
        #expect(try await crashed.status().events == total, "one event per record pulled, one for the change")
        #expect(try await crashed.show("Holiday", pulledID)?["details"] == "changed after the crash")
        #expect(try await crashed.history(notPulledID).isEmpty)
        // The record created and deleted before the resumed pull's snapshot is not replayed from the
        // server's history by the next pull, whose settle window reaches back before that snapshot.
        let settled = try await fx.syncReport(store: crashed)
        #expect(settled.result == "noData", "\(settled)")
        #expect(try await crashed.history(notPulledID).isEmpty)

        // The first store gets just the two changes.
        let incremental = try await fx.syncReport()
        #expect(incremental.pulled == 1)
        #expect(incremental.deletedHere == 1)
        try await expectConverged(fx, count: total - 1)
    }

    // MARK: 10: killed while pushing

    /// `count` holidays imported into `store`, every one pending.
    private static func importHolidays(_ count: Int, into store: Evsync) async throws {
        let lines = holidays(count, prefix: "p").map { record in
            var object = record.fields
            object["id"] = .string(record.id)
            return JSONWriter.string(.object(object))
        }
        try await store.ok(["import", "Holiday", "-"], stdin: lines.joined(separator: "\n") + "\n")
    }

    @Test func syncKilledMidPushResumesWithEachRecordOnTheServerOnce() async throws {
        let fx = try SyncFixture()
        let total = 2_000
        try await Self.importHolidays(total, into: fx.cli)
        #expect(try await fx.cli.status().pendingRecords == total)

        let killedAt: UInt64
        do {
            let store = try Store(directory: fx.cli.store, create: false)
            // Kill once the first batch's acknowledgements are in the log; just before, a
            // second sync of the same store (another process) is refused while this one runs.
            killedAt = try await killSync(fx, store: store, afterSeq: UInt64(total)) {
                let second = try await fx.sync()
                #expect(second.status == 75, "\(second)")
                #expect(second.stderrLines == ["evsync: sync already in progress"])
            }
        }
        // Counted by a process of its own, as everything after: once in a full parallel run, the test
        // process's own read of the log after the kill saw one batch fewer than `status` did next.
        let events = try await fx.cli.status().events
        #expect(UInt64(events) >= killedAt, "the log never goes back: \(events) events, \(killedAt) seen before the kill")
        let acknowledged = Int(events) - total
        #expect(acknowledged > 0 && acknowledged < total, "killed after \(acknowledged) acknowledgements")
        #expect(acknowledged % 25 == 0, "each batch (Kinto's batch_max_requests, 25) is acknowledged in one transaction")
        // Acknowledged means on the server; at most the one batch in flight may land unacknowledged
        // (the server may still be writing it: its memory backend has no real transactions).
        let onServer = try await fx.web.count()
        #expect(onServer >= acknowledged)
        #expect(onServer <= acknowledged + 25)
        let status = try await fx.cli.status()
        #expect(status.pendingRecords == total - acknowledged)
        #expect(try await fx.cli.verifyViews().status == 0)

        let report = try await fx.syncReport()
        #expect(report.conflicts == 0)
        #expect(report.rejected.isEmpty)
        // Records the server took but the log never acknowledged are recognised (by the pull, or
        // by a failed If-None-Match holding the same fields); the rest are pushed.
        #expect(report.pulled + report.pushed == total - acknowledged)
        #expect(report.pulled <= 25)
        try await expectConverged(fx, count: total)
        #expect(try await fx.cli.status().events == 2 * total, "each record: its creation and one word from the server")
        #expect(try await fx.syncReport().result == "noData")
    }

    /// The same, sealed end to end: a batch the server took but the log never acknowledged is recognised when it
    /// comes back sealed, and the server ends up holding each record once, sealed, as this store holds it.
    @Test func sealedSyncKilledMidPushResumesWithEachRecordOnTheServerOnce() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let total = 2_000
        try await Self.importHolidays(total, into: fx.cli)
        let passphraseFile = fx.directory.file("passphrase")
        try "a passphrase for a crash\n".write(toFile: passphraseFile, atomically: true, encoding: .utf8)
        let sealed = ["--encrypt", "--passphrase-file", passphraseFile]

        let killedAt: UInt64
        do {
            let store = try Store(directory: fx.cli.store, create: false)
            killedAt = try await killSync(fx, store: store, afterSeq: UInt64(total), extra: sealed)
        }
        let events = try await fx.cli.status().events
        #expect(UInt64(events) >= killedAt)
        let acknowledged = Int(events) - total
        #expect(acknowledged > 0 && acknowledged < total, "killed after \(acknowledged) acknowledgements")
        let onServer = try await fx.web.count()
        #expect(onServer >= acknowledged && onServer <= acknowledged + 25)

        let report = try await fx.syncReport(sealed)
        #expect(report.conflicts == 0 && report.rejected.isEmpty && report.skipped.isEmpty, "\(report)")
        #expect(report.pulled + report.pushed == total - acknowledged)
        #expect(try await fx.cli.status().events == 2 * total, "each record: its creation and one word from the server")
        #expect(try await fx.cli.status().pendingRecords == 0)
        // The server holds each record once, sealed, and what it opens to is what this store holds.
        let local = try await fx.cli.list("Holiday")
        #expect(local.ids.count == total)
        let opened = try await SealedKintoTests.openedOnTheServer(fx, passphraseFile: passphraseFile)
        #expect(opened.count == total && opened.compactMapValues { $0 } == local.records)
        #expect(!(try await fx.web.listing()).map { JSONWriter.string(.object($0)) }.joined().contains("seeded record"))
        // Another device brings exactly them.
        let other = fx.secondStore()
        #expect(try await fx.syncReport(sealed, store: other).pulled == total)
        #expect(try await other.list("Holiday").records == local.records)
        #expect(try await fx.syncReport(sealed).result == "noData")
    }
}
