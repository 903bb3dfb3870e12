@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Synchronization
import Testing

/// The engine's scheduler across processes: a change another process makes (the `evsync` CLI) starts a
/// sync of an engine in this one, and `sync --watch` pushes a change made by any process at once, not at
/// its next tick.
@Suite("Scheduler across processes", .timeLimit(.minutes(2)))
struct SyncWatchTests {
    @Test func aChangeMadeByAnotherProcessStartsASync() async throws {
        let directory = try TemporaryDirectory()
        let cli = Evsync(store: directory.file("store"))
        try await cli.add(id: "first", ["name=First", "date=2026-01-01"])
        let store = try Store(directory: cli.store)
        let remote = InMemoryRemote()
        let engine = SyncEngine(store: store) { remote }
        var statuses = engine.start(every: .seconds(3600)).makeAsyncIterator()
        #expect(try await Self.nextReport(&statuses).pushed == 1, "the sync at start")

        try await cli.add(id: "second", ["name=Second", "date=2026-01-02"])
        let report = try await Self.nextReport(&statuses)
        #expect(report.pushed == 1, "\(report)")
        #expect(remote.records(in: "Holiday")["second"]?["name"] == "Second")
        await engine.stop()
    }

    static func nextReport(_ statuses: inout AsyncStream<SyncStatus>.Iterator) async throws -> SyncReport {
        while let status = await statuses.next() {
            if let report = status.finishedReport { return report }
        }
        throw SyncError(.failure, "the statuses ended before a sync finished")
    }
}

/// Two stores each on `sync --watch` against the test Kinto: an `evsync add` in either is pushed long before the
/// next tick. The interval is an hour, so that however slowly a loaded machine runs the steps, no tick can
/// push in the test's place (each step has a deadline of its own). A watcher learns of the server's changes at
/// its own syncs (Kinto tells no client when it changes): here B's own add makes it sync, which brings A's record.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets, .timeLimit(.minutes(5)))
struct SyncWatchKintoTests {
    @Test func twoWatchersPushWhatAnyProcessAddsLongBeforeTheirNextTick() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let a = fx.cli, b = fx.secondStore()
        for store in [a, b] { _ = try await fx.syncReport(store: store) }
        let watchers = try [a, b].map { try $0.start(["sync", "--watch", "3600", "--remote", fx.remote, "--auth-file", fx.authFile, "--json"]) }
        defer { for watcher in watchers where !watcher.hasExited { watcher.signal(SIGKILL) } }
        func waitFor(_ what: String, _ done: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while try await !done() {
                try #require(ContinuousClock.now < deadline, "waiting for \(what): \(watchers.map { $0.outputSoFar() })")
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        // Each watcher's first sync is done: the next tick is a minute away.
        try await waitFor("the first syncs") { watchers.allSatisfy { $0.outputSoFar().stdout.hasSuffix("}\n") } }

        let fromA = newID(), fromB = newID()
        try await a.add(id: fromA, ["name=Added in A", "date=2026-11-11"])
        try await waitFor("A's record on the server") { try await fx.web.get(fromA) != nil }
        try await b.add(id: fromB, ["name=Added in B", "date=2026-11-12"])
        try await waitFor("B's record on the server") { try await fx.web.get(fromB) != nil }
        try await waitFor("A's record in B") { try await b.show("Holiday", fromA) != nil }

        for watcher in watchers { watcher.signal(SIGINT) }
        for watcher in watchers {
            let output = await watcher.wait()
            #expect(output.status == 130 && output.stderr.hasSuffix("evsync: sync --watch stopped\n"), "\(output)")
            let reports = try output.stdoutLines.map(SyncJSON.init)
            #expect(reports.count >= 2 && reports.allSatisfy { $0.error == nil }, "\(output)")
        }
        #expect(try await a.status().pendingRecords == 0)
        #expect(try await b.status().pendingRecords == 0)
    }
}

/// `sync --watch` against a server that answers, and fails the same way at every sync: it backs off past its
/// interval instead of asking for the same failing answer at the watch's full rate.
@Suite(.timeLimit(.minutes(2)))
struct SyncWatchBackoffTests {
    @Test func aServerThatFailsTheSameWayIsAskedLessAndLessOften() async throws {
        let server = try ScriptedServer(then: .init(400, headers: ["Content-Type": "application/json"],
                                                    body: #"{"code":400,"message":"this page cannot be read"}"#))
        let directory = try TemporaryDirectory()
        let cli = Evsync(store: directory.file("store"))
        let watch = try cli.start(["sync", "--watch", "0.2", "--remote", "http://127.0.0.1:\(server.port)/v1/buckets/b"])
        defer { if !watch.hasExited { watch.signal(SIGKILL) } }
        func waits() -> [String] {
            watch.outputSoFar().stderr.split(separator: "\n").compactMap { line in
                line.range(of: "; trying again in ").map { String(line[$0.upperBound...]) }
            }
        }
        // The handshake: each failed sync says how long it waits before the next.
        let deadline = ContinuousClock.now + .seconds(60)
        while waits().count < 5 {
            try #require(ContinuousClock.now < deadline, "\(watch.outputSoFar())")
            try await Task.sleep(for: .milliseconds(50))
        }
        watch.signal(SIGINT)
        let output = await watch.wait()
        #expect(output.status == 130, "\(output)")
        #expect(waits().prefix(5) == ["0.2 s", "0.4 s", "0.8 s", "1.6 s", "3.2 s"], "\(output.stderr)")
        #expect(output.stderr.contains("the server failed listing birthdays: HTTP 400 Scripted: this page cannot be read"), "\(output.stderr)")
    }
}
