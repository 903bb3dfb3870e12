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
            #expect(report.result == "newData", "a sync that finds records lost is not noData: \(output)")
        }
        let plain = try await cli.run(["sync", "--auth-file", kinto.authFile])
        #expect(!plain.stdout.contains("already in sync"), "\(plain)")

        // status, status --json and why count and name them, with the way out.
        let status = try await cli.ok(["status"])
        #expect(status.contains("missing   4 records the server lacks, kept here (it lost them?): evsync sync --missing push-back puts them back"), "\(status)")
        #expect(try await cli.json(["status", "--json"]).objectValue?["missingFromServer"] == 4)
        let why = try await cli.ok(["why", "Holiday", "h1"])
        #expect(why.hasPrefix("Holiday/h1 is kept here, but the server lacks it") && why.contains("evsync sync --missing push-back"), "\(why)")
        #expect(!why.contains("in step"), "\(why)")
        #expect(try await cli.json(["why", "Holiday", "h1", "--json"]).objectValue?["missingFromServer"] == true)

        let pushedBack = try SyncJSON(try await sync(["--missing", "push-back"]).stdoutLines.last ?? "")
        #expect(pushedBack.pushed == 4 && pushedBack.deletedHere == 0, "\(pushedBack)")
        #expect(try await cli.json(["status", "--json"]).objectValue?["missingFromServer"] == 0)
        #expect(try await cli.ok(["why", "Holiday", "h1"]).hasPrefix("Holiday/h1 is in step with the server"))
        let after = try await sync([])
        #expect(try SyncJSON(after.stdoutLines.last ?? "").result == "noData" && after.stderr.isEmpty, "\(after)")
        let listed = try await ProcessRunner.run("/usr/bin/curl", ["-s", "-K", "-", remote + "/collections/holidays/records"],
                                                 environment: [:], stdin: "user = \"\(try String(contentsOfFile: kinto.authFile, encoding: .utf8))\"")
        #expect((try JSONParser.parse(listed.stdout).objectValue?["data"]?.arrayValue?.count) == 4, "back on the server: \(listed)")
    }

    /// The newcomer's sequence (issue 48): a mistyped bucket, evsync's own hint followed, and back.
    /// A store that pushed `count` holidays to the fixture's bucket, and another bucket on the same server (not created).
    private func syncedStoreAndAnotherBucket(_ count: Int) async throws -> (SyncFixture, KintoWebApp) {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        for index in 1...count { try await fx.cli.add(id: "h\(index)", ["name=Holiday \(index)", "date=2027-01-0\(index)"]) }
        #expect(try await fx.syncReport().pushed == count)
        let other = KintoWebApp(server: fx.web.server, credentials: fx.web.credentials, bucket: TestServer.freshBucket())
        BucketRegistry.current?.register(other)
        return (fx, other)
    }

    /// `evsync sync --auth-file … --json <extra>` on the store's remote, which must succeed: its report.
    private func plainSync(_ fx: SyncFixture, _ extra: [String] = []) async throws -> SyncJSON {
        try SyncJSON(try await fx.cli.ok(["sync", "--auth-file", fx.authFile, "--json"] + extra).split(separator: "\n").last.map(String.init) ?? "")
    }

    @Test func aMistypedBucketIsRefusedAndAMoveOnPurposeComesBackWhole() async throws {
        let (fx, other) = try await syncedStoreAndAnotherBucket(3)
        let typo = try await fx.cli.run(["sync", "--remote", other.bucketURL, "--auth-file", fx.authFile])
        #expect(typo.status == 64, "\(typo)")
        #expect(typo.stderr == "evsync: this store syncs with \(fx.remote), not \(other.bucketURL): "
            + "to move it there on purpose, evsync remote set \(other.bucketURL)\n", "\(typo)")
        #expect(try await other.request("GET", "/buckets/\(other.bucket)").status != 200, "no bucket was created")
        #expect(try await fx.cli.ok(["remote"]) == fx.remote + "\n", "the store's remote is unchanged")
        let verifyElsewhere = try await fx.cli.run(["verify", "--remote", "--auth-file", fx.authFile], environment: ["EVSYNC_REMOTE": other.bucketURL])
        #expect(verifyElsewhere.status == 64 && verifyElsewhere.stderr.contains("evsync remote set"), "\(verifyElsewhere)")

        // Moved on purpose, to a bucket that holds none of the records: nothing is created, nothing changes.
        let moved = try await fx.cli.run(["remote", "set", other.bucketURL])
        #expect(moved.status == 0 && moved.stderr.contains("the store's remote is now \(other.bucketURL) (was \(fx.remote))"), "\(moved)")
        let empty = try await fx.cli.run(["sync", "--auth-file", fx.authFile])
        #expect(empty.status == 64, "\(empty)")
        #expect(empty.stderr == "evsync: \(other.bucketURL) holds none of this store's records (3 synced with \(fx.remote); "
            + "a new server, or a mistyped one?): nothing was changed; evsync sync --missing push-back copies them there, "
            + "evsync remote set \(fx.remote) goes back\n", "\(empty)")
        #expect(try await other.request("GET", "/buckets/\(other.bucket)").status != 200, "no bucket was created")
        #expect(try await fx.cli.records().count == 3)

        // Told to follow it: deleted here. Back to the first server, which still has them: they come back.
        let deleted = try await plainSync(fx, ["--missing", "delete"])
        #expect(deleted.deletedHere == 3, "following that server, when asked: \(deleted)")
        #expect(try await fx.cli.records().isEmpty)
        #expect(try await fx.web.records().count == 3, "the first server keeps them")

        _ = try await fx.cli.ok(["remote", "set", fx.remote])
        let back = try await fx.cli.run(["sync", "--auth-file", fx.authFile, "--json"])
        let report = try SyncJSON(back.stdoutLines.last ?? "")
        #expect(back.status == 0 && report.pulled == 3 && report.result == "newData", "\(back)")
        #expect(try await fx.cli.records().count == 3, "back from the server that has them")
        let again = try await plainSync(fx)
        #expect(again.result == "noData" && again.pushed == 0 && again.pulled == 0, "\(again)")
        let verified = try await fx.cli.run(["verify", "--remote", "--auth-file", fx.authFile])
        #expect(verified.status == 0 && verified.stdout.hasPrefix("the server holds what the log believes"), "\(verified)")
    }

    @Test func aBucketOnAnotherServerIsRefusedAndNeverCreatedThere() async throws {
        let (fx, _) = try await syncedStoreAndAnotherBucket(2)
        let kinto = try await OwnKinto()
        let elsewhere = kinto.server + "/buckets/" + fx.web.bucket
        let refused = try await fx.cli.run(["sync", "--remote", elsewhere, "--auth-file", kinto.authFile])
        #expect(refused.status == 64 && refused.stderr.contains("evsync remote set \(elsewhere)"), "\(refused)")
        _ = try await fx.cli.ok(["remote", "set", elsewhere])
        let none = try await fx.cli.run(["sync", "--auth-file", kinto.authFile])
        #expect(none.status == 64 && none.stderr.contains("\(elsewhere) holds none of this store's records (2 synced with \(fx.remote);"), "\(none)")
        let there = KintoWebApp(server: kinto.server, credentials: try String(contentsOfFile: kinto.authFile, encoding: .utf8)
            .trimmingCharacters(in: .newlines), bucket: fx.web.bucket)
        #expect(try await there.request("GET", "/buckets/\(fx.web.bucket)").status != 200, "no bucket was created on the other server")
        #expect(try await fx.cli.records().count == 2)
    }

    @Test func aMoveToAnEmptyServerPushesBackWhenToldAndComingBackAgreesWithTheFirst() async throws {
        let (fx, other) = try await syncedStoreAndAnotherBucket(2)
        _ = try await fx.cli.ok(["remote", "set", other.bucketURL])
        let copied = try await plainSync(fx, ["--missing", "push-back"])
        #expect(copied.pushed == 2 && copied.deletedHere == 0, "\(copied)")
        #expect(try await other.records().count == 2)
        // A record made while on the second server, and one changed on the first meanwhile.
        try await fx.cli.add(id: "h3", ["name=Holiday 3", "date=2027-01-03"])
        #expect(try await plainSync(fx).pushed == 1)
        _ = try await fx.web.patch("h1", ["name": "Renamed on the first"])

        _ = try await fx.cli.ok(["remote", "set", fx.remote])
        let back = try await fx.cli.run(["sync", "--auth-file", fx.authFile, "--json"])
        #expect(back.status == 0, "\(back)")
        let gone = try JSONParser.parse(back.stdoutLines.last ?? "").objectValue?["goneFromServer"]?.arrayValue ?? []
        #expect(gone.map { $0.objectValue?["id"] } == [.string("h3")], "the one record the first server never had is named: \(back)")
        #expect(back.stderr.contains("the server lacks 1 Holiday record"), "\(back)")
        #expect(try await fx.cli.records()["h1"]?["name"] == "Renamed on the first", "the first server's change is taken")
        let pushedBack = try await plainSync(fx, ["--missing", "push-back"])
        #expect(pushedBack.pushed == 1, "\(pushedBack)")
        #expect(try await fx.web.records().count == 3)
        let verified = try await fx.cli.run(["verify", "--remote", "--auth-file", fx.authFile])
        #expect(verified.status == 0, "\(verified)")
    }

    @Test func anotherEmptyParseServerIsRefusedUntilToldAndThenPushedBack() async throws {
        let first = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let directory = try TemporaryDirectory("synctests-loss-parse-switch")
        let cli = Evsync(store: directory.file("store"))
        for index in 0..<3 { try await first.create("Holiday", ["name": .string("H\(index)"), "date": "2027-01-02"]) }
        #expect(try await cli.syncParse(first).pulled == 3)

        let other = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"])
        let output = try await cli.run(["sync", "--remote", other.url, "--protocol", "parse", "--json"], environment: ParseStandIn.environment)
        #expect(output.status == 64 && output.stderr.contains("evsync remote set parse+"), "\(output)")
        _ = try await cli.ok(["remote", "set", "parse+" + other.url])
        let refused = try await cli.run(["sync", "--json"], environment: ParseStandIn.environment)
        #expect(refused.status == 64 && refused.stderr.contains("holds none of this store's records (3 synced with"), "\(refused)")
        #expect(try await cli.records().count == 3)
        let back = try SyncJSON(try await cli.ok(["sync", "--json", "--missing", "push-back"], environment: ParseStandIn.environment))
        #expect(back.pushed == 3 && back.deletedHere == 0, "\(back)")
        #expect(try await other.objects("Holiday").count == 3)
        #expect(try SyncJSON(try await cli.ok(["sync", "--json"], environment: ParseStandIn.environment)).result == "noData")
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
