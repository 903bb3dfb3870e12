@testable import EventStore
import TestSupport
import Foundation
import Testing

/// `evsync verify --remote [--repair]` against a real Kinto server.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct VerifyRemoteTests {
    func verify(_ fx: SyncFixture, _ extra: [String] = []) async throws -> (status: Int32, json: JSONObject) {
        let output = try await fx.cli.run(["verify", "--remote", "--auth-file", fx.authFile, "--json"] + extra)
        let object = try JSONParser.parse(output.stdoutLines.last ?? "").objectValue ?? [:]
        return (output.status, object)
    }

    func kinds(_ object: JSONObject) -> [String: String] {
        var kinds: [String: String] = [:]
        for finding in object["findings"]?.arrayValue ?? [] {
            if let id = finding.objectValue?["id"]?.stringValue { kinds[id] = finding.objectValue?["kind"]?.stringValue }
        }
        return kinds
    }

    @Test func aRecordBelowTheCursorIsFoundAndRepairThenSyncConverges() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.put(newID(), holiday("Labour Day"))
        _ = try await fx.syncReport()
        #expect(try await verify(fx).status == 0)

        // A client (a restore tool) writes a record with an old last_modified: below our cursor, no pull brings it.
        let low = newID()
        try await fx.web.put(low, ["name": "Old", "date": "2020-01-01", "last_modified": 1000])
        _ = try await fx.syncReport()
        #expect(try await fx.cli.show("Holiday", low) == nil, "no pull brings it")

        let found = try await verify(fx)
        #expect(found.status == 1)
        #expect(kinds(found.json) == [low: "unseen"])
        let repaired = try await verify(fx, ["--repair"])
        #expect(repaired.status == 0)
        #expect(repaired.json["repaired"]?.int64Value == 1)
        #expect(try await fx.cli.show("Holiday", low) == ["name": "Old", "date": "2020-01-01"])
        _ = try await fx.syncReport()
        #expect(try await fx.cli.records() == (try await fx.web.records()))
        #expect(try await verify(fx).json["findings"]?.arrayValue?.isEmpty == true)
    }

    @Test func aRecordOlderOnTheServerThanItAcknowledgedIsPendingAgain() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Labour Day"))
        _ = try await fx.syncReport()
        try await fx.cli.edit(id, ["details=ours"])
        _ = try await fx.syncReport()
        // The server goes back to the old state at an older version (a backup restored, for this record):
        // deleted and written again with an old last_modified, which Kinto keeps for a new record.
        try await fx.web.delete(id)
        try await fx.web.put(id, ["name": "Labour Day", "date": "2026-05-01", "last_modified": 2000])
        let found = try await verify(fx, ["--repair"])
        #expect(kinds(found.json) == [id: "rolledBack"])
        #expect(try await fx.cli.status().pendingRecords == 1)
        #expect(try await fx.syncReport().pushed == 1)
        #expect(try await fx.web.get(id)?.fields == holiday("Labour Day", details: "ours"))
    }

    @Test func verifyNeedsRemoteAndKeepsTheLogVerifyApart() async throws {
        let fx = try SyncFixture()
        _ = try await fx.syncReport()
        let output = try await fx.cli.run(["verify"])
        #expect(output.status == 64)
        #expect(output.stderr.contains("log verify"))
    }

    /// `kinto purge-deleted` needs a server on PostgreSQL (`Tools/kinto start --postgres`): with the
    /// memory backend it would purge a copy of its own. Skipped on other servers.
    static var kintoState: String? {
        guard let auth = TestServer.authFile else { return nil }
        let state = URL(fileURLWithPath: auth).deletingLastPathComponent().path
        let backend = (try? String(contentsOfFile: state + "/backend", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        return backend == "postgres" ? state : nil
    }

    @Test(.enabled(if: kintoState != nil, "needs the test server on PostgreSQL (Tools/kinto start --postgres)"))
    func aDeletionWhoseTombstoneWasPurgedIsFoundAndRepaired() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // Without the history plugin, which keeps the deletion (and a pull reads it there).
        let proxy = try await SlowProxy(["--hide-capability", "history"])
        let remote = proxy.url + "/buckets/" + fx.web.bucket
        let sync = { try await fx.cli.run(["sync", "--remote", remote, "--auth-file", fx.authFile, "--json"]) }
        _ = try await sync()
        let (kept, gone, last) = (newID(), newID(), newID())
        try await fx.web.put(kept, holiday("Kept"))
        try await fx.web.put(gone, holiday("Gone"))
        #expect(try await sync().status == 0)
        try await fx.web.delete(gone)
        try await fx.web.put(last, holiday("Last"))  // the deletion is not the newest change: its loss shows nowhere else
        let state = try #require(Self.kintoState)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let purge = try await ProcessRunner.run(root.appendingPathComponent(".tools/venv/bin/kinto").path,
                                                ["purge-deleted", "--ini", state + "/kinto.ini", "record", "0"],
                                                environment: ProcessInfo.processInfo.environment)
        #expect(purge.status == 0, "\(purge)")

        let found = try await verify(fx)
        #expect(found.status == 1)
        #expect(kinds(found.json) == [gone: "purged"])
        // A sync sees it by itself: Total-Records disagrees with what the log holds as live there.
        let output = try await sync()
        #expect(output.status == 0, "\(output)")
        let verified = try JSONParser.parse(output.stdoutLines.last ?? "").objectValue?["verified"]
        #expect(verified == ["Holiday"])
        #expect(try SyncJSON(output.stdoutLines.last ?? "").deletedHere == 1)
        #expect(try await fx.cli.show("Holiday", gone) == nil)
        #expect(try await fx.cli.history(gone).last?["kind"]?.stringValue == "deleted")
        #expect(try await fx.cli.records() == (try await fx.web.records()))
    }
}
