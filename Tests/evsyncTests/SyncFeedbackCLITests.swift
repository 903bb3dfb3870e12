import Foundation
import Testing
import TestSupport
@testable import EventStore

/// What `evsync sync` tells a person and keeps for `status`, without a server:
/// checked `EVSYNC_*` values, `EVSYNC_AUTH_FILE`, `evsync remote`, a failed sync
/// that neither replaces the remembered remote nor goes unrecorded, retries
/// silent in a pipe, `-v`, and Ctrl-C during retries. Nothing here reaches a
/// server: 127.0.0.1:1 refuses every connection, and a `ScriptedServer` that
/// answers 503 to everything is a server that falters.
@Suite("CLI sync feedback and safe defaults")
struct SyncFeedbackCLITests {
    static let unreachable = "http://127.0.0.1:1/v1/buckets/x"
    static let good = "http://127.0.0.1:2/v1/buckets/good"
    static let parseKeys: [String: String?] = ["EVSYNC_PARSE_APPLICATION_ID": "app", "EVSYNC_PARSE_REST_API_KEY": "key"]

    /// An adapter: its remote URL on a server's root, and the variables a sync with it needs.
    struct Adapter: Sendable, CustomTestStringConvertible {
        var name: String
        var scheme = ""
        var path: String
        var variables: [String: String?] = [:]

        func remote(_ root: String) -> String { scheme + root + path }
        var testDescription: String { name }
    }

    static let adapters = [Adapter(name: "kinto", path: "/v1/buckets/x"),
                           Adapter(name: "parse", scheme: "parse+", path: "/parse", variables: parseKeys)]

    /// A server that answers 503 to every request, then the test.
    static func withFalteringServer(_ body: (ScriptedServer) throws -> Void) throws {
        let server = try ScriptedServer(then: .init(503, body: #"{"message": "down for maintenance", "error": "down for maintenance"}"#))
        defer { server.stop() }
        try body(server)
    }

    @Test("a refused connection on a sync's first request fails at once with the reason (exit 69), not after eight attempts",
          arguments: adapters)
    func refusedConnectionFailsAtOnce(adapter: Adapter) throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            let started = ContinuousClock.now
            // The default eight attempts: retrying them took 41 s.
            let result = try sandbox.run(["sync", "--remote", adapter.remote("http://127.0.0.1:1")], environment: adapter.variables)
            #expect(ContinuousClock.now - started < .seconds(5), "\(adapter.name): \(result)")
            #expect(result.status == 69, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result)")
            #expect(lines.first?.hasPrefix("evsync: cannot reach http://127.0.0.1:1/") == true, "\(result)")
            #expect(lines.first?.hasSuffix(": Couldn't connect to server") == true, "\(result)")
        }
    }

    @Test("a bad value of an EVSYNC_ variable is refused with 64 and one line naming it", arguments: [
        ("EVSYNC_RETRIES", "many"), ("EVSYNC_RETRIES", "0"), ("EVSYNC_RETRIES", "101"), ("EVSYNC_RETRIES", "2.5"),
        ("EVSYNC_ALLOW_INSECURE_AUTH", "yes"), ("EVSYNC_ALLOW_INSECURE_AUTH", "true"), ("EVSYNC_REMOTE_TYPE", "couch"),
    ])
    func badEnvironmentValues(name: String, value: String) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["sync", "--remote", Self.unreachable], environment: [name: value])
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
            #expect(result.stderr.contains(name) && result.stderr.contains(value), "\(result)")
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "refused before the store is made")
        }
    }

    @Test("EVSYNC_AUTH_FILE is read as --auth-file is, and --auth-file wins over it")
    func authFileFromTheEnvironment() throws {
        try withSandbox { sandbox in
            let missing = sandbox.root.appendingPathComponent("no-such-auth").path
            let result = try sandbox.run(["sync", "--remote", Self.unreachable], environment: ["EVSYNC_AUTH_FILE": missing])
            #expect(result.status == Exit.noInput, "\(result)")
            #expect(result.stderr == "evsync: EVSYNC_AUTH_FILE names no readable file (no such file; its value is not shown, in case it is a password)\n",
                    "\(result)")

            let password = "Pw-" + UUID().uuidString
            let readable = try sandbox.write("auth", "me:\(password)")
            #expect(chmod(readable, 0o644) == 0)
            let used = try sandbox.run(["sync", "--remote", Self.unreachable], environment: ["EVSYNC_AUTH_FILE": readable, "EVSYNC_RETRIES": "1"])
            #expect(used.status == 69, "\(used)")
            #expect(used.stderr.contains("warning: the auth file \(readable)"), "the file was read: \(used)")
            #expect(!used.stderr.contains(password))

            let private_ = try sandbox.write("auth2", "me:\(password)")
            #expect(chmod(private_, 0o600) == 0)
            let option = try sandbox.run(["sync", "--remote", Self.unreachable, "--auth-file", private_],
                                         environment: ["EVSYNC_AUTH_FILE": missing, "EVSYNC_RETRIES": "1"])
            #expect(option.status == 69, "--auth-file wins: \(option)")
        }
    }

    @Test("evsync remote shows, sets and checks the remote without contacting it")
    func remoteCommand() throws {
        try withSandbox { sandbox in
            #expect(try sandbox.run(["remote"]).status == Exit.noInput, "no store yet")
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            let none = try sandbox.succeed(["remote"])
            #expect(none.stdout.isEmpty)
            #expect(none.stderr.contains("no remote yet"), "\(none)")
            #expect(try sandbox.succeed(["remote", "--json"]).json() == ["remote": nil, "type": nil])

            try sandbox.succeed(["remote", Self.good + "/"])
            #expect(try sandbox.succeed(["remote"]).stdout == Self.good + "\n", "the adapter's spelling of the address")
            #expect(try sandbox.succeed(["remote", "--json"]).json() == ["remote": .string(Self.good), "type": "kinto"])
            #expect(try sandbox.status()["remote"] == .string(Self.good))

            for bad in ["http://127.0.0.1:2/v1/collections/x", "ftp://127.0.0.1/v1/buckets/x", "http://me:pw@127.0.0.1/v1/buckets/x"] {
                let result = try sandbox.run(["remote", bad])
                #expect(result.status == Exit.usage, "\(bad): \(result)")
                #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
                #expect(!result.stderr.contains("pw@"))
            }
            #expect(try sandbox.succeed(["remote"]).stdout == Self.good + "\n", "a refused URL changes nothing")
        }
    }

    @Test("a failed sync with another --remote keeps the remembered one, and status shows the failure")
    func failedSyncIsRecordedAndRemembersNothing() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            try sandbox.succeed(["remote", Self.good])
            let events = try sandbox.eventCount()
            let failed = try sandbox.run(["sync", "--remote", Self.unreachable], environment: ["EVSYNC_RETRIES": "1"])
            #expect(failed.status == 69, "\(failed)")
            #expect(try sandbox.succeed(["remote"]).stdout == Self.good + "\n", "the typo did not replace the remote")

            let status = try sandbox.status()
            #expect(status["remote"] == .string(Self.good))
            let lastSync = try #require(status["lastSync"]?.objectValue, "\(status)")
            #expect(lastSync["result"] == "failed")
            #expect(lastSync["error"]?.stringValue?.contains("127.0.0.1:1") == true, "\(lastSync)")
            #expect(lastSync["at"]?.stringValue != nil)
            #expect(status["events"]?.int64Value == events, "a failed sync is no event")
            let text = try sandbox.succeed(["status"]).stdout
            #expect(text.contains("(failed: cannot reach http://127.0.0.1:1/"), "\(text)")

            // A first sync that fails remembers nothing either.
            try sandbox.succeed(["add", "Holiday", "name=Y", "date=2026-01-02", "--store", sandbox.root.appendingPathComponent("other").path])
            let other = try sandbox.run(["sync", "--remote", Self.unreachable, "--store", sandbox.root.appendingPathComponent("other").path],
                                        environment: ["EVSYNC_RETRIES": "1"])
            #expect(other.status == 69)
            let plain = try sandbox.run(["sync", "--store", sandbox.root.appendingPathComponent("other").path])
            #expect(plain.status == Exit.usage, "no remote remembered: \(plain)")
            #expect(plain.stderr.contains("no remote"))
        }
    }

    @Test("in a pipe, retries print nothing; -v shows each request and what came of it, never the password", arguments: adapters)
    func retriesInAPipeAndVerbose(adapter: Adapter) throws {
        try withSandbox { sandbox in try Self.withFalteringServer { server in
            let environment = adapter.variables.merging(["EVSYNC_RETRIES": "2"]) { $1 }
            let quiet = try sandbox.run(["sync", "--remote", adapter.remote(server.url)], environment: environment)
            #expect(quiet.status == 69)
            let lines = quiet.stderr.split(separator: "\n")
            #expect(lines.count == 2 && lines.first == "evsync: created a new store in \(sandbox.store.path)", "only the new store and the error: \(quiet)")
            #expect(quiet.stderr.hasSuffix("answered HTTP 503: down for maintenance (gave up after 2 attempts)\n"), "\(quiet)")

            let password = "Pw-" + UUID().uuidString
            let auth = try sandbox.write("auth", "me:\(password)")
            #expect(chmod(auth, 0o600) == 0)
            let verbose = try sandbox.run(["sync", "-v", "--remote", adapter.remote(server.url), "--auth-file", auth], environment: environment)
            #expect(verbose.status == 69)
            let requests = verbose.stderr.split(separator: "\n").filter { $0.hasPrefix("evsync: GET \(server.url)/") }
            #expect(requests.count >= 2, "\(adapter.name): \(verbose)")
            #expect(requests.allSatisfy { $0.hasSuffix("→ HTTP 503") }, "\(verbose)")
            #expect(!verbose.stderr.contains(password) && !verbose.stdout.contains(password))
            #expect(!verbose.stderr.lowercased().contains("authorization"))
        } }
    }

    @Test("Ctrl-C on a sync --watch between syncs says it stopped, without advice to sync again, and exits 130")
    func watchStoppedWhileWaiting() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            let watch = try sandbox.launch(["sync", "--watch", "60", "--json", "--remote", Self.unreachable], environment: ["EVSYNC_RETRIES": "1"])
            // The first sync has failed (its object is out) and the watcher waits a minute for the next.
            let deadline = Date().addingTimeInterval(60)
            while !watch.currentOutput.hasSuffix("\n"), watch.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            kill(watch.pid, SIGINT)
            let result = watch.wait(timeout: 30)
            #expect(result.status == 130, "\(result)")
            #expect(result.stderr.hasSuffix("\nevsync: sync --watch stopped\n"), "\(result)")
            #expect(!result.stderr.contains("run sync again") && !result.stderr.contains("current page"), "nothing was left to do: \(result)")
        }
    }

    static let script = ["/usr/bin/script", "/bin/script"].first(where: FileManager.default.isExecutableFile)

    @Test("on a terminal, each retry says why, when and which attempt it is",
          .enabled(if: script != nil, "needs script(1) for a terminal"), arguments: adapters)
    func retriesOnATerminal(adapter: Adapter) throws {
        try withSandbox { sandbox in try Self.withFalteringServer { server in
            let assignments = adapter.variables.compactMap { key, value in value.map { "\(key)=\($0)" } }.joined(separator: " ")
            // script(1) runs the command on a pseudo-terminal and copies what it writes to its own output.
            let result = try sandbox.launchShell(
                "\(assignments) EVSYNC_RETRIES=3 \(Self.script ?? "script") -qec '\"$EVSYNC_BINARY_PATH\" sync --remote \(adapter.remote(server.url))' /dev/null"
            ).wait()
            let lines = result.stdout.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            let retries = lines.filter { $0.contains("answered HTTP 503: down for maintenance; retrying in ") }
            #expect(retries.count == 2, "\(adapter.name): \(result)")
            #expect(retries.first?.hasSuffix(", 2/3") == true && retries.last?.hasSuffix(", 3/3") == true, "\(result)")
            #expect(lines.last?.hasSuffix("(gave up after 3 attempts)") == true, "\(result)")
        } }
    }

    @Test("Ctrl-C while a sync waits to retry stops it at once: it says so and exits 130, and status records it",
          arguments: adapters)
    func interruptDuringRetries(adapter: Adapter) throws {
        try withSandbox { sandbox in try Self.withFalteringServer { server in
            try sandbox.succeed(["add", "Holiday", "name=X", "date=2026-01-01"])
            let events = try sandbox.eventCount()
            // 100 attempts would take many minutes of backoff.
            let sync = try sandbox.launch(["sync", "--json", "--remote", adapter.remote(server.url)],
                                          environment: adapter.variables.merging(["EVSYNC_RETRIES": "100"]) { $1 })
            // The handshake: the server has refused one request three times (Kinto's first one is also sent ahead,
            // without retries): the sync is in its retries, waiting to try again.
            func mostRepeated() -> Int { Dictionary(grouping: server.requests, by: \.line).values.map(\.count).max() ?? 0 }
            let deadline = Date().addingTimeInterval(30)
            while mostRepeated() < 3, sync.isRunning, Date() < deadline { usleep(20_000) }
            try #require(mostRepeated() >= 3, "the sync never retried: \(sync.currentOutput)")
            kill(sync.pid, SIGINT)
            let result = sync.wait(timeout: 30)
            #expect(result.status == 130, "\(result)")
            #expect(result.stderr.split(separator: "\n").last?.hasPrefix("evsync: sync interrupted: \(server.url)/") == true, "\(adapter.name): \(result)")
            #expect(result.stderr.hasSuffix("; run sync again to finish\n"), "\(result)")
            let report = try #require(try result.json().objectValue, "\(result)")
            #expect(report["interrupted"] == true)
            #expect(report["result"] == "failed")
            let status = try sandbox.status()
            #expect(status["events"]?.int64Value == events, "the log is as it was")
            #expect(status["pendingRecords"]?.int64Value == 1)
            let lastSync = try #require(status["lastSync"]?.objectValue)
            #expect(lastSync["interrupted"] == true, "\(lastSync)")
            #expect(try sandbox.succeed(["log", "verify"]).stdout.hasPrefix("log is sound"))
        } }
    }
}
