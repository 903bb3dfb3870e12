@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// A sync through a server that answers slowly must never hold up local work:
/// LMDB has one writer, so a sync that waited on the network inside its write
/// transaction made every `add`, `edit` and `delete` queue behind the server.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SlowServerTests {
    @Test func localChangesDuringASlowSyncReturnAtOnceAndArePushedByTheNextSync() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        // Three pages to pull, each answered `delay` seconds late.
        try await fx.web.seed((0..<2_500).map { (newID(), holiday("Seeded \($0)")) })
        let delay = 3.0
        let proxy = try await SlowProxy(["--delay", String(delay)])
        let slowRemote = proxy.url + "/buckets/" + fx.web.bucket
        let kept = newID(), gone = newID()
        try await fx.cli.add(id: kept, ["name=Kept", "date=2026-01-01"])
        try await fx.cli.add(id: gone, ["name=Gone", "date=2026-01-02"])

        let sync = try fx.cli.start(["sync", "--json", "--remote", slowRemote, "--auth-file", fx.authFile])
        // Local work, timed, for as long as the slow sync runs: an add, an edit and a delete each round.
        var durations: [(String, Duration)] = []
        var added: [String] = []
        let clock = ContinuousClock()
        func timed(_ what: String, _ body: () async throws -> Void) async throws {
            let start = clock.now
            try await body()
            durations.append((what, clock.now - start))
        }
        var round = 0
        while !sync.hasExited {
            round += 1
            let id = newID()
            try await timed("add") { try await fx.cli.add(id: id, ["name=Added \(round)", "date=2026-02-01"]) }
            try await timed("edit") { try await fx.cli.edit(kept, ["details=edit \(round)"]) }
            if let last = added.last {
                try await timed("delete") { try await fx.cli.delete(last) }
            }
            added.append(id)
            try await Task.sleep(for: .milliseconds(200))
        }
        let output = await sync.wait()
        #expect(output.status == 0, "\(output)")

        // The sync waited on the server for several delays; local work never did.
        #expect(round >= 4, "the sync ended before local work could overlap it: \(output)")
        let slowest = try #require(durations.max { $0.1 < $1.1 })
        #expect(slowest.1 < .seconds(delay / 2), "\(slowest.0) took \(slowest.1) while a sync waited on a slow server")

        try await fx.cli.delete(gone)
        // The next sync (direct: the store moved there on purpose) pushes whatever the slow one had not.
        _ = try await fx.cli.ok(["remote", "set", fx.remote])
        let direct = try await fx.cli.run(["sync", "--json", "--auth-file", fx.authFile])
        let report = try SyncJSON(try #require(direct.stdoutLines.last))
        #expect(direct.status == 0 && report.result != "failed", "\(direct)")
        #expect(try await fx.cli.status().pendingRecords == 0)
        let server = try await fx.web.records(in: "holidays")
        #expect(server == (try await fx.cli.records("Holiday")))
        #expect(server[kept]?["details"] == .string("edit \(round)"))
        #expect(server[gone] == nil)
        let lastAdded = try #require(added.last)
        #expect(server[lastAdded] != nil)
        #expect(server.count == 2_500 + 2)
    }
}
