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

        // A client (a restore tool) writes a record with an old last_modified: below our cursor, where no pull
        // looks. (A sync would notice by itself when the server's Total-Records differs from the log's count,
        // and repair it as below; verify is run first here, so that the finding is its own.)
        let low = newID()
        try await fx.web.put(low, ["name": "Old", "date": "2020-01-01", "last_modified": 1000])
        #expect(try await fx.cli.show("Holiday", low) == nil)
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

    /// A lost collection, the loss followed here (`--missing delete`), then the records restored on the server
    /// from a backup at their old versions: the log has each at that version, deleted. The repair brings them
    /// back (it once counted them repaired and appended nothing), and says what it saw without calling an
    /// equal version one the log never saw.
    @Test func recordsRestoredAtTheVersionTheLogDeletedAreBroughtBackByTheRepair() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let ids = [newID(), newID()]
        var versions: [String: Int64] = [:]
        for id in ids { versions[id] = try await fx.web.put(id, holiday("Labour Day")) }
        #expect(try await fx.syncReport().pulled == 2)
        #expect(try await fx.web.request("DELETE", "/buckets/\(fx.web.bucket)/collections/holidays").status == 200)
        _ = try await fx.web.request("PUT", "/buckets/\(fx.web.bucket)/collections/holidays", body: ["data": [:]])
        #expect(try await fx.syncReport(["--missing", "delete"]).deletedHere == 2)
        for id in ids { try await fx.web.put(id, ["name": "Labour Day", "date": "2026-05-01", "last_modified": .number(JSONNumber(versions[id] ?? 0))]) }

        let text = try await fx.cli.run(["verify", "--remote", "--auth-file", fx.authFile])
        #expect(text.status == 1 && text.stdoutLines.count { $0.hasPrefix("unseen") } == 2, "\(text)")
        for line in text.stdoutLines where line.hasPrefix("unseen") {
            #expect(line.contains("deleted here") && !line.contains("never saw"), "\(line)")
        }
        let repaired = try await verify(fx, ["--repair"])
        #expect(repaired.status == 0 && repaired.json["repaired"]?.int64Value == 2, "\(repaired)")
        #expect(try await fx.cli.records().count == 2, "the repair brought them back")
        let next = try await fx.syncReport()
        #expect(next.pushed == 0 && next.deletedHere == 0 && next.deletedThere == 0, "\(next)")
        #expect(try await verify(fx).json["findings"]?.arrayValue?.isEmpty == true)
        #expect(try await fx.cli.records() == (try await fx.web.records()))
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

    /// Purging tombstones needs a server on PostgreSQL (`Tools/kinto start --postgres`): with the
    /// memory backend only the server process holds them. Skipped on other servers.
    static var kintoState: String? {
        guard let auth = TestServer.authFile else { return nil }
        let state = URL(fileURLWithPath: auth).deletingLastPathComponent().path
        let backend = (try? String(contentsOfFile: state + "/backend", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        return backend == "postgres" ? state : nil
    }

    /// What `kinto purge-deleted record 0` does (`DELETE FROM objects WHERE … AND deleted`), for one
    /// collection only: the command purges every bucket of the server, other tests' tombstones with them.
    static func purgeTombstones(of collection: String, in bucket: String) async throws {
        let state = try #require(kintoState)
        let ini = try String(contentsOfFile: state + "/kinto.ini", encoding: .utf8)
        let url = try #require(ini.split(separator: "\n").first { $0.hasPrefix("kinto.storage_url = ") }?
            .dropFirst("kinto.storage_url = ".count))
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let candidates = ["/usr/bin/psql"] + versions.map { "/usr/lib/postgresql/\($0)/bin/psql" }
        let psql = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) })
        let sql = "DELETE FROM objects WHERE parent_id = '/buckets/\(bucket)/collections/\(collection)' AND resource_name = 'record' AND deleted"
        let purge = try await ProcessRunner.run(psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", String(url), "-c", sql],
                                                environment: ProcessInfo.processInfo.environment)
        #expect(purge.status == 0, "\(purge)")
    }

    @Test(.enabled(if: kintoState != nil, "needs the test server on PostgreSQL (Tools/kinto start --postgres)"))
    func aDeletionWhoseTombstoneWasPurgedIsFoundAndRepaired() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // Without the history plugin, which keeps the deletion (and a pull reads it there).
        let proxy = try await SlowProxy(["--hide-capability", "history"])
        let remote = proxy.url + "/buckets/" + fx.web.bucket
        // A settle window of 1 ms: the count is read by the pull that settles the cursor, here the first or the
        // second after the change (the server's clock is in whole seconds).
        let sync = { try await fx.cli.run(["sync", "--remote", remote, "--auth-file", fx.authFile, "--json"],
                                          environment: ["EVSYNC_SETTLE_WINDOW_MS": "1"]) }
        _ = try await sync()
        let (kept, gone, last) = (newID(), newID(), newID())
        try await fx.web.put(kept, holiday("Kept"))
        try await fx.web.put(gone, holiday("Gone"))
        #expect(try await sync().status == 0)
        try await fx.web.delete(gone)
        try await fx.web.put(last, holiday("Last"))  // the deletion is not the newest change: its loss shows nowhere else
        try await Self.purgeTombstones(of: "holidays", in: fx.web.bucket)

        let found = try await verify(fx)
        #expect(found.status == 1)
        #expect(kinds(found.json) == [gone: "purged"])
        // A sync sees it by itself: Total-Records disagrees with what the log holds as live there.
        var output = try await sync()
        let deadline = ContinuousClock.now + .seconds(30)
        while output.status == 0, try SyncJSON(output.stdoutLines.last ?? "").deletedHere == 0, ContinuousClock.now < deadline {
            output = try await sync()
        }
        #expect(output.status == 0, "\(output)")
        let verified = try JSONParser.parse(output.stdoutLines.last ?? "").objectValue?["verified"]
        #expect(verified == ["Holiday"])
        #expect(try SyncJSON(output.stdoutLines.last ?? "").deletedHere == 1)
        #expect(try await fx.cli.show("Holiday", gone) == nil)
        #expect(try await fx.cli.history(gone).last?["kind"]?.stringValue == "deleted")
        #expect(try await fx.cli.records() == (try await fx.web.records()))
    }
}
