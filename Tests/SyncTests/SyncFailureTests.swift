@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// Syncs that must not happen: a second sync at once, refused credentials, an
/// unreachable server, credentials in a URL. None of them may change the log
/// or print a secret.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SyncFailureTests {
    /// A store with one synced record and one local change waiting.
    private func storeWithPendingChange(_ fx: SyncFixture) async throws -> StatusJSON {
        try await fx.web.createBucket()
        try await fx.web.put(newID(), holiday("On the server"))
        #expect(try await fx.syncReport().pulled == 1)
        try await fx.cli.add(id: newID(), ["name=Waiting", "date=2026-11-11"])
        let status = try await fx.cli.status()
        #expect(status.pendingRecords == 1)
        return status
    }

    // MARK: 11: one sync at a time

    @Test func aSecondConcurrentSyncIsRefusedWithExit75() async throws {
        let fx = try SyncFixture()
        let before = try await storeWithPendingChange(fx)
        let timestamp = try await fx.web.timestamp()

        do {
            // The same lock a running sync holds, taken by this process.
            let lock = try SyncLock(directory: fx.cli.store)
            let output = try await fx.sync()
            #expect(output.status == 75, "\(output)")
            #expect(output.stderrLines == ["evsync: sync already in progress"])
            #expect(try await fx.cli.status().events == before.events)
            #expect(try await fx.web.timestamp() == timestamp, "the refused sync sent nothing")
            withExtendedLifetime(lock) {}
        }

        // Once the lock is released, the same command works.
        let report = try await fx.syncReport()
        #expect(report.pushed == 1)
        #expect(try await fx.cli.status().pendingRecords == 0)
    }

    // MARK: 13: refused credentials and an unreachable server

    @Test func aWrongPasswordExits77WithOneClearLineAndLeavesTheLogAlone() async throws {
        let fx = try SyncFixture()
        let before = try await storeWithPendingChange(fx)
        let user = try #require(fx.web.credentials.split(separator: ":").first)
        let wrongPassword = "Wr0ng-" + UUID().uuidString

        for arguments in [["--json"], []] {
            let output = try await fx.cli.run(["sync", "--remote", fx.remote] + arguments,
                                              environment: ["EVSYNC_AUTH": "\(user):\(wrongPassword)"])
            #expect(output.status == 77, "\(output)")
            #expect(output.stderrLines.count == 1)
            let line = try #require(output.stderrLines.first)
            #expect(line.hasPrefix("evsync: "))
            #expect(line.contains("credentials"))
            #expect(!output.stdout.contains(wrongPassword) && !output.stderr.contains(wrongPassword))
            #expect(!output.stdout.contains(fx.password) && !output.stderr.contains(fx.password))
            if arguments == ["--json"] {
                #expect(try SyncJSON(output.stdout).result == "failed")
            }
        }
        let after = try await fx.cli.status()
        #expect(after.events == before.events)
        #expect(after.pendingRecords == 1)
        #expect(!(try await fx.cli.tail(100)).contains { JSONWriter.string(.object($0)).contains(wrongPassword) })
    }

    @Test func anUnreachableServerExits69AndLeavesTheLogAlone() async throws {
        let fx = try SyncFixture()
        let before = try await storeWithPendingChange(fx)
        // Nothing listens there: a mistyped port fails at once, not after the default eight attempts, whose waits
        // add up to half a minute or more. (A cold CI run took 6 s to start the CLI and fail: the bound is generous.)
        // A store that synced moves to another remote only on purpose (`remote set`).
        _ = try await fx.cli.ok(["remote", "set", "http://127.0.0.1:1/v1/buckets/x"])
        let started = ContinuousClock.now
        let output = try await fx.cli.run(["sync", "--json"], environment: ["EVSYNC_AUTH": fx.web.credentials])
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(output.status == 69, "\(output)")
        #expect(output.stderrLines.count == 1)
        let line = try #require(output.stderrLines.first)
        #expect(line.hasPrefix("evsync: cannot reach http://127.0.0.1:1/"))
        #expect(line.hasSuffix(": Couldn't connect to server"), "\(line)")
        #expect(try SyncJSON(output.stdout).result == "failed")
        #expect(!output.stdout.contains(fx.password) && !output.stderr.contains(fx.password))
        let after = try await fx.cli.status()
        #expect(after.events == before.events)
        #expect(after.pendingRecords == 1)
    }

    // MARK: 14: secrets are never printed

    @Test func thePasswordNeverAppearsInOutputOrLog() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.put(newID(), holiday("Pulled"))
        try await fx.cli.add(id: newID(), ["name=Pushed", "date=2026-12-12"])
        let environment = ["EVSYNC_AUTH": fx.web.credentials]

        var outputs: [ProcessOutput] = []
        outputs.append(try await fx.cli.run(["sync", "--remote", fx.remote, "--json"], environment: environment))
        outputs.append(try await fx.cli.run(["sync", "--remote", fx.remote], environment: environment))
        outputs.append(try await fx.cli.run(["status"]))
        outputs.append(try await fx.cli.run(["status", "--json"]))
        outputs.append(try await fx.cli.run(["log", "tail", "-n", "1000", "--json"]))
        outputs.append(try await fx.cli.run(["log", "tail", "-n", "1000"]))
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs)")
        #expect(try SyncJSON(outputs[0].stdout).result == "newData")
        for output in outputs {
            #expect(!output.stdout.contains(fx.password), "\(output)")
            #expect(!output.stderr.contains(fx.password), "\(output)")
        }
        // Nor is it stored: the store remembers the remote, never the credentials.
        for file in try FileManager.default.contentsOfDirectory(atPath: fx.cli.store) {
            let bytes = try #require(FileManager.default.contents(atPath: fx.cli.store + "/" + file))
            #expect(bytes.range(of: Data(fx.password.utf8)) == nil, "\(file) holds the password")
        }
        // The remote events name the server without credentials.
        let remoteEvents = try await fx.cli.tail(1000).filter { $0["origin"] == "remote" }
        #expect(remoteEvents.count == 2)
        #expect(remoteEvents.allSatisfy { $0["by"]?.stringValue == fx.remote })
    }

    @Test func credentialsInTheRemoteURLAreRefused() async throws {
        let fx = try SyncFixture()
        let secret = "s3cret-" + UUID().uuidString
        let server = try #require(TestServer.url)
        let withCredentials = server.replacingOccurrences(of: "://", with: "://evsync:\(secret)@") + "/buckets/\(fx.web.bucket)"
        for environment in [[:], ["EVSYNC_AUTH": fx.web.credentials]] {
            let output = try await fx.cli.run(["sync", "--remote", withCredentials, "--json"], environment: environment)
            #expect(output.status == 64, "\(output)")
            #expect(output.stderrLines.count == 1)
            #expect(output.stderr.contains("EVSYNC_AUTH"))
            #expect(!output.stdout.contains(secret) && !output.stderr.contains(secret))
        }
        // Also through EVSYNC_REMOTE; and nothing reached the server (no bucket was made).
        let output = try await fx.cli.run(["sync"], environment: ["EVSYNC_REMOTE": withCredentials])
        #expect(output.status == 64)
        #expect(!output.stderr.contains(secret))
        #expect(try await fx.web.request("GET", "/buckets/\(fx.web.bucket)").status == 403)
    }
}
