@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// A server that accepts a conditional write but answers with another record
/// than the one sent: the real Kinto server behind `Tools/rewriting-proxy`.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ServerAnswerTests {
    /// `Tools/rewriting-proxy` in front of the test server, merging `fields` into every accepted write's answer.
    private final class RewritingProxy: Sendable {
        let url: String
        private let process: RunningProcess
        private let directory: TemporaryDirectory

        init(fields: JSONObject) async throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let serverURL = try #require(TestServer.url)
            let server = try #require(URLComponents(string: serverURL))
            let host = try #require(server.host), port = try #require(server.port)
            directory = try TemporaryDirectory("synctests-proxy")
            let portFile = directory.file("url")
            process = try RunningProcess(executable: root.appendingPathComponent("Tools/rewriting-proxy").path,
                                         arguments: ["--target", "http://\(host):\(port)", "--set", JSONWriter.string(.object(fields)),
                                                     "--port-file", portFile],
                                         environment: ProcessInfo.processInfo.environment)
            var written: String?
            for _ in 0..<100 where written == nil {
                try await Task.sleep(for: .milliseconds(50))
                written = try? String(contentsOfFile: portFile, encoding: .utf8)
            }
            url = try #require(written?.trimmingCharacters(in: .whitespacesAndNewlines), "the proxy did not start") + server.path
        }

        deinit { process.signal(SIGTERM) }
    }

    @Test func aWriteAnsweredWithAnotherRecordIsTheServersStateNotAnAcknowledgement() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let proxy = try await RewritingProxy(fields: ["details": "said by the server"])
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
