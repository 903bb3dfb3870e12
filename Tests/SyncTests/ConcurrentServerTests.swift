@testable import EventStore
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// What a Kinto on PostgreSQL below SERIALIZABLE does when clients write at
/// once, replayed by `Tools/slow-proxy` in front of the real test server: a
/// batch rolled back whose earlier writes still answer 201, and a record
/// committed after a page that should have held it was read.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ConcurrentServerTests {
    @Test func aBatchKintoRolledBackIsSentAgainAndEachWriteAcknowledgedOnceWithTheServersVersion() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let synced = try await fx.web.put("b-edited", holiday("Before"))
        #expect(try await fx.syncReport().pulled == 1)
        for n in 0..<6 { try await fx.cli.add(id: "a\(n)", ["name=Created \(n)", "date=2026-04-04"]) }
        try await fx.cli.edit("b-edited", ["name=After"])

        // One batch of 7: a0…a2 answered 201 and dropped, a3 409, a4, a5 and b-edited applied.
        let proxy = try await SlowProxy(["--roll-back-batch"])
        _ = try await fx.cli.ok(["remote", "set", proxy.url + "/buckets/" + fx.web.bucket])
        let output = try await fx.cli.run(["sync", "--json", "--auth-file", fx.authFile])
        #expect(output.status == 0, "\(output)")
        let report = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(report.pushed == 7 && report.conflicts == 0 && report.rejected.isEmpty, "\(report)")

        var expected = Dictionary(uniqueKeysWithValues: (0..<6).map { ("a\($0)", holiday("Created \($0)", date: "2026-04-04")) })
        expected["b-edited"] = holiday("After")
        #expect(try await fx.web.records() == expected, "every write reached the server")
        for id in expected.keys.sorted() {
            let acknowledgements = try await fx.cli.history(id).filter { $0["kind"] == "acknowledged" }
            let server = try #require(try await fx.web.get(id))
            #expect(acknowledgements.count == 1, "\(id): \(acknowledgements)")
            #expect(acknowledgements.first?["version"]?.int64Value == server.version, "\(id) is logged at the server's version")
        }
        #expect(try await fx.web.get("b-edited")?.version != synced)
        #expect(try await fx.cli.status().pendingRecords == 0)
        let again = try await fx.cli.run(["sync", "--json", "--auth-file", fx.authFile])
        #expect(try SyncJSON(try #require(again.stdoutLines.last)).result == "noData", "\(again)")
    }

    @Test func aRecordCommittedBelowTheCursorAfterAPullIsReadByTheNextPull() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.put("late", holiday("Stamped first, committed last"))
        try await fx.web.put("early", holiday("Stamped second, committed first"))

        // The first pull does not see "late" (not yet committed when its page was read) but reads past its stamp.
        let proxy = try await SlowProxy(["--hide-record", "late"])
        // A window of an hour, so that the test does not depend on how fast it runs.
        let window = ["EVSYNC_SETTLE_WINDOW_MS": "3600000"]
        let remote = proxy.url + "/buckets/" + fx.web.bucket
        let first = try await fx.cli.run(["sync", "--json", "--remote", remote, "--auth-file", fx.authFile], environment: window)
        #expect(first.status == 0, "\(first)")
        #expect(try await fx.cli.records().keys.sorted() == ["early"])

        let second = try await fx.cli.run(["sync", "--json", "--remote", remote, "--auth-file", fx.authFile], environment: window)
        let report = try SyncJSON(try #require(second.stdoutLines.last))
        #expect(report.pulled == 1, "only the late record is new; the one read again is known at its version: \(report)")
        #expect(try await fx.cli.records() == ["early": holiday("Stamped second, committed first"),
                                               "late": holiday("Stamped first, committed last")])
        #expect(try await fx.cli.history("early").count == 1, "a record read again writes nothing")
    }
}

/// The pieces of the above that need no server.
@Suite struct ConcurrentServerRuleTests {
    @Test func theCursorStaysTheWindowBehindTheServersClockAndNeverGoesBack() {
        func after(_ previous: PullPosition?, _ pageNewest: Int64?, serverTime: Int64? = 100_000) -> PullPosition? {
            PullPosition.after(previous, pageNewest: pageNewest, serverTime: serverTime, window: 10_000)
        }
        #expect(after(nil, 50_000) == PullPosition(start: 50_000, newest: 50_000), "settled long ago")
        #expect(after(nil, 95_000) == PullPosition(start: 90_000, newest: 95_000), "the last 10 s are read again")
        #expect(after(PullPosition(start: 92_000, newest: 99_000), 95_000) == nil, "never back: a page that moves nothing")
        #expect(after(PullPosition(start: 90_000, newest: 95_000), 95_000, serverTime: 120_000) == PullPosition(start: 95_000, newest: 95_000))
        #expect(after(nil, 95_000, serverTime: nil) == PullPosition(start: 95_000, newest: 95_000), "no Date: as before")
        #expect(after(nil, 105_000) == PullPosition(start: 105_000, newest: 105_000), "a stamp a client gave, ahead of the clock")
        #expect(after(PullPosition(start: 1, newest: 2), nil) == nil, "a page without records moves nothing")

        #expect(PullPosition(RemoteCursor("95000")) == PullPosition(start: 95_000, newest: 95_000), "as earlier versions wrote it")
        #expect(PullPosition(RemoteCursor("90000:95000")) == PullPosition(start: 90_000, newest: 95_000))
        #expect(PullPosition(start: 90_000, newest: 95_000).cursor.token == "90000:95000")
        #expect(PullPosition(start: 95_000, newest: 95_000).cursor.token == "95000")
        for bad in ["", "x", "1:2:3", "5:4", ":5", "5:"] { #expect(PullPosition(RemoteCursor(bad)) == nil, "\(bad)") }
    }

    @Test func httpDates() {
        #expect(KintoPull.milliseconds(fromHTTPDate: "Tue, 01 Dec 2026 04:42:18 GMT") == 1_796_100_138_000)
        #expect(KintoPull.milliseconds(fromHTTPDate: "Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        for bad in ["", "yesterday", "Tue, 01 Dec 2026 04:42:18 CET", "Tue, 32 Dec 2026 04:42:18 GMT", "Tue, 01 Dec 2026 25:00:00 GMT",
                    "Tue, 01 Foo 2026 04:42:18 GMT", "Tue, 01 Dec 99999999999999999999 04:42:18 GMT"] {
            #expect(KintoPull.milliseconds(fromHTTPDate: bad) == nil, "\(bad)")
        }
    }

    @Test func aRetryAfterIsALowerBoundWithARandomShareOnTop() {
        let policy = RetryPolicy()
        #expect(policy.delay(after: 1, retryAfter: 1, random: { $0.lowerBound }) == 1)
        #expect(policy.delay(after: 1, retryAfter: 1, random: { $0.upperBound }) == 1.5)
        #expect(policy.delay(after: 1, retryAfter: 120, random: { $0.upperBound }) == 45, "capped at 30 s, then spread")
        #expect(policy.delay(after: 6, retryAfter: 1, random: { $0.upperBound }) == 16, "the backoff when it is longer")
        #expect(policy.delay(after: 1, retryAfter: nil, random: { $0.lowerBound }) == 0.25)
    }

    @Test func aBatchWithA409OrA5xxAnswerWasRolledBack() {
        func batch(_ statuses: [Int]) -> HTTPResponse {
            let answers = statuses.map { #"{"status":\#($0),"headers":{"Retry-After":"3"},"body":{"message":"m"}}"# }
            return HTTPResponse(status: 200, headers: [:], body: Array(#"{"responses":[\#(answers.joined(separator: ","))]}"#.utf8))
        }
        #expect(KintoRemote.rollback(ofBatch: batch([201, 201, 412, 404]), collection: "c") == nil)
        let rolledBack = KintoRemote.rollback(ofBatch: batch([201, 409, 201]), collection: "c")
        #expect(rolledBack?.retryAfter == 3)
        #expect(rolledBack?.reason == "the server rolled back a batch to c (a write in it answered HTTP 409: m)")
        #expect(KintoRemote.rollback(ofBatch: batch([201, 503]), collection: "c") != nil)
    }
}
