@testable import EventStore
import TestSupport
import Foundation
import Testing

/// Pages over the response cap (`EVSYNC_MAX_RESPONSE`, read by debug builds; 256 MiB shipped) are asked for
/// again with fewer records, down to one: a collection of large records pulls completely, and only a record
/// that alone is over the cap is skipped, with its reason, the pull going on past it.
@Suite(.enabled(if: TestServer.isConfigured && HostileServerTests.limitHooksWork, TestServer.skipReason), .deletesTestBuckets)
struct LargePageSyncTests {
    /// 16 KiB: a page of 1,000 ordinary holidays (some 150 bytes each) is far over it.
    static let cap = ["EVSYNC_MAX_RESPONSE": "16384"]

    @Test("a collection whose pages exceed the cap pulls completely, its records and then its history")
    func pagesOverTheCapPullCompletely() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.seed((0..<200).map { (newID(), holiday("Seeded \($0)", details: String(repeating: "d", count: 100))) })
        let first = try await fx.sync(environment: Self.cap)
        #expect(first.status == 0 && first.stderrLines.allSatisfy { $0.hasPrefix("evsync: created a new store") }, "\(first)")
        let report = try SyncJSON(try #require(first.stdoutLines.last))
        #expect(report.pulled == 200 && report.skipped.isEmpty, "\(report)")

        // A later pull reads the history too (its entries hold each record again, and more): its pages halve as well.
        try await fx.web.seed((0..<200).map { (newID(), holiday("Later \($0)", details: String(repeating: "d", count: 100))) })
        let second = try await fx.sync(environment: Self.cap)
        #expect(second.status == 0 && second.stderr.isEmpty, "\(second)")
        #expect(try SyncJSON(try #require(second.stdoutLines.last)).pulled == 200, "\(second)")
        #expect(try await fx.cli.records() == (try await fx.web.records()))
    }

    @Test("a single record over the cap alone is skipped with its reason, the rest pulled, the cursor past it")
    func oneOversizedRecordIsSkipped() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let oversized = newID()
        let before = (0..<30).map { (newID(), holiday("Before \($0)")) }
        let after = (0..<30).map { (newID(), holiday("After \($0)")) }
        try await fx.web.seed(before)
        try await fx.web.seed([(oversized, holiday("Oversized", details: String(repeating: "x", count: 20_000)))])
        try await fx.web.seed(after)

        let output = try await fx.sync(environment: Self.cap)
        #expect(output.status == 0, "a skipped record is not a failure: \(output)")
        let reason = "it is too large to read: alone it makes a response larger than 16 KiB, the most evsync accepts"
        let report = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(report.pulled == 60, "\(report)")
        #expect(report.skipped.map { "\($0.entity) \($0.id ?? "-"): \($0.reason)" } == ["Holiday \(oversized): \(reason)"], "\(report)")
        #expect(output.stderrLines.dropFirst() == ["evsync: skipped a server record that cannot be stored: Holiday \(oversized): \(reason)"],
                "\(output)")
        #expect(Set(try await fx.cli.records().keys) == Set((before + after).map(\.0)))
        #expect(try await fx.cli.status().skippedRecords == 1)

        // The cursor is past it: the next sync neither reports it again nor misses what comes after it.
        let later = newID()
        try await fx.web.put(later, holiday("Later"))
        let next = try SyncJSON(try #require(try await fx.sync(environment: Self.cap).stdoutLines.last))
        #expect(next.pulled == 1 && next.skipped.isEmpty, "\(next)")
        #expect(try await fx.cli.show("Holiday", later) != nil)
    }
}
