@testable import EventStore
@testable import EventSync
import TestSupport
import Foundation
import Testing

/// A server that forgot is not a user who deleted: records the server lost
/// (a Kinto restarted empty, another server, most of a table gone from Parse)
/// are kept, said so at every sync, and pushed back or deleted only when asked.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ServerLossTests {
    @Test("the rule: every record held, or more than half of ten or more, looks like a loss")
    func whatLooksLikeALoss() {
        let cases: [(missing: Int, held: Int, loss: Bool)] = [
            (0, 0, false), (0, 5, false), (1, 1, true), (3, 3, true), (1, 2, false), (2, 3, false),
            (9, 12, false), (10, 19, true), (10, 20, false), (11, 20, true), (100, 100, true), (3, 100, false),
        ]
        for (missing, held, loss) in cases {
            #expect(MissingRecords.looksLikeLoss(missing: missing, held: held) == loss, "\(missing) of \(held)")
        }
    }

    @Test func aKintoRestartedEmptyKeepsTheRecordsHereUntilTheyArePushedBack() async throws {
        let kinto = try await OwnKinto()
        let directory = try TemporaryDirectory("synctests-loss")
        let cli = Evsync(store: directory.file("store"))
        let remote = kinto.server + "/buckets/evsync"
        let sync = { (extra: [String]) in try await cli.run(["sync", "--remote", remote, "--auth-file", kinto.authFile, "--json"] + extra) }
        for index in 1...4 { try await cli.add(id: "h\(index)", ["name=Holiday \(index)", "date=2027-01-0\(index)"]) }
        #expect(try SyncJSON(try await sync([]).stdoutLines.last ?? "").pushed == 4)

        try await kinto.restartEmpty()
        for _ in 1...2 {
            let output = try await sync([])
            #expect(output.status == 0, "\(output)")
            let report = try SyncJSON(output.stdoutLines.last ?? "")
            #expect(report.deletedHere == 0, "\(report)")
            let gone = try JSONParser.parse(output.stdoutLines.last ?? "").objectValue?["goneFromServer"]?.arrayValue ?? []
            #expect(gone.count == 4, "every sync names what the server lacks: \(output)")
            #expect(output.stderr.contains("the server lacks 4 Holiday records"), "one line says so: \(output.stderr)")
            #expect(output.stderr.split(separator: "\n").count == 1, "and only one: \(output.stderr)")
            #expect(try await cli.records().count == 4, "the device keeps them")
        }
        let plain = try await cli.run(["sync", "--auth-file", kinto.authFile])
        #expect(!plain.stdout.contains("already in sync"), "\(plain)")

        let pushedBack = try SyncJSON(try await sync(["--missing", "push-back"]).stdoutLines.last ?? "")
        #expect(pushedBack.pushed == 4 && pushedBack.deletedHere == 0, "\(pushedBack)")
        let after = try await sync([])
        #expect(try SyncJSON(after.stdoutLines.last ?? "").result == "noData" && after.stderr.isEmpty, "\(after)")
        let listed = try await ProcessRunner.run("/usr/bin/curl", ["-s", "-K", "-", remote + "/collections/holidays/records"],
                                                 environment: [:], stdin: "user = \"\(try String(contentsOfFile: kinto.authFile, encoding: .utf8))\"")
        #expect((try JSONParser.parse(listed.stdout).objectValue?["data"]?.arrayValue?.count) == 4, "back on the server: \(listed)")
    }

    @Test func anotherEmptyServerIsNeverTakenForDeletionsNorCalledInSync() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        for index in 1...3 { try await fx.cli.add(id: "h\(index)", ["name=Holiday \(index)", "date=2027-01-0\(index)"]) }
        #expect(try await fx.syncReport().pushed == 3)

        let other = KintoWebApp(server: fx.web.server, credentials: fx.web.credentials, bucket: TestServer.freshBucket())
        BucketRegistry.current?.register(other)
        let output = try await fx.cli.run(["sync", "--remote", other.bucketURL, "--auth-file", fx.authFile])
        #expect(output.status == 0, "\(output)")
        #expect(!output.stdout.contains("already in sync"), "\(output)")
        #expect(output.stderr.contains("the server lacks 3 Holiday records"), "\(output)")
        #expect(try await fx.cli.records().count == 3)

        let deleted = try SyncJSON(try await fx.cli.ok(["sync", "--auth-file", fx.authFile, "--json", "--missing", "delete"])
            .split(separator: "\n").last.map(String.init) ?? "")
        #expect(deleted.deletedHere == 3, "following that server, when asked: \(deleted)")
        #expect(try await fx.cli.records().isEmpty)
        #expect(try await fx.web.records().count == 3, "the first server keeps them")
    }

    @Test func anotherEmptyParseServerKeepsEachRecordOnceAndPushesThemBackWhenAsked() async throws {
        let first = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let directory = try TemporaryDirectory("synctests-loss-parse-switch")
        let cli = Evsync(store: directory.file("store"))
        for index in 0..<3 { try await first.create("Holiday", ["name": .string("H\(index)"), "date": "2027-01-02"]) }
        #expect(try await cli.syncParse(first).pulled == 3)

        let other = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let output = try await cli.run(["sync", "--remote", other.url, "--protocol", "parse", "--json"], environment: ParseStandIn.environment)
        #expect(output.status == 0, "\(output)")
        let report = try JSONParser.parse(output.stdoutLines.last ?? "").objectValue ?? [:]
        #expect(report["deletedHere"] == 0, "\(output)")
        #expect(report["goneFromServer"]?.arrayValue?.count == 3, "each record once, from the one comparison of ids: \(output)")
        #expect(output.stderr.contains("the server lacks 3 Holiday records"), "\(output.stderr)")
        #expect(try await cli.records().count == 3)
        let back = try await cli.syncParse(other, ["--missing", "push-back"])
        #expect(back.pushed == 3 && back.deletedHere == 0, "\(back)")
        #expect(try await other.objects("Holiday").count == 3)
        #expect(try await cli.syncParse(other).result == "noData")
    }

    @Test func mostOfAParseTableGoneIsKeptAFewDeletionsAreFollowed() async throws {
        let web = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let directory = try TemporaryDirectory("synctests-loss-parse")
        let cli = Evsync(store: directory.file("store"))
        var objects: [String] = []
        for index in 0..<15 { objects.append(try await web.create("Holiday", ["name": .string("H\(index)"), "date": "2027-01-02"])) }
        #expect(try await cli.syncParse(web).pulled == 15)
        try await web.delete("Holiday", objects[0])
        let few = try await cli.syncParse(web)
        #expect(few.deletedHere == 1, "one deletion among many is followed: \(few)")
        for object in objects[1...10] { try await web.delete("Holiday", object) }
        let most = try await cli.syncParse(web)
        #expect(most.deletedHere == 0, "\(most)")
        #expect(try await cli.records().count == 14, "10 of 14 gone at once is a loss, not deletions")
        let again = try await cli.syncParse(web)
        #expect(again.deletedHere == 0 && again.pulled == 0, "still kept at the next sync: \(again)")
        let decided = try await cli.syncParse(web, ["--missing", "delete"])
        #expect(decided.deletedHere == 10, "\(decided)")
        #expect(try await cli.records().count == 4)
        #expect(try await cli.syncParse(web).result == "noData")
    }
}
