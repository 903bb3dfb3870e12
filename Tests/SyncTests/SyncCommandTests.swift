@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// `evsync sync` refusing bad invocations before it talks to any server (no server needed).
struct SyncCommandTests {
    @Test func usageErrorsExit64WithOneLine() async throws {
        let directory = try TemporaryDirectory()
        let cli = Evsync(store: directory.file("store"))
        let cases: [([String], [String: String], String)] = [
            (["sync"], [:], "no remote"),
            (["sync", "--remote", "http://127.0.0.1:1/v1/buckets/x", "--conflicts", "mine-wins"], [:], "--conflicts"),
            (["sync", "--remote", "http://127.0.0.1:1/v1/buckets/x", "--watch", "0"], [:], "--watch"),
            (["sync", "--remote", "ftp://127.0.0.1/v1/buckets/x"], [:], "http(s)"),
            (["sync", "--remote", "http://127.0.0.1:1/v1/collections/x"], [:], "/buckets/"),
            (["sync", "--remote", "http://127.0.0.1:1/v1/buckets/x?token=1"], [:], "query"),
            (["sync", "--bogus"], [:], "unknown option"),
            (["sync", "extra"], [:], "too many arguments"),
        ]
        for (arguments, environment, mention) in cases {
            let output = try await cli.run(arguments, environment: environment)
            #expect(output.status == 64, "\(arguments): \(output)")
            #expect(output.stderrLines.count == 1, "\(arguments): \(output)")
            #expect(output.stderr.contains(mention), "\(arguments): \(output)")
        }
    }

    @Test func unreadableOrMalformedCredentials() async throws {
        let directory = try TemporaryDirectory()
        let cli = Evsync(store: directory.file("store"))
        let remote = ["sync", "--remote", "http://127.0.0.1:1/v1/buckets/x"]
        let missing = try await cli.run(remote + ["--auth-file", directory.file("no-such-file")])
        #expect(missing.status == 66, "\(missing)")
        #expect(missing.stderrLines.count == 1)

        try Data("no-colon-here".utf8).write(to: URL(fileURLWithPath: directory.file("auth")))
        let malformed = try await cli.run(remote + ["--auth-file", directory.file("auth")])
        #expect(malformed.status == 65, "\(malformed)")
        #expect(!malformed.stderr.contains("no-colon-here"), "the file's content is not echoed")

        let badEnvironment = try await cli.run(remote, environment: ["EVSYNC_AUTH": "secretwithoutcolon"])
        #expect(badEnvironment.status == 65, "\(badEnvironment)")
        #expect(!badEnvironment.stderr.contains("secretwithoutcolon"))
    }

    /// `--json` prints the same keys whatever the outcome, so scripts can read a failure like a success.
    @Test func aFailedSyncPrintsTheSameJSONShape() async throws {
        let directory = try TemporaryDirectory()
        let cli = Evsync(store: directory.file("store"))
        let output = try await cli.run(["sync", "--remote", "http://127.0.0.1:1/v1/buckets/x", "--json"],
                                       environment: ["EVSYNC_RETRIES": "1"])
        #expect(output.status == 69, "\(output)")
        let object = try #require(try JSONParser.parse(output.stdout).objectValue)
        #expect(object["result"] == "failed")
        for key in ["pulled", "pushed", "deletedHere", "deletedThere", "conflicts"] {
            #expect(object[key]?.int64Value != nil, "no \(key) in \(output.stdout)")
        }
        #expect(object["rejected"]?.arrayValue != nil, "no rejected in \(output.stdout)")
        #expect(object["error"]?.stringValue?.contains("127.0.0.1:1") == true)
    }
}
