@testable import EventStore
import TestSupport
import Foundation
import Testing

/// `evsync sync --protocol parse` against `Tools/parse-standin` (a stand-in
/// for Parse Server's REST API, started per test): the scenarios the Kinto
/// integration tests run, in both of Parse's id modes: custom object ids
/// (`allowCustomObjectId`, our UUIDs are the objectIds) and server-made ids
/// (mapped through the `nid` field).
@Suite struct ParseSyncTests {
    static let modes: [[String]] = [[], ["--allow-custom-object-id"]]

    private func fixture(_ options: [String]) async throws -> (ParseStandIn, Evsync, TemporaryDirectory) {
        // Parse Server 7 lets no client create a class (allowClientClassCreation is false): the classes exist.
        let standIn = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday"] + options)
        let directory = try TemporaryDirectory("synctests-parse-store")
        return (standIn, Evsync(store: directory.file("store")), directory)
    }

    @Test(arguments: modes)
    func firstSyncIncrementalPullAndPush(options: [String]) async throws {
        let (web, cli, scratch) = try await fixture(options)
        defer { withExtendedLifetime(scratch) {} }
        let a = try await web.create("Holiday", ["name": "Labour Day", "date": ["__type": "Date", "iso": "2027-05-01T00:00:00.000Z"]])
        let b = try await web.create("Holiday", ["name": "Bastille Day", "date": "2027-07-14", "observedBy": ["FR"]])
        try await web.create("Birthday", ["name": "Ada", "date": "1815-12-10", "image": ["__type": "Bytes", "base64": "aGVsbG8="]])

        let first = try await cli.syncParse(web)
        #expect(first.pulled == 3 && first.pushed == 0, "\(first)")
        #expect(try await cli.records()[a] == ["name": "Labour Day", "date": "2027-05-01"])
        #expect(try await cli.records("Birthday").values.first?["image"] == "aGVsbG8=")

        // Incremental: only the web app's change is new; the remote is remembered with its protocol.
        try await web.update("Holiday", b, ["details": "Fête nationale"])
        let second = try SyncJSON(try await cli.ok(["sync", "--json"], environment: ParseStandIn.environment))
        #expect(second.pulled == 1 && second.result == "newData", "\(second)")
        #expect(try await cli.records()[b]?["details"] == "Fête nationale")
        let idle = try SyncJSON(try await cli.ok(["sync", "--json"], environment: ParseStandIn.environment))
        #expect(idle.result == "noData", "\(idle)")

        // Local creates, edits (a key removed too) and deletes are pushed.
        let c = "0b7c3d4e-1111-4a2b-9c3d-000000000001"
        try await cli.add(id: c, ["name=New Year", "date=2028-01-01", "details=fireworks"])
        try await cli.edit(b, ["name=Fête nationale"], unset: ["details"])
        try await cli.delete(a)
        let push = try await cli.syncParse(web)
        #expect(push.pushed == 2 && push.deletedThere == 1, "\(push)")
        let server = try await web.records("Holiday")
        let local = try await cli.records()
        #expect(server == local)
        #expect(server[c] == ["name": "New Year", "date": "2028-01-01", "details": "fireworks"])
        #expect(server[b] == ["name": "Fête nationale", "date": "2027-07-14", "observedBy": ["FR"]])
        #expect(server[a] == nil)
        let objects = try await web.objects("Holiday")
        let created = try #require(objects.first { $0["nid"]?.stringValue == c })
        // A typed Date on the server, and the objectId our id only where the server allows custom ids.
        #expect(created["date"]?.objectValue?["__type"] == "Date")
        #expect((created["objectId"]?.stringValue == c) == options.contains("--allow-custom-object-id"))
        #expect(try await cli.status().pendingRecords == 0)
    }

    @Test(arguments: modes)
    func remoteDeletesAreFoundByComparingIDs(options: [String]) async throws {
        let (web, cli, scratch) = try await fixture(options)
        defer { withExtendedLifetime(scratch) {} }
        let gone = try await web.create("Holiday", ["name": "Gone", "date": "2027-01-02"])
        try await web.create("Holiday", ["name": "Kept", "date": "2027-01-03"])
        let ours = "0b7c3d4e-2222-4a2b-9c3d-000000000001"
        try await cli.add(id: ours, ["name=Ours", "date=2027-01-04"])
        _ = try await cli.syncParse(web)
        try await web.delete("Holiday", gone)
        try await web.delete("Holiday", try #require(try await web.objectID(of: ours, in: "Holiday")))
        let sync = try await cli.syncParse(web)
        #expect(sync.deletedHere == 2, "\(sync)")
        #expect(Set(try await cli.records().values.compactMap { $0["name"]?.stringValue }) == ["Kept"])
        let again = try await cli.syncParse(web)
        #expect(again.result == "noData", "\(again)")
    }

    @Test(arguments: modes)
    func anObjectNoOneCanReadIsSkippedAndTheRestArePulled(options: [String]) async throws {
        let (web, cli, scratch) = try await fixture(options)
        defer { withExtendedLifetime(scratch) {} }
        try await web.create("Holiday", ["name": "Kept", "date": "2027-01-03"])
        let deep = try await web.create("Holiday", ["name": "Deep", "date": "2027-01-04"])
        _ = try await cli.syncParse(web)
        // Another client nests a value deeper than evsync reads (Parse keeps it), then a record comes after it.
        var nested: JSONValue = "bottom"
        for _ in 0..<(JSONValue.maxFieldNesting + 8) { nested = .array([nested]) }
        try await web.update("Holiday", deep, ["details": nested])
        try await web.create("Holiday", ["name": "After", "date": "2027-01-05"])

        let sync = try await cli.syncParse(web)
        #expect(sync.pulled == 1 && sync.skipped.count == 1, "\(sync) \(sync.skipped)")
        #expect(sync.skipped.first?.reason.contains("evsync cannot read it") == true, "\(sync.skipped)")
        // Skipped, not taken for deleted: the record stays as it was last pulled.
        #expect(Set(try await cli.records().values.compactMap { $0["name"]?.stringValue }) == ["Kept", "Deep", "After"])
        #expect(try await cli.syncParse(web).deletedHere == 0)
    }

    @Test("pages over the response cap are asked for again smaller; an object alone over it is skipped, the rest pulled",
          .enabled(if: HostileServerTests.limitHooksWork, "EVSYNC_MAX_RESPONSE is read by debug builds only"))
    func pagesOverTheCapAndAnObjectAloneOverIt() async throws {
        let (web, cli, scratch) = try await fixture([])
        defer { withExtendedLifetime(scratch) {} }
        for index in 0..<40 { try await web.create("Holiday", ["name": .string("Holiday \(index)"), "date": "2027-01-03"]) }
        try await web.create("Holiday", ["name": "Oversized", "date": "2027-01-04", "details": .string(String(repeating: "x", count: 20_000))])
        for index in 0..<10 { try await web.create("Holiday", ["name": .string("After \(index)"), "date": "2027-01-05"]) }

        // 16 KiB: the page of 51 objects is well over it, and so is the oversized one alone.
        let sync = try await cli.syncParse(web, environment: ["EVSYNC_MAX_RESPONSE": "16384"])
        #expect(sync.pulled == 50, "\(sync)")
        #expect(sync.skipped.map(\.reason) == ["it is too large to read: alone it makes a response larger than 16 KiB, the most evsync accepts"],
                "\(sync.skipped)")
        let skippedID = try #require(sync.skipped.first?.id)
        #expect(try await cli.records()[skippedID] == nil)
        #expect(try await cli.records().count == 50)
        #expect(try await cli.syncParse(web, environment: ["EVSYNC_MAX_RESPONSE": "16384"]).skipped.isEmpty)
    }

    @Test(arguments: modes)
    func anObjectNoOneCanReadIsNeitherWrittenOverNorMadeTwice(options: [String]) async throws {
        let (web, cli, scratch) = try await fixture(options)
        defer { withExtendedLifetime(scratch) {} }
        var nested: JSONValue = "bottom"
        for _ in 0..<(JSONValue.maxFieldNesting + 8) { nested = .array([nested]) }
        // Another client holds the id this store is about to create, in an object evsync cannot read.
        let shared = "shared-1"
        try await web.create("Holiday", ["nid": .string(shared), "name": "Theirs", "date": "2027-01-04", "details": nested])
        // And makes one this store pulled unreadable, which this store then edits.
        let deep = try await web.create("Holiday", ["name": "Deep", "date": "2027-01-05"])
        _ = try await cli.syncParse(web)
        try await web.update("Holiday", deep, ["details": nested])
        try await cli.add(id: shared, ["name=Ours", "date=2027-01-06"])
        try await cli.edit(deep, ["name=Edited"])

        let output = try await cli.run(["sync", "--remote", web.url, "--protocol", "parse", "--json"], environment: ParseStandIn.environment)
        #expect(output.status == 1, "refused changes exit 1: \(output)")
        let sync = try SyncJSON(try #require(output.stdoutLines.last))
        #expect(Set(sync.rejected.compactMap { $0.split(separator: ":").first }) == ["Holiday \(shared)", "Holiday \(deep)"], "\(sync)")
        #expect(sync.rejected.allSatisfy { $0.contains("cannot be read by evsync") }, "\(sync)")
        // Their members but the one nested too deep for evsync (and this test) to read.
        let objects = try await web.objects("Holiday", keys: ["nid", "name"])
        let named = { (id: String) in objects.filter { $0["nid"]?.stringValue == id || $0["objectId"]?.stringValue == id } }
        #expect(named(shared).count == 1 && named(shared).first?["name"] == "Theirs", "\(objects)")
        #expect(named(deep).count == 1 && named(deep).first?["name"] == "Deep", "\(objects)")
        // Kept here, for the user to see.
        #expect(try await cli.records()[shared]?["name"] == "Ours")
    }

    @Test func verifyRemoteFindsAnObjectDeletedThereAndRepairsIt() async throws {
        let (web, cli, scratch) = try await fixture([])
        defer { withExtendedLifetime(scratch) {} }
        let gone = try await web.create("Holiday", ["name": "Gone", "date": "2027-01-02"])
        try await web.create("Holiday", ["name": "Kept", "date": "2027-01-03"])
        _ = try await cli.syncParse(web)
        try await web.delete("Holiday", gone)

        let environment = ParseStandIn.environment
        let found = try await cli.run(["verify", "--remote", "--json"], environment: environment)
        #expect(found.status == 1, "\(found)")
        let findings = try JSONParser.parse(found.stdoutLines.last ?? "").objectValue?["findings"]?.arrayValue ?? []
        #expect(findings.map { $0.objectValue?["id"] } == [.string(gone)], "\(found.stdout)")
        #expect(findings.first?.objectValue?["kind"] == "purged")

        let repaired = try await cli.run(["verify", "--remote", "--repair", "--json"], environment: environment)
        #expect(repaired.status == 0, "\(repaired)")
        #expect(Set(try await cli.records().values.compactMap { $0["name"]?.stringValue }) == ["Kept"])
        #expect(try await cli.syncParse(web).result == "noData")
    }

    @Test(arguments: ["server-wins", "client-wins"])
    func conflictsFollowThePolicy(policy: String) async throws {
        let (web, cli, scratch) = try await fixture([])
        defer { withExtendedLifetime(scratch) {} }
        let id = try await web.create("Holiday", ["name": "Day", "date": "2027-03-01", "details": "base"])
        _ = try await cli.syncParse(web)
        try await web.update("Holiday", id, ["details": "web", "name": "Web Day"])
        try await cli.edit(id, ["details=local"])
        let sync = try await cli.syncParse(web, ["--conflicts", policy])
        #expect(sync.conflicts == 1, "\(sync)")
        let expected: JSONObject = ["name": "Web Day", "date": "2027-03-01", "details": policy == "server-wins" ? "web" : "local"]
        #expect(try await cli.records()[id] == expected)
        #expect(try await web.records("Holiday")[id] == expected)
        #expect(try await cli.status().pendingRecords == 0)
    }

    /// A write stamped before the cursor but committed after the pull that moved the cursor past it
    /// (Parse stamps `updatedAt` when a request arrives) is still pulled: the pull re-reads a window behind its cursor.
    @Test func aWriteCommittedLateBehindTheCursorIsPulled() async throws {
        let (web, cli, scratch) = try await fixture([])
        defer { withExtendedLifetime(scratch) {} }
        async let slow = web.create("Holiday", ["name": "Slow", "date": "2027-04-01"], headers: ["X-Standin-Hold": "1"])
        try await web.waitUntilHeld(writes: 1)
        try await web.create("Holiday", ["name": "Fast", "date": "2027-04-02"])
        let first = try await cli.syncParse(web)
        #expect(first.pulled == 1, "the slow write was not to be committed yet: \(first)")
        try await web.releaseHeld()
        _ = try await slow
        let second = try await cli.syncParse(web)
        #expect(second.pulled == 1, "\(second)")
        #expect(Set(try await cli.records().values.compactMap { $0["name"]?.stringValue }) == ["Slow", "Fast"])
    }

    /// A sync killed while its pushed writes are on the server but not yet acknowledged in the log: the next
    /// sync finds them (by objectId or `nid`) and acknowledges them, duplicating none.
    @Test(arguments: modes)
    func killedMidPushLeavesNoDuplicates(options: [String]) async throws {
        // The first batch of 20 is written; the second is stamped and held, the sync waiting on it.
        let (web, cli, scratch) = try await fixture(options + ["--hold-writes-after", "20"])
        defer { withExtendedLifetime(scratch) {} }
        let lines = (0..<60).map { #"{"name": "Day \#($0)", "date": "2027-06-01"}"# }.joined(separator: "\n")
        try await cli.ok(["import", "Holiday", "-"], stdin: lines + "\n")
        let process = try cli.start(["sync", "--remote", web.url, "--protocol", "parse", "--json"], environment: ParseStandIn.environment)
        try await web.waitUntilHeld(writes: 20)
        process.signal(SIGKILL)
        let output = await process.wait()
        try #require(output.killedBySignal, "the sync was not killed midway: \(output)")
        // The held writes now commit: on the server, never acknowledged in the log. All of them before the next
        // sync reads (a write still in flight from a killed client would be a duplicate no client can prevent).
        try await web.releaseHeld()
        try await web.waitUntilCreatesCommitted("Holiday")
        #expect(try await web.objects("Holiday").count == 40, "the sync was caught with its second batch held")
        let resumed = try await cli.syncParse(web)
        #expect(resumed.conflicts == 0, "\(resumed)")
        let objects = try await web.objects("Holiday")
        #expect(objects.count == 60)
        #expect(Set(objects.compactMap { $0["nid"]?.stringValue }).count == 60)
        let (server, local) = (try await web.records("Holiday"), try await cli.records())
        #expect(server == local)
        #expect(try await cli.status().pendingRecords == 0)
    }

    /// A batch applied on the server whose answer is lost (a 502 from a proxy) is not sent again as it was, which
    /// would make every create twice where the server makes the ids: the push reads again and acknowledges.
    @Test func aBatchWhoseAnswerIsLostIsNotSentTwice() async throws {
        let (web, cli, scratch) = try await fixture(["--lose-batch-answers", "2"])
        defer { withExtendedLifetime(scratch) {} }
        let lines = (0..<5).map { #"{"name": "Day \#($0)", "date": "2027-06-01"}"# }.joined(separator: "\n")
        try await cli.ok(["import", "Holiday", "-"], stdin: lines + "\n")
        let sync = try await cli.syncParse(web, environment: ["EVSYNC_RETRIES": "4"])
        #expect(sync.pushed == 5 && sync.conflicts == 0, "\(sync)")
        #expect(try await web.objects("Holiday").count == 5)
        #expect(try await cli.status().pendingRecords == 0)
    }

    /// A pull killed once its first batch (8,000 records) is committed: the next one resumes after it, and
    /// every record is created once.
    @Test func killedMidPullLeavesNoDuplicates() async throws {
        // Queries: Birthday's page and ids (2), Holiday's 8 pages of 1,000 (the batch is then full and written);
        // the next one is held, the sync waiting on it with 8,000 records committed.
        let (web, cli, scratch) = try await fixture(["--max-limit", "1000", "--hold-reads-after", "10"])
        defer { withExtendedLifetime(scratch) {} }
        let count = 8_500
        let requests: [JSONValue] = (0..<count).map { index in
            ["method": "POST", "path": "/parse/classes/Holiday", "body": ["name": .string("Day \(index)"), "date": "2027-08-01"]]
        }
        let (status, _) = try await web.request("POST", "/batch", body: ["requests": .array(requests)])
        #expect(status == 200)
        let process = try cli.start(["sync", "--remote", web.url, "--protocol", "parse", "--json"], environment: ParseStandIn.environment)
        try await web.waitUntilHeld(reads: 1)
        var partial = 0
        var waited = 0
        while partial == 0, waited < 600 {
            partial = (try? await cli.status().events) ?? 0
            if partial == 0 { try await Task.sleep(for: .milliseconds(50)) }
            waited += 1
        }
        process.signal(SIGKILL)
        let output = await process.wait()
        try #require(output.killedBySignal, "the sync was not killed midway: \(output)")
        #expect(partial == 8_000, "\(partial)")
        try await web.releaseHeld()
        _ = try await cli.syncParse(web)
        let (records, ids) = try await cli.list()
        #expect(ids.count == count && records.count == count)
        #expect(try await cli.status().events == count, "each record created once")
    }

    @Test func refusedKeysAreExit77AndNeverPrinted() async throws {
        let (web, cli, scratch) = try await fixture([])
        defer { withExtendedLifetime(scratch) {} }
        let secret = "not-the-key-\(UUID().uuidString)"
        let output = try await cli.run(["sync", "--remote", web.url, "--protocol", "parse"],
                                       environment: ["EVSYNC_PARSE_APPLICATION_ID": ParseStandIn.applicationID, "EVSYNC_PARSE_REST_API_KEY": secret])
        #expect(output.status == 77, "\(output)")
        // One line for the store this first sync made, one for the refusal.
        #expect(output.stderrLines.count == 2 && !output.stderr.contains(secret) && !output.stdout.contains(secret), "\(output)")
        // Keys go over plain http to this machine only; a name that starts with 127. is another machine.
        for host in ["127.example.org.test", "127.0.0.1.example.test", "10.0.0.1"] {
            let insecure = try await cli.run(["sync", "--remote", "http://\(host)/parse", "--protocol", "parse"], environment: ParseStandIn.environment)
            #expect(insecure.status == 64 && insecure.stderr.contains("unencrypted"), "\(host): \(insecure)")
        }
        let none = try await cli.run(["sync", "--remote", web.url, "--protocol", "parse"])
        #expect(none.status == 64 && none.stderr.contains("EVSYNC_PARSE_APPLICATION_ID"), "\(none)")
        // An auth file holding applicationId:restApiKey works as the environment does.
        let file = scratch.file("auth")
        try Data("\(ParseStandIn.applicationID):\(ParseStandIn.restAPIKey)".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        #expect(try await cli.run(["sync", "--remote", web.url, "--protocol", "parse", "--auth-file", file]).status == 0)
    }

    @Test func sessionTokensAndTheMasterKey() async throws {
        let master = "master-\(UUID().uuidString)", token = "token-\(UUID().uuidString)"
        let (web, cli, scratch) = try await fixture(["--master-key", master, "--session-token", token])
        defer { withExtendedLifetime(scratch) {} }
        let application = ["EVSYNC_PARSE_APPLICATION_ID": ParseStandIn.applicationID]
        let sync = ["sync", "--remote", web.url, "--protocol", "parse"]
        #expect(try await cli.run(sync, environment: application.merging(["EVSYNC_PARSE_SESSION_TOKEN": token]) { $1 }).status == 0)
        let stale = try await cli.run(sync, environment: application.merging(["EVSYNC_PARSE_SESSION_TOKEN": "stale"]) { $1 })
        #expect(stale.status == 77 && stale.stderr.contains("209") && stale.stderrLines.count == 1, "\(stale)")
        let withMaster = try await cli.run(sync, environment: application.merging(["EVSYNC_PARSE_MASTER_KEY": master]) { $1 })
        #expect(withMaster.status == 0, "\(withMaster)")
        #expect(withMaster.stderrLines.filter { $0.contains("master key") }.count == 1, "\(withMaster)")
        #expect(!withMaster.stderr.contains(master) && !withMaster.stdout.contains(master))
    }

    @Test func aClassTheServerForbidsCreatingIsOneLine() async throws {
        let standIn = try await ParseStandIn(["--class", "Birthday"])
        let scratch = try TemporaryDirectory("synctests-parse-store")
        let cli = Evsync(store: scratch.file("store"))
        defer { withExtendedLifetime(scratch) {} }
        try await cli.add(id: "0b7c3d4e-3333-4a2b-9c3d-000000000001", ["name=Day", "date=2027-01-01"])
        let output = try await cli.run(["sync", "--remote", standIn.url, "--protocol", "parse"], environment: ParseStandIn.environment)
        #expect(output.status == 77 && output.stderrLines.count == 1 && output.stderr.contains("119"), "\(output)")
    }

    /// Two stores and a web app change the same records at random, syncing in a seeded order; once all have
    /// synced twice, both stores and the server hold the same records.
    @Test(arguments: [UInt64(1), 2, 3])
    func twoStoresAndAWebAppConverge(seed: UInt64) async throws {
        let (web, first, scratch) = try await fixture(seed % 2 == 0 ? ["--allow-custom-object-id"] : [])
        defer { withExtendedLifetime(scratch) {} }
        let second = Evsync(store: scratch.file("second"))
        var random = SplitMix64(seed: seed)
        var made = 0
        for cli in [first, second] { _ = try await cli.syncParse(web) }
        for _ in 0..<6 {
            for cli in [first, second] {
                let ids = Array(try await cli.records().keys).sorted()
                switch Int.random(in: 0..<4, using: &random) {
                case 0, 1:
                    made += 1
                    try await cli.ok(["add", "Holiday", "name=Made \(made)", "date=2027-09-0\(1 + made % 9)"])
                case 2 where !ids.isEmpty:
                    try await cli.edit(ids[Int.random(in: 0..<ids.count, using: &random)], ["details=edit \(Int.random(in: 0..<9, using: &random))"])
                case 3 where !ids.isEmpty:
                    try await cli.delete(ids[Int.random(in: 0..<ids.count, using: &random)])
                default:
                    break
                }
            }
            let objects = try await web.objects("Holiday")
            if !objects.isEmpty, let objectID = objects[Int.random(in: 0..<objects.count, using: &random)]["objectId"]?.stringValue {
                if Bool.random(using: &random) {
                    try await web.update("Holiday", objectID, ["details": .string("web \(Int.random(in: 0..<9, using: &random))")])
                } else {
                    try await web.delete("Holiday", objectID)
                }
            }
            made += 1
            try await web.create("Holiday", ["name": .string("Web \(made)"), "date": "2027-10-01"])
            for cli in Bool.random(using: &random) ? [first, second] : [second, first] {
                _ = try await cli.syncParse(web, ["--conflicts", Bool.random(using: &random) ? "server-wins" : "client-wins"])
            }
        }
        for cli in [first, second, first, second] { _ = try await cli.syncParse(web) }
        let server = try await web.records("Holiday")
        #expect(try await first.records() == server)
        #expect(try await second.records() == server)
        let pending = (try await first.status().pendingRecords, try await second.status().pendingRecords)
        #expect(pending == (0, 0))
    }
}
