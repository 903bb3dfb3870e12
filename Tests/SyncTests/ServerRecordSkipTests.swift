@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// Records another client wrote through Kinto's API that evsync cannot store,
/// and servers that go backwards: against a real Kinto server, through the CLI.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ServerRecordSkipTests {
    /// A value nested `levels` deep.
    private func nested(_ levels: Int) -> JSONValue {
        var value: JSONValue = 1
        for _ in 0..<levels { value = .array([value]) }
        return value
    }

    /// Writes a record as a web app would, checking only the status (its answer may be too deep to read).
    private func putRaw(_ fx: SyncFixture, _ pathID: String, _ fields: JSONObject) async throws {
        let response = try await fx.web.request("PUT", "/buckets/\(fx.web.bucket)/collections/holidays/records/\(pathID)",
                                                body: ["data": .object(fields)])
        #expect([200, 201].contains(response.status), "PUT \(pathID): \(response)")
    }

    @Test func aRecordThatCannotBeStoredIsSkippedAndTheSyncGoesOn() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let good = newID()
        try await fx.web.put(good, holiday("Good"))
        // Nested 300 deep (Kinto takes up to ~479 in one PUT): evsync holds what Kinto holds.
        try await putRaw(fx, "deep1", ["name": "Deep", "date": "2026-01-01", "deep": nested(300)])
        try await putRaw(fx, "abc%0A", holiday("Id ending in a newline"))  // Kinto's id check lets "abc\n" through
        try await fx.cli.add(id: "local1", ["name=Local", "date=2026-03-03"])

        let output = try await fx.sync()
        #expect(output.status == 0, "a sync that skipped records did what it could: \(output)")
        let report = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(report.result == "newData")
        #expect(report.pulled == 2)
        #expect(report.pushed == 1, "the push still runs")
        #expect(try await fx.web.get("local1")?.fields == holiday("Local", date: "2026-03-03"))
        #expect(report.skipped.count == 1, "\(report.skipped)")
        let newline = try #require(report.skipped.first)
        #expect(newline.id == nil && newline.reason.contains(#""abc\n" is not a valid Kinto id"#), "\(newline)")
        #expect(output.stderr.contains(#"evsync: skipped a server record that cannot be stored: Holiday"#)
                && output.stderr.contains(#"is not a valid Kinto id"#), "\(output.stderr)")
        #expect(try await fx.cli.status().skippedRecords == 1)
        #expect(try await fx.cli.show("Holiday", "deep1")?["deep"] == nested(300))
        #expect(try await fx.cli.verifyViews().status == 0)

        // The cursor moved past the skipped record: the next sync records nothing again.
        let events = try await fx.cli.status().events
        let again = try await fx.syncReport()
        #expect(again.result == "noData" && again.skipped.isEmpty, "\(again)")
        #expect(try await fx.cli.status().events == events)
    }

    @Test func aSkippedRecordTheServerNoLongerHasStopsCounting() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // Over the response cap a debug build is given (EVSYNC_MAX_RESPONSE): skipped with its id and version.
        let big = newID()
        try await fx.web.put(big, holiday("Big", details: String(repeating: "x", count: 20_000)))
        let cap = ["EVSYNC_MAX_RESPONSE": "16384"]
        let first = try await fx.sync(environment: cap)
        #expect(try SyncJSON(try #require(first.stdoutLines.last)).skipped.map(\.id) == [big], "\(first)")
        #expect(try await fx.cli.status().skippedRecords == 1)

        // The server loses the collection: the record it no longer has is no longer one the store skipped.
        #expect(try await fx.web.request("DELETE", "/buckets/\(fx.web.bucket)/collections/holidays").status == 200)
        let after = try await fx.sync(environment: cap)
        #expect(after.status == 0, "\(after)")
        #expect(try await fx.cli.status().skippedRecords == 0, "\(after)")
    }

    @Test func aServerRestoredFromABackupIsReadAgainFromTheStart() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (kept, lost, fromBackup) = (newID(), newID(), newID())
        try await fx.web.put(kept, holiday("Kept"))
        // The newest change is an hour ahead: Kinto takes a last_modified given in the future (up to a day).
        let future = Int64(Date().timeIntervalSince1970 * 1000) + 3_600_000
        try await fx.web.put(lost, holiday("Lost in the restore").merging(["last_modified": .number(JSONNumber(future))]) { $1 })
        #expect(try await fx.syncReport().pulled == 2)

        // The server goes back to an older state: the collection is recreated from a backup
        // (fewer records, older than what this store pulled last).
        let collection = "/buckets/\(fx.web.bucket)/collections/holidays"
        #expect(try await fx.web.request("DELETE", collection).status == 200)
        #expect([200, 201].contains(try await fx.web.request("PUT", collection, body: ["data": [:]]).status))
        try await fx.web.put(kept, holiday("Kept, as the backup had it"))
        try await fx.web.put(fromBackup, holiday("Only in the backup"))
        #expect(try await fx.web.timestamp(in: "holidays") < future)

        let output = try await fx.sync()
        #expect(output.status == 0, "\(output)")
        let report = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(report.reread == ["Holiday"], "\(report)")
        #expect(report.pulled == 2, "\(report)")
        #expect(output.stderr.contains("the server's Holiday data is older than the last sync"), "\(output.stderr)")
        #expect(try await fx.cli.show("Holiday", fromBackup) == holiday("Only in the backup"))
        #expect(try await fx.cli.show("Holiday", kept) == holiday("Kept, as the backup had it"))
        // The normal rules: a record the server lost, in step here, stays here and is not pushed.
        #expect(try await fx.cli.show("Holiday", lost) == holiday("Lost in the restore"))
        #expect(try await fx.cli.status().pendingRecords == 0)

        // Once read again, the next sync has nothing to do.
        let again = try await fx.sync()
        let againReport = try SyncJSON(try #require(again.stdoutLines.last))
        // Not noData: a sync that finds a record the server lost says so in its result too.
        #expect(againReport.result == "newData" && againReport.pulled == 0 && againReport.reread.isEmpty, "\(again)")
        // The count differs from the log's, so the sync checks a listing: the lost record is named, and kept here.
        #expect(again.stderr.contains("the server lacks 1 Holiday record this store holds as synced"), "\(again.stderr)")
        #expect(try await fx.cli.show("Holiday", lost) == holiday("Lost in the restore"))
    }
}

/// Ids longer than evsync makes: Kinto accepts them, so the store holds them
/// (under a hashed key in the views) and every command reaches them.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct LongServerIDTests {
    @Test func aRecordWithA5000CharacterIdIsPulledShownEditedAndPushed() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let long = "L" + String(repeating: "0123456789", count: 500)
        let alsoLong = "L" + String(repeating: "0123456789", count: 500) + "x"
        try await fx.web.put(long, holiday("Long"))
        try await fx.web.put(alsoLong, holiday("Also long"))
        try await fx.web.put("short", holiday("Short"))

        let report = try await fx.syncReport()
        #expect(report.pulled == 3 && report.skipped.isEmpty, "\(report)")
        let listed = try await fx.cli.list()
        #expect(listed.ids == [long, alsoLong, "short"].sorted(), "list shows the full ids, sorted")
        #expect(try await fx.cli.show("Holiday", long) == holiday("Long"))
        #expect(try await fx.cli.history(alsoLong).map { $0["id"]?.stringValue } == [alsoLong])

        try await fx.cli.edit(long, ["details=edited here"])
        #expect(try await fx.cli.status().pendingRecords == 1)
        let pushed = try await fx.syncReport()
        #expect(pushed.pushed == 1, "\(pushed)")
        #expect(try await fx.web.get(long)?.fields == holiday("Long", details: "edited here"))
        #expect(try await fx.cli.status().pendingRecords == 0)

        try await fx.web.delete(alsoLong)
        #expect(try await fx.syncReport().deletedHere == 1)
        #expect(try await fx.cli.show("Holiday", alsoLong) == nil)
        #expect(try await fx.cli.verifyViews().status == 0)
        // A new id made here keeps the store's own rule.
        let refused = try await fx.cli.run(["add", "Holiday", "--id", long, "name=X", "date=2026-01-01"])
        #expect(refused.status == 65 && refused.stderr.contains("at most 128 characters"), "\(refused)")
    }
}
