import EventStore
import TestSupport
import Foundation
import Testing

/// A collection another device is pushing to: its writes still committing must not look like a server that lost
/// changes. Each false alarm would list the whole collection (`verify --remote`), as costly as a first pull.
/// Its 3,000 pushes and pulls go to a Kinto of its own: queued behind the rest of the suite on the shared one,
/// they took 6 to 8 minutes instead of 16 seconds.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .timeLimit(.minutes(10)))
struct BusyCollectionTests {
    @Test("sync --watch 0.5 on one store while another pushes 3,000 records: no listing, no 'lost a change' line")
    func busyCollectionTriggersNoListing() async throws {
        let kinto = try await OwnKinto()
        let directory = try TemporaryDirectory("synctests-busy")
        let watcher = Evsync(store: directory.file("watcher")), pusher = Evsync(store: directory.file("pusher"))
        let remote = kinto.server + "/buckets/evsync"
        func sync(_ store: Evsync, environment: [String: String] = [:]) async throws -> ProcessOutput {
            try await store.run(["sync", "--remote", remote, "--auth-file", kinto.authFile, "--json"], environment: environment)
        }
        try await watcher.add(id: newID(), ["name=Before", "date=2026-01-01"])
        for store in [watcher, pusher] {
            let first = try await sync(store)
            #expect(first.status == 0, "\(first)")
        }
        let lines = (0..<3000).map { #"{"name":"Busy \#($0)","date":"2026-06-01"}"# }
        try await pusher.ok(["import", "Holiday", "-"], stdin: lines.joined(separator: "\n") + "\n")

        // A short settle window, so that the pull that settles the cursor, the one that counts, comes within seconds.
        let environment = ["EVSYNC_SETTLE_WINDOW_MS": "1000"]
        let watch = try watcher.start(["sync", "--watch", "0.5", "--remote", remote, "--auth-file", kinto.authFile, "--json"],
                                      environment: environment)
        defer { if !watch.hasExited { watch.signal(SIGKILL) } }
        func reports() -> Int { watch.outputSoFar().stdout.split(separator: "\n").count { $0.hasSuffix("}") } }
        func waitFor(_ what: String, _ done: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(180)
            while try await !done() {
                try #require(ContinuousClock.now < deadline, "waiting for \(what): \(watch.outputSoFar())")
                try await Task.sleep(for: .milliseconds(250))
            }
        }
        try await waitFor("the watcher's first sync") { reports() >= 1 }
        let push = try await sync(pusher, environment: environment)
        #expect(push.status == 0, "\(push)")
        try await waitFor("the 3,001 records in the watcher") { try await watcher.status().records["Holiday"] == 3001 }
        // Well past the settle window: the watcher's cursor has settled, and its count was taken.
        let seen = reports()
        try await waitFor("ten more syncs") { reports() >= seen + 10 }
        watch.signal(SIGINT)
        let output = await watch.wait()
        #expect(output.status == 130, "\(output)")
        let alarms = output.stderrLines.filter { $0.contains("lost a change") }
        #expect(alarms.isEmpty, "\(alarms.count) of \(output.stdoutLines.count) syncs listed the collection: \(output.stderrLines.prefix(5))")
        #expect(try await watcher.status().records["Holiday"] == 3001)
    }
}
