@testable import EventStore
import TestSupport
import Foundation
import Testing

/// What `evsync sync` says against a real Kinto server: what the server said
/// when a URL is wrong, an `https` URL on a plain server, the records in
/// conflict, `-q`, `-v`, `--watch` timestamps, the remote remembered only
/// after a sync went through, and Ctrl-C in the middle of a sync.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SyncFeedbackTests {
    /// The server root with the bucket but without `/v1`: Kinto redirects, and evsync used to say `HTTP 307: HTTP 307`.
    @Test func aURLThatIsNotABucketsSaysWhatTheServerSaidAndWhatOneLooksLike() async throws {
        let fx = try SyncFixture()
        let url = try #require(TestServer.url)
        let server = try #require(URLComponents(string: url))
        let host = try #require(server.host), port = try #require(server.port)
        let root = "http://\(host):\(port)"
        let output = try await fx.cli.run(["sync", "--remote", "\(root)/buckets/\(fx.web.bucket)", "--auth-file", fx.authFile],
                                          environment: ["EVSYNC_RETRIES": "1"])
        #expect(output.status == 69, "\(output)")
        // The first sync made the store, and said so.
        #expect(output.stderrLines.count == 2 && output.stderrLines.first == "evsync: created a new store in \(fx.cli.store)", "\(output)")
        let line = try #require(output.stderrLines.last)
        #expect(line.contains("HTTP 307 Temporary Redirect to \(root)/v1/buckets/\(fx.web.bucket)/collections/"), "\(line)")
        #expect(line.hasSuffix("One looks like \(root)/v1/buckets/\(fx.web.bucket)"), "\(line)")
        #expect(!line.contains("HTTP 307: HTTP 307"))
    }

    @Test func anHTTPSURLOnAPlainServerFailsWithoutRetryingAndSaysToUseHTTP() async throws {
        let fx = try SyncFixture()
        let https = fx.remote.replacingOccurrences(of: "http://", with: "https://")
        let output = try await fx.cli.run(["sync", "--remote", https, "--auth-file", fx.authFile], environment: ["EVSYNC_RETRIES": "5"])
        #expect(output.status == 69, "\(output)")
        #expect(output.stderrLines.count == 2 && output.stderrLines.first == "evsync: created a new store in \(fx.cli.store)", "\(output)")
        let line = try #require(output.stderrLines.last)
        #expect(line.contains("speaks plain http, not https: give the remote as an http:// URL"), "\(line)")
        #expect(!line.contains("attempts"), "not retried: \(line)")
    }

    @Test func theSummaryNamesTheRecordsInConflictAndPointsToHistory() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Original"))
        #expect(try await fx.syncReport().pulled == 1)
        try await fx.web.put(id, holiday("Server's"))
        try await fx.cli.edit(id, ["name=Mine"])
        let output = try await fx.cli.run(["sync", "--remote", fx.remote, "--auth-file", fx.authFile])
        #expect(output.status == 0, "\(output)")
        #expect(output.stdoutLines.count == 2, "\(output)")
        #expect(output.stdoutLines.last == "in conflict: Holiday \(id) (evsync history \(id) shows what each side had)", "\(output)")

        try await fx.web.put(id, holiday("Server's again"))
        try await fx.cli.edit(id, ["name=Mine again"])
        let report = try JSONParser.parse(try #require(try await fx.sync().stdoutLines.last)).objectValue
        #expect(report?["conflicted"] == [["entity": "Holiday", "id": .string(id)]], "\(String(describing: report))")
    }

    @Test func quietSilencesNothingToDoAndVerboseShowsEachRequestWithoutCredentials() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.cli.add(id: newID(), ["name=Pushed", "date=2026-12-12"])
        let verbose = try await fx.cli.run(["sync", "-v", "--remote", fx.remote, "--auth-file", fx.authFile])
        #expect(verbose.status == 0, "\(verbose)")
        #expect(verbose.stderrLines.contains { $0.hasPrefix("evsync: GET \(fx.remote)/collections/holidays/records?") && $0.hasSuffix("→ HTTP 200") },
                "\(verbose)")
        #expect(verbose.stderrLines.contains { $0.hasPrefix("evsync: POST ") && $0.contains("/batch → HTTP 200") }, "\(verbose)")
        #expect(!verbose.stderr.contains(fx.password) && !verbose.stdout.contains(fx.password))

        let plain = try await fx.cli.run(["sync", "--auth-file", fx.authFile])
        #expect(plain.stdout == "nothing to do: already in sync\n", "\(plain)")
        let quiet = try await fx.cli.run(["sync", "-q", "--auth-file", fx.authFile])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet)")
    }

    @Test func theRemoteIsRememberedOnlyOnceASyncWithItWentThrough() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.cli.add(id: newID(), ["name=First", "date=2026-12-12"])
        #expect(try await fx.syncReport().pushed == 1)
        // A typo: the wrong port.
        let typo = "http://127.0.0.1:1/v1/buckets/\(fx.web.bucket)"
        let failed = try await fx.cli.run(["sync", "--remote", typo, "--auth-file", fx.authFile], environment: ["EVSYNC_RETRIES": "1"])
        #expect(failed.status == 64 && failed.stderr.contains("evsync remote set \(typo)"), "refused before any contact: \(failed)")
        #expect(try await fx.cli.ok(["remote"]) == fx.remote + "\n")
        // The next plain sync goes to the good remote.
        try await fx.cli.add(id: newID(), ["name=Second", "date=2026-12-13"])
        let plain = try await fx.cli.run(["sync", "--json", "--auth-file", fx.authFile])
        #expect(plain.status == 0, "\(plain)")
        #expect(try SyncJSON(plain.stdout).pushed == 1)
        let status = try await fx.cli.json(["status", "--json"]).objectValue
        #expect(status?["lastSync"]?.objectValue?["result"] == "newData")
        #expect(status?["lastSync"]?.objectValue?["error"] == nil, "a later success replaces the failure")
        // For people, what happened in words (`--json` keeps newData and noData).
        let text = try await fx.cli.ok(["status"])
        #expect(text.contains(" (changes synced)\n") && !text.contains("newData"), "\(text)")
        _ = try await fx.cli.ok(["sync", "--auth-file", fx.authFile])
        let again = try await fx.cli.ok(["status"])
        #expect(again.contains(" (nothing new)\n") && !again.contains("noData"), "\(again)")
    }

    /// A watcher's output is read for what happened: a tick that did nothing prints nothing, a warning is printed
    /// once until what it says changes, and every line starts with the time.
    @Test func aWatcherPrintsWhatChangedEachLineWithTheTimeAndAWarningOnce() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.cli.add(id: "w1", ["name=Before", "date=2026-12-12"])
        let watch = try fx.cli.start(["sync", "--watch", "0.2", "--remote", fx.remote, "--auth-file", fx.authFile])
        defer { watch.signal(SIGKILL) }
        try await watch.waitFor("the push", timeout: .seconds(120)) { watch.outputSoFar().stdout.contains("pushed 1") }
        // Idle ticks, seen through the last sync's time, which each sync records.
        func ticks(_ count: Int) async throws {
            var seen = Set<String>()
            let deadline = ContinuousClock.now + .seconds(60)
            while seen.count <= count {
                try #require(ContinuousClock.now < deadline, "waiting for \(count) more syncs: \(watch.outputSoFar())")
                if let at = try? await fx.cli.json(["status", "--json"]).objectValue?["lastSync"]?.objectValue?["at"]?.stringValue { seen.insert(at) }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        try await ticks(3)
        #expect(watch.outputSoFar().stdout.split(separator: "\n").count == 1, "idle ticks print nothing: \(watch.outputSoFar())")

        // The server loses the collection: said once, not at every tick.
        let collection = "/buckets/\(fx.web.bucket)/collections/holidays"
        #expect(try await fx.web.request("DELETE", collection).status == 200)
        // Generous: on a loaded machine the shared Kinto answers 503 for a while, and the watcher retries in silence.
        try await watch.waitFor("the loss", timeout: .seconds(120)) { watch.outputSoFar().stderr.contains("the server lacks 1 Holiday record") }
        try await ticks(3)
        watch.signal(SIGINT)
        let output = await watch.wait()
        #expect([0, 130].contains(output.status) && !output.killedBySignal, "\(output)")
        #expect(output.stderrLines.count { $0.contains("the server lacks 1 Holiday record") } == 1, "\(output)")
        // (The last line, the error the command ends on, is the one not stamped: Ctrl-C between syncs, or during one.)
        let endings = ["evsync: sync --watch stopped", "evsync: sync interrupted; run sync again to finish"]
        for line in output.stdoutLines + output.stderrLines where !endings.contains(line) {
            // 2026-12-01T06:03:07+01:00 sync completed: …
            let parts = line.split(separator: " ", maxSplits: 1)
            #expect(parts.count == 2 && parts[0].count >= 20 && parts[0].contains("T"), "\(line)")
        }
    }

    /// A watcher started while nothing listens on the remote's port (the server is down, or not up yet) keeps
    /// running, says so each tick, and syncs once a server is there: each tick is a new sync, whose first
    /// request fails at once rather than after eight attempts.
    @Test func aWatchStartedAgainstADeadPortKeepsTryingAndSyncsOnceTheServerIsThere() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.cli.add(id: newID(), ["name=Waiting", "date=2026-11-11"])
        let free = try ScriptedServer(then: .init(503))
        let port = free.port
        free.stop()
        let serverURL = try #require(TestServer.url)
        let path = try #require(URLComponents(string: serverURL)).path
        let remote = "http://127.0.0.1:\(port)\(path)/buckets/\(fx.web.bucket)"
        let watch = try fx.cli.start(["sync", "--watch", "0.3", "--remote", remote, "--auth-file", fx.authFile])
        defer { watch.signal(SIGKILL) }
        try await watch.waitFor("three failed ticks") { watch.outputSoFar().stderr.components(separatedBy: "; trying again in 0.3 s").count > 3 }
        let proxy = try await SlowProxy(["--port", String(port)])
        try #require(proxy.url.hasPrefix("http://127.0.0.1:\(port)/"), "\(proxy.report)")
        // A minute, not the usual half: once, at the height of a full CI run, no sync completed within thirty
        // seconds, and its output did not say why. The report names what the proxy saw if it happens again.
        try await watch.waitFor("a sync, \(proxy.report)", timeout: .seconds(60)) { watch.outputSoFar().stdout.contains("sync completed") }
        watch.signal(SIGINT)
        let output = await watch.wait()
        withExtendedLifetime(proxy) {}
        #expect([0, 130].contains(output.status) && !output.killedBySignal, "\(output)")
        let failures = output.stderrLines.filter { $0.hasSuffix("; trying again in 0.3 s") }
        #expect(failures.count >= 3, "\(output)")
        #expect(failures.allSatisfy { $0.contains(" evsync: cannot reach http://127.0.0.1:\(port)/") && $0.contains("Couldn't connect to server") },
                "\(output)")
        #expect(output.stdoutLines.contains { $0.contains("sync completed") && $0.contains("pushed 1") }, "\(output)")
        #expect(try await fx.cli.status().pendingRecords == 0)
    }

    /// Ctrl-C while a slow server is answering: the sync stops after the page at hand, says so, and exits 130; the next one finishes.
    @Test func anInterruptedSyncSaysSoExits130AndTheNextOneFinishes() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.seed((0..<2_500).map { (newID(), holiday("Seeded \($0)")) })
        let proxy = try await SlowProxy(["--delay", "1"])
        let sync = try fx.cli.start(["sync", "--remote", proxy.url + "/buckets/" + fx.web.bucket, "--auth-file", fx.authFile])
        defer { sync.signal(SIGKILL) }
        // The handshake: the first page of holidays is answered; the next is a second away.
        try await sync.waitFor("the first page") {
            proxy.answered.contains { $0.hasPrefix("GET ") && $0.contains("/collections/holidays/records?") && $0.hasSuffix(" 200") }
        }
        sync.signal(SIGINT)
        let output = await sync.wait()
        #expect(output.status == 130 && !output.killedBySignal, "\(output)")
        #expect(output.stdout.hasPrefix("sync interrupted: pulled "), "\(output)")
        #expect(!output.stdout.contains("completed"), "\(output)")
        #expect(output.stderrLines.last == "evsync: sync interrupted; run sync again to finish", "\(output)")
        #expect(try await fx.cli.verifyViews().status == 0)

        // The next sync, with the store's remote (the one the interrupted sync went to), finishes the job.
        let next = try await fx.cli.run(["sync", "--json", "--auth-file", fx.authFile])
        #expect(next.status == 0, "\(next)")
        #expect(try await fx.cli.records("Holiday").count == 2_500, "\(next)")
    }

    /// On a terminal, the note Ctrl-C prints starts on a cleared line, not after the progress line it interrupts.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs script(1) for a terminal"))
    func theCtrlCNoteClearsTheProgressLine() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.seed((0..<2_500).map { (newID(), holiday("Seeded \($0)")) })
        let proxy = try await SlowProxy(["--delay", "1"])
        let directory = try TemporaryDirectory()
        let pidFile = directory.file("pid"), typescript = directory.file("typescript")
        // script(1) gives evsync a terminal and writes what it shows to `typescript` as it comes (-f);
        // the shell tells evsync's pid (exec keeps it).
        let command = "echo $$ > \(pidFile); exec \(BuiltProduct.evsync.path) --store \(fx.cli.store) sync --remote \(proxy.url)/buckets/\(fx.web.bucket) --auth-file \(fx.authFile)"
        let terminal = try RunningProcess(executable: "/usr/bin/script", arguments: ["-qfec", "sh -c '\(command)'", typescript],
                                          environment: Evsync.baseEnvironment)
        func shown() -> String { (try? String(contentsOfFile: typescript, encoding: .utf8)) ?? "" }
        // The handshake: the first page's progress line is on the screen (the next page is a second away).
        for _ in 0..<1_200 where !shown().contains("pulling Holiday: 1000 of 2500 records, 1 page") && !terminal.hasExited {
            try await Task.sleep(for: .milliseconds(25))
        }
        let pid = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(pid, SIGINT)
        let output = await terminal.wait()
        #expect(output.status == 130, "\(output)")
        #expect(output.stdout.contains("\r\u{1B}[Kevsync: stopping after the current page"), "\(output.stdout.debugDescription)")
    }
}
