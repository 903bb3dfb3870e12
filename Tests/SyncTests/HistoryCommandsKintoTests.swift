@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Testing

/// conflicts, resolve, why, blame, diff and revert on what a real sync with Kinto logged, and what the
/// next sync then pushes.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct HistoryCommandsKintoTests {
    @Test(arguments: ConflictPolicy.allCases)
    func aConflictResolvedTheOtherWayIsPushedAndClosed(policy: ConflictPolicy) async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Base", details: "base details"))
        _ = try await fx.syncReport()
        try await fx.cli.edit(id, ["name=Local name"])
        try await fx.web.patch(id, ["name": "Server name"])
        #expect(try await fx.syncReport(["--conflicts", policy.rawValue]).conflicts == 1)

        let listed = try #require(try await fx.cli.json(["conflicts", "--open", "--json"]).arrayValue)
        try #require(listed.count == 1)
        let conflict = try #require(listed[0].objectValue)
        let seq = try #require(conflict["seq"]?.int64Value)
        let winner: Conflict.Side = policy == .serverWins ? .server : .local
        #expect(conflict["policy"] == .string(policy.rawValue) && conflict["won"] == .string(winner.rawValue))
        #expect(conflict["fields"] == [["field": "name", "local": "Local name", "server": "Server name", "won": .string(winner.rawValue)]])

        // Decide it the other way.
        let take: Conflict.Side = winner == .server ? .local : .server
        let chosen = take == .local ? "Local name" : "Server name"
        let resolved = try #require(try await fx.cli.json(["resolve", "\(seq)", "--take", take.rawValue, "--json"]).objectValue)
        let resolveSeq = try #require(resolved["seq"]?.int64Value)
        #expect(try await fx.cli.json(["conflicts", "--open", "--json"]) == [])
        let why = try #require(try await fx.cli.json(["why", "Holiday", id, "--json"]).objectValue)
        #expect(why["pending"] == true && why["state"] == "changedHere", "\(why)")
        #expect(why["fields"]?.arrayValue?.first?.objectValue?["since"]?.objectValue?["seq"]?.int64Value == resolveSeq)

        let report = try await fx.syncReport(["--conflicts", policy.rawValue])
        #expect(report.pushed == 1 && report.conflicts == 0, "pushed through the usual conditional write")
        #expect(try await fx.web.get(id)?.fields == holiday(chosen, details: "base details"))
        let inStep = try #require(try await fx.cli.json(["why", "Holiday", id, "--json"]).objectValue)
        #expect(inStep["pending"] == false && inStep["state"] == "inStep")
        #expect(inStep["lastExchange"]?.objectValue?["kind"] == "acknowledged")
        let blame = try #require(try await fx.cli.json(["blame", "Holiday", id, "--json"]).objectValue?["fields"]?.objectValue)
        #expect(blame["name"]?.objectValue?["seq"]?.int64Value == resolveSeq && blame["name"]?.objectValue?["origin"] == "local")
        #expect(blame["details"]?.objectValue?["origin"] == "remote" && blame["details"]?.objectValue?["version"] != nil)

        // diff --from last-sync: what the last sync brought.
        try await fx.web.patch(id, ["details": "from the web"])
        _ = try await fx.syncReport(["--conflicts", policy.rawValue])
        let changes = try #require(try await fx.cli.json(["diff", "--from", "last-sync", "--json"]).arrayValue)
        #expect(changes == [["entity": "Holiday", "id": .string(id), "change": "changed",
                             "fields": ["details": ["old": "base details", "new": "from the web"]]]])
    }

    @Test func revertingARecordDeletedOnTheServerCreatesItThereAgain() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Kept", details: "worth keeping"))
        _ = try await fx.syncReport()
        let before = try await fx.cli.status().events
        try await fx.web.delete(id)
        #expect(try await fx.syncReport().deletedHere == 1)
        #expect(try await fx.cli.show("Holiday", id) == nil)

        let dry = try await fx.cli.ok(["revert", "Holiday", id, "--to", "\(before)", "--dry-run"])
        #expect(dry.contains(#"name: (unset) → "Kept""#), "\(dry)")
        let reverted = try #require(try await fx.cli.json(["revert", "Holiday", id, "--to", "\(before)", "--json"]).objectValue)
        #expect(reverted["kind"] == "created")
        #expect(try await fx.syncReport().pushed == 1)
        #expect(try await fx.web.get(id)?.fields == holiday("Kept", details: "worth keeping"))
        #expect(try await fx.cli.status().pendingRecords == 0)
    }

    @Test func aRefusedPushIsLoggedOnceAndWhySaysSo() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let proxy = try await SlowProxy(["--max-body", "16384"])
        let limited = proxy.url + "/buckets/" + fx.web.bucket
        let id = newID()
        try await fx.cli.add(id: id, ["name=Oversized", "date=2026-06-02", "details=" + String(repeating: "x", count: 20_000)])
        let sync = ["sync", "--remote", limited, "--auth-file", fx.authFile, "--json"]
        #expect(try await fx.cli.run(sync).status == 1)

        let why = try #require(try await fx.cli.json(["why", "Holiday", id, "--json"]).objectValue)
        #expect(why["pending"] == true && why["state"] == "createdHere")
        let last = try #require(why["lastExchange"]?.objectValue)
        #expect(last["kind"] == "rejected" && last["origin"] == "remote", "\(last)")
        #expect(last["reason"]?.stringValue?.hasPrefix("HTTP 413") == true, "\(last)")
        let text = try await fx.cli.ok(["why", "Holiday", id])
        #expect(text.contains("the server refused a push: HTTP 413"), "\(text)")

        // Refused again, the same way: not logged again; still pending, nothing acknowledged.
        let events = try await fx.cli.status().events
        #expect(try await fx.cli.run(sync).status == 1)
        #expect(try await fx.cli.status().events == events)
        #expect(try await fx.cli.history(id).map { $0["kind"] } == ["created", "rejected"])
        #expect(try await fx.cli.status().pendingRecords == 1)
        // Through the server itself (the store moved there on purpose), it goes.
        _ = try await fx.cli.ok(["remote", "set", fx.remote])
        let direct = try await fx.cli.run(["sync", "--auth-file", fx.authFile, "--json"])
        #expect(try SyncJSON(try #require(direct.stdoutLines.last)).pushed == 1, "\(direct)")
        #expect(try await fx.cli.json(["why", "Holiday", id, "--json"]).objectValue?["state"] == "inStep")
    }
}
