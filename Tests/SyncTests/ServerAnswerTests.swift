@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// A server that accepts a conditional write but answers with another record
/// than the one sent: the real Kinto server behind `Tools/slow-proxy --rewrite-accepted`.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ServerAnswerTests {
    @Test func aWriteAnsweredWithAnotherRecordIsTheServersStateNotAnAcknowledgement() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let proxy = try await SlowProxy(["--rewrite-accepted", #"{"details": "said by the server"}"#])
        let remote = proxy.url + "/buckets/" + fx.web.bucket
        try await fx.cli.add(id: "mine", ["name=Mine", "date=2026-04-04"])

        let output = try await fx.cli.run(["sync", "--json", "--remote", remote, "--auth-file", fx.authFile])
        #expect(output.status == 0, "\(output)")
        let report = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(report.pushed == 0 && report.pulled == 1, "the answer is news from the server, not our push: \(report)")
        let history = try await fx.cli.history("mine")
        #expect(!history.contains { $0["kind"] == "acknowledged" }, "\(history)")
        let last = try #require(history.last)
        #expect(last["origin"] == "remote" && last["set"]?.objectValue?["details"] == "said by the server", "\(last)")
        #expect(try await fx.cli.show("Holiday", "mine") == holiday("Mine", date: "2026-04-04", details: "said by the server"))
        #expect(try await fx.cli.verifyViews().status == 0)
    }
}
