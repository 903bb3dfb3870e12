@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// A server that trickles and one that finds a batch too large: neither may hold a sync forever or let one
/// record block the others (pages over the response cap: `LargePageSyncTests`). Each runs through
/// `Tools/slow-proxy` in front of the test server, or against it directly.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct HostileServerTests {
    /// `EVSYNC_SLOW_TIME` and `EVSYNC_MAX_RESPONSE` shorten the limits in debug builds only.
    static let limitHooksWork: Bool = {
        #if DEBUG
        true
        #else
        false
        #endif
    }()

    @Test("a server sending 1 byte a second is abandoned by the minimum rate, retried, and reported as too slow (exit 69)",
          .enabled(if: limitHooksWork, "EVSYNC_SLOW_TIME is read by debug builds only"))
    func tricklingServer() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.seed((0..<20).map { (newID(), holiday("Seeded \($0)")) })
        try await fx.cli.add(id: newID(), ["name=Waiting", "date=2026-11-11"])
        let before = try await fx.cli.status()
        let proxy = try await SlowProxy(["--trickle", "1"])
        let trickling = proxy.url + "/buckets/" + fx.web.bucket

        // Without a minimum rate this sync would take hours (the holidays page
        // is some 3 KB): give it a minute, then count it as held.
        let sync = try fx.cli.start(["sync", "--remote", trickling, "--auth-file", fx.authFile],
                                    environment: ["EVSYNC_SLOW_TIME": "2", "EVSYNC_RETRIES": "2"])
        let deadline = ContinuousClock.now + .seconds(60)
        while !sync.hasExited, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        sync.signal(SIGKILL)
        let output = await sync.wait()
        #expect(!output.killedBySignal, "a trickling server held the sync for a minute: \(output)")
        #expect(output.status == 69, "\(output)")
        #expect(output.stderrLines.count == 1, "\(output)")
        let line = try #require(output.stderrLines.first)
        #expect(line.hasPrefix("evsync: the server at \(proxy.url)/buckets/\(fx.web.bucket)/collections/"), "\(line)")
        #expect(line.hasSuffix(" was too slow: less than 1 KiB/s for 2 s (gave up after 2 attempts)"), "\(line)")
        #expect(!output.stderr.contains(fx.password))

        // Nothing was written, and the lock is free: a sync straight to the server does it all.
        #expect(try await fx.cli.status().events == before.events)
        let report = try await fx.syncReport()
        #expect(report.pulled == 20 && report.pushed == 1, "\(report)")
    }

    @Test("413 on a batch splits it down to single records: one oversized record is rejected, the others are pushed")
    func batchTooLarge() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // As waitress's max_request_body_size would: 16 KiB a request. A batch
        // of 25 ordinary records is some 6 KB; one record of 20,000 characters
        // is too large alone.
        let proxy = try await SlowProxy(["--max-body", "16384"])
        let limited = proxy.url + "/buckets/" + fx.web.bucket
        let ordinary = (0..<30).map { _ in newID() }
        let oversized = newID()
        for (index, id) in ordinary.enumerated() {
            try await fx.cli.add(id: id, ["name=Ordinary \(index)", "date=2026-06-01"])
            if index == 10 {
                try await fx.cli.add(id: oversized, ["name=Oversized", "date=2026-06-02", "details=" + String(repeating: "x", count: 20_000)])
            }
        }

        let output = try await fx.cli.run(["sync", "--remote", limited, "--auth-file", fx.authFile, "--json"])
        #expect(output.status == 1, "refused changes exit 1: \(output)")
        let report = try SyncJSON(output.stdout)
        #expect(report.pushed == 30, "\(report)")
        #expect(report.rejected == ["Holiday \(oversized): HTTP 413: the record is larger than the server accepts in one request"], "\(report)")
        #expect(output.stderrLines.contains("evsync: the server refused Holiday \(oversized): HTTP 413: the record is larger than the server accepts in one request"),
                "\(output)")

        let server = try await fx.web.records(in: "holidays")
        #expect(Set(server.keys) == Set(ordinary))
        // The oversized record stays pending, held: not sent again by itself; sent again, alone, when asked.
        #expect(try await fx.cli.status().pendingRecords == 1)
        let again = try SyncJSON(try await fx.cli.run(["sync", "--remote", limited, "--auth-file", fx.authFile, "--json"]).stdout)
        #expect(again.pushed == 0 && again.rejected.isEmpty && again.held == ["Holiday \(oversized)"], "\(again)")
        let resent = try SyncJSON(try await fx.cli.run(["sync", "--remote", limited, "--auth-file", fx.authFile, "--json",
                                                        "--resend-refused"]).stdout)
        #expect(resent.pushed == 0 && resent.rejected.count == 1 && resent.held.isEmpty, "\(resent)")
    }
}
