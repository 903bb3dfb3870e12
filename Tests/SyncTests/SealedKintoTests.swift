@testable import EventStore
import EventSync
import Foundation
@testable import KintoAdapter
import ParseAdapter
import HTTPTransport
import Sealing
import Testing
import TestSupport

/// End-to-end encrypted sync against a real Kinto: what its storage holds (every collection of the bucket, read
/// through Kinto's API), two devices converging, and `Tools/sealed-records` (PyNaCl, from docs/encryption.md
/// alone) as the second reader of the format: it opens what evsync sealed, and evsync opens what it sealed.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SealedKintoTests {
    static let passphrase = "a long passphrase for the family's birthdays"

    /// The server's records of `collection` as `Tools/sealed-records` opens them, read from Kinto directly: id →
    /// fields, nil for a sealed deletion. A record the oracle cannot open fails the test.
    static func openedOnTheServer(_ fx: SyncFixture, passphraseFile: String, collection: String = "holidays",
                                  entity: String = "Holiday") async throws -> [String: JSONObject?] {
        let environment = ProcessInfo.processInfo.environment.merging(["EVSYNC_PASSPHRASE_FILE": passphraseFile, "EVSYNC_AUTH_FILE": fx.authFile]) { $1 }
        let output = try await ProcessRunner.run(ServerTool.path("sealed-records"), ["open", fx.remote, collection, entity], environment: environment)
        try #require(output.status == 0, "\(output)")
        var opened: [String: JSONObject?] = [:]
        for line in output.stdoutLines {
            let record = try #require(try JSONParser.parse(line).objectValue)
            let id = try #require(record["id"]?.stringValue)
            try #require(record["error"] == nil && opened[id] == nil, "\(line)")
            opened[id] = record["fields"]?.objectValue
        }
        return opened
    }

    func engine(_ store: Store, _ fx: SyncFixture, passphrase: String = Self.passphrase) -> SyncEngine {
        let (remote, credentials) = (fx.remote, fx.web.credentials)
        return SyncEngine(store: store) {
            SealedRemote(try KintoRemote(bucketURL: remote, credentials: try Credentials(userPassword: credentials)), store: store) { passphrase }
        }
    }

    /// What the server stores, read past its API: the PostgreSQL of a Kinto of the test's own, every table (the
    /// history plugin keeps every version of every record), dumped whole. The records are there, sealed; no value is.
    @Test func kintoOnPostgreSQLHoldsNoValueInClearInItsDatabase() async throws {
        let kinto = try await OwnKinto(postgres: true)
        let fx = try SyncFixture(on: kinto)
        try await fx.web.createBucket()
        let a = try Store(directory: fx.directory.file("a"), create: true)
        let b = try Store(directory: fx.directory.file("b"), create: true)
        let values = ["Grandma Ada", "1931-05-17", "Knitting needles", "Midsummer Eve", "2027-06-25", "A scarf, green", "Saint Swithin"]
        let ada = try a.add("Birthday", fields: ["name": .string(values[0]), "date": .string(values[1]), "giftIdeas": .string(values[2])]).recordID
        let eve = try a.add("Holiday", fields: ["name": .string(values[3]), "date": .string(values[4])]).recordID
        let swithin = try a.add("Holiday", fields: ["name": .string(values[6]), "date": "2027-07-15"]).recordID
        _ = try await onThread { try engine(a, fx).syncBlocking() }
        // An edit and a deletion: the history plugin keeps the versions before them too.
        try a.edit("Birthday", id: ada, set: ["giftIdeas": .string(values[5])])
        try a.delete("Holiday", id: swithin)
        _ = try await onThread { try engine(a, fx).syncBlocking() }
        _ = try await onThread { try engine(b, fx).syncBlocking() }
        #expect(try b.record("Birthday", id: ada)?.fields["giftIdeas"] == .string(values[5]))
        #expect(try b.record("Holiday", id: eve) != nil && b.record("Holiday", id: swithin) == nil)

        let dump = try await kinto.databaseDump()
        #expect(dump.contains(ada) && dump.contains(eve) && dump.contains(SealedEnvelope.field), "the dump holds the sealed records")
        for value in values + [Self.passphrase] { #expect(!dump.contains(value), "\(value) is in clear in the database") }
    }

    @Test func kintoHoldsNothingInClearAndThePythonToolReadsAndWritesTheFormat() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let a = try Store(directory: fx.directory.file("a"), create: true)
        let b = try Store(directory: fx.directory.file("b"), create: true)
        let values = ["Grandma Ada", "1931-05-17", "Knitting needles", "Midsummer Eve", "2027-06-25"]
        let ada = try a.add("Birthday", fields: ["name": .string(values[0]), "date": .string(values[1]), "giftIdeas": .string(values[2])]).recordID
        let eve = try a.add("Holiday", fields: ["name": .string(values[3]), "date": .string(values[4])]).recordID
        _ = try await onThread { try engine(a, fx).syncBlocking() }

        // Every collection of the bucket, the keyring's included: no value, and not the passphrase, in clear.
        let collections = try await fx.web.request("GET", "/buckets/\(fx.web.bucket)/collections")
        let names = try #require(collections.body?.objectValue?["data"]?.arrayValue).compactMap { $0.objectValue?["id"]?.stringValue }
        #expect(Set(names).isSuperset(of: ["holidays", "birthdays", "evsync-keyring"]))
        var everything = ""
        for name in names { everything += try await fx.web.listing(in: name).map { JSONWriter.string(.object($0)) }.joined(separator: "\n") }
        for value in values + [Self.passphrase] { #expect(!everything.contains(value), "\(value) is in clear on the server") }

        // The second device, the other way round.
        _ = try await onThread { try engine(b, fx).syncBlocking() }
        #expect(try b.record("Birthday", id: ada)?.fields["giftIdeas"] == .string(values[2]))
        try b.delete("Holiday", id: eve)
        _ = try await onThread { try engine(b, fx).syncBlocking() }
        _ = try await onThread { try engine(a, fx).syncBlocking() }
        #expect(try a.record("Holiday", id: eve) == nil)

        // The oracle opens what evsync sealed, the sealed deletion included.
        let passphraseFile = fx.directory.file("passphrase")
        try (Self.passphrase + "\n").write(toFile: passphraseFile, atomically: true, encoding: .utf8)
        let environment = ProcessInfo.processInfo.environment.merging(["EVSYNC_PASSPHRASE_FILE": passphraseFile, "EVSYNC_AUTH_FILE": fx.authFile]) { $1 }
        let tool = ServerTool.path("sealed-records")
        let opened = try await ProcessRunner.run(tool, ["open", fx.remote, "birthdays", "Birthday"], environment: environment)
        #expect(opened.status == 0, "\(opened)")
        let birthday = try #require(try JSONParser.parse(opened.stdoutLines.first ?? "").objectValue)
        #expect(birthday["id"] == .string(ada) && birthday["fields"]?.objectValue?["name"] == .string(values[0]))
        let holidays = try await ProcessRunner.run(tool, ["open", fx.remote, "holidays", "Holiday"], environment: environment)
        #expect(holidays.stdoutLines.count == 1 && holidays.stdout.contains("\"fields\": null"), "\(holidays)")

        // evsync opens what the oracle sealed: a new record, and an edit at the next counter.
        let sealed = try await ProcessRunner.run(tool, ["seal", fx.remote, "birthdays", "Birthday", "bob", "1",
                                                        #"{"name": "Bob", "date": "1990-02-03"}"#], environment: environment)
        #expect(sealed.status == 0, "\(sealed)")
        let counter = try #require(birthday["counter"]?.numberValue.flatMap { Int($0.description) })
        _ = try await ProcessRunner.run(tool, ["seal", fx.remote, "birthdays", "Birthday", ada, String(counter + 1),
                                               #"{"name": "Grandma Ada", "date": "1931-05-17", "giftIdeas": "Wool"}"#], environment: environment)
        let report = try await onThread { try engine(a, fx).syncBlocking() }
        #expect(report.skipped.isEmpty, "\(report.skipped)")
        #expect(try a.record("Birthday", id: "bob")?.fields["name"] == "Bob")
        #expect(try a.record("Birthday", id: ada)?.fields["giftIdeas"] == "Wool")

        // A wrong passphrase on a third device: one line, nothing written.
        let c = try Store(directory: fx.directory.file("c"), create: true)
        do {
            _ = try await onThread { try engine(c, fx, passphrase: "not it").syncBlocking() }
            Issue.record("a wrong passphrase synced")
        } catch let error as SyncError {
            #expect(error.code == .unauthorized && error.message.hasPrefix("the passphrase does not open the keys of "))
        }
        #expect(try c.lastSeq() == 0)
    }

    /// A schema with one field left in clear (`x-evsync-clear`), for two stores.
    static func tripStores(in directory: TemporaryDirectory) throws -> (Store, Store) {
        let schemas = directory.file("schemas")
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try #"""
        {"title": "Trip", "x-evsync-collection": "trips", "properties": {"destination": {"type": "string"},
         "year": {"type": "integer", "x-evsync-clear": true}, "notes": {"type": "string"},
         "start": {"type": "string", "format": "date", "x-evsync-clear": true}}}
        """#.write(toFile: schemas + "/trip.schema.json", atomically: true, encoding: .utf8)
        func store(_ name: String) throws -> Store {
            try Store(directory: directory.file(name), configuration: .init(schemas: try SchemaRegistry(directory: schemas), create: true))
        }
        return (try store("a"), try store("b"))
    }

    @Test func aFieldLeftInClearIsSentBesideTheSealedRecordAndACopyThatLiesIsSkipped() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (a, b) = try Self.tripStores(in: fx.directory)
        let secrets = ["Lisbon", "Pastel de nata", "Kyoto", "Moss garden"]
        _ = try a.add("Trip", id: "lisbon", fields: ["destination": .string(secrets[0]), "year": 2027, "notes": .string(secrets[1])])
        _ = try a.add("Trip", id: "kyoto", fields: ["destination": .string(secrets[2]), "year": 2028, "notes": .string(secrets[3])])
        _ = try await onThread { try engine(a, fx).syncBlocking() }

        // Kinto's stored records: the year in clear beside the sealed field, nothing else.
        let stored = try await fx.web.listing(in: "trips")
        #expect(stored.count == 2)
        for record in stored {
            #expect(Set(record.keys) == ["id", "last_modified", SealedEnvelope.field, "year"], "\(record)")
        }
        #expect(Dictionary(uniqueKeysWithValues: stored.map { ($0["id"]?.stringValue ?? "", $0["year"]) }) == ["lisbon": 2027, "kyoto": 2028])
        let text = stored.map { JSONWriter.string(.object($0)) }.joined()
        for secret in secrets { #expect(!text.contains(secret), "\(secret) is in clear on the server") }
        // Which is what a filter on the server reads.
        let filtered = try await fx.web.request("GET", "/buckets/\(fx.web.bucket)/collections/trips/records?year=2027")
        #expect(filtered.body?.objectValue?["data"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } == ["lisbon"])

        // The other device opens every field from the sealed record.
        _ = try await onThread { try engine(b, fx).syncBlocking() }
        #expect(try b.record("Trip", id: "lisbon")?.fields == ["destination": .string(secrets[0]), "year": 2027, "notes": .string(secrets[1])])

        // A field unset here leaves no clear copy there.
        try a.edit("Trip", id: "kyoto", set: ["notes": "Tea"], unset: ["year"])
        _ = try await onThread { try engine(a, fx).syncBlocking() }
        #expect(try await fx.web.get("kyoto", in: "trips")?.fields["year"] == nil)

        // The server changes a clear copy: the sealed value counts, the record is skipped, named, and the rest syncs.
        try await fx.web.patch("lisbon", ["year": 1999], in: "trips")
        let report = try await onThread { try engine(b, fx).syncBlocking() }
        #expect(report.skipped.map(\.id) == ["lisbon"], "\(report.skipped)")
        #expect(report.skipped.first?.reason == "its clear copy of year is not what it sealed: changed on the server", "\(report.skipped)")
        #expect(try b.record("Trip", id: "lisbon")?.fields["year"] == 2027)
        #expect(try b.record("Trip", id: "kyoto")?.fields == ["destination": .string(secrets[2]), "notes": "Tea"])
    }
}

/// The same against the Parse stand-in (`Tools/parse-standin`, not Parse Server: see docs/parse.md), whose
/// storage, its data file, is read directly.
@Suite struct SealedParseTests {
    @Test func theStandInsDataFileHoldsNothingInClearAndTwoDevicesConverge() async throws {
        let directory = try TemporaryDirectory("synctests-sealed-parse")
        let dataFile = directory.file("parse.json")
        let standIn = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday", "--allow-client-class-creation", "--data-file", dataFile])
        let credentials = ParseCredentials(applicationID: ParseStandIn.applicationID, restAPIKey: ParseStandIn.restAPIKey)
        @Sendable func engine(_ store: Store) -> SyncEngine {
            SyncEngine(store: store) { [url = standIn.url] in
                SealedRemote(try ParseRemote(serverURL: url, credentials: credentials), store: store) { SealedKintoTests.passphrase }
            }
        }
        let a = try Store(directory: directory.file("a"), create: true)
        let b = try Store(directory: directory.file("b"), create: true)
        let values = ["Great-aunt Hilde", "1944-11-02", "Orange marmalade"]
        let hilde = try a.add("Birthday", fields: ["name": .string(values[0]), "date": .string(values[1]), "giftIdeas": .string(values[2])]).recordID
        _ = try await onThread { try engine(a).syncBlocking() }
        let stored = try String(contentsOfFile: dataFile, encoding: .utf8)
        #expect(stored.contains("evsync_sealed") && stored.contains("EvsyncKeyring"))
        for value in values + [SealedKintoTests.passphrase] { #expect(!stored.contains(value), "\(value) is in clear in the stand-in's data") }

        _ = try await onThread { try engine(b).syncBlocking() }
        #expect(try b.record("Birthday", id: hilde)?.fields["giftIdeas"] == .string(values[2]))
        try b.edit("Birthday", id: hilde, set: ["giftIdeas": "Quince jelly"])
        _ = try await onThread { try engine(b).syncBlocking() }
        try b.delete("Birthday", id: hilde)
        _ = try await onThread { try engine(b).syncBlocking() }
        _ = try await onThread { try engine(a).syncBlocking() }
        #expect(try a.record("Birthday", id: hilde) == nil)
        #expect(!(try String(contentsOfFile: dataFile, encoding: .utf8)).contains("Quince"))
    }

    @Test func aFieldLeftInClearIsStoredInClearBesideTheSealedOne() async throws {
        let directory = try TemporaryDirectory("synctests-sealed-parse")
        let dataFile = directory.file("parse.json")
        let standIn = try await ParseStandIn(["--class", "Trip", "--allow-client-class-creation", "--data-file", dataFile])
        let credentials = ParseCredentials(applicationID: ParseStandIn.applicationID, restAPIKey: ParseStandIn.restAPIKey)
        let (a, b) = try SealedKintoTests.tripStores(in: directory)
        @Sendable func engine(_ store: Store) -> SyncEngine {
            SyncEngine(store: store) { [url = standIn.url] in
                SealedRemote(try ParseRemote(serverURL: url, credentials: credentials), store: store) { SealedKintoTests.passphrase }
            }
        }
        _ = try a.add("Trip", id: "porto", fields: ["destination": "Porto", "year": 2031, "notes": "Port lodges", "start": "2031-06-01"])
        _ = try await onThread { try engine(a).syncBlocking() }
        /// The one Trip object in the stand-in's data file (its classes, each object by objectId).
        func stored() throws -> JSONObject {
            let classes = try JSONParser.parse(try String(contentsOfFile: dataFile, encoding: .utf8)).objectValue
            return try #require(classes?["Trip"]?.objectValue?.values.first?.objectValue)
        }
        let object = try stored()
        #expect(object["year"] == 2031, "\(object)")
        // A date left in clear is a Parse Date there, as it would be unsealed: a query on dates reads it.
        #expect(object["start"] == ["__type": "Date", "iso": "2031-06-01T00:00:00.000Z"], "\(object)")
        let text = JSONWriter.string(.object(object))
        #expect(!text.contains("Porto") && !text.contains("Port lodges"), "\(text)")
        let report = try await onThread { try engine(b).syncBlocking() }
        #expect(report.skipped.isEmpty, "\(report.skipped)")
        #expect(try b.record("Trip", id: "porto")?.fields == ["destination": "Porto", "year": 2031, "notes": "Port lodges", "start": "2031-06-01"])
        // Unset here, deleted there (a Parse update is partial: the copy must be removed, not left behind).
        try b.edit("Trip", id: "porto", unset: ["year"])
        _ = try await onThread { try engine(b).syncBlocking() }
        #expect(try stored()["year"] == nil && stored()["start"] != nil)
        let unset = try await onThread { try engine(a).syncBlocking() }
        #expect(unset.skipped.isEmpty, "\(unset.skipped)")
        #expect(try a.record("Trip", id: "porto")?.fields == ["destination": "Porto", "notes": "Port lodges", "start": "2031-06-01"])
    }
}

/// `evsync sync --encrypt` as a user runs it: a passphrase file, a wrong one (exit 78, one line), a passphrase typed
/// where the file name belongs (never printed), and a store that synced sealed syncing so without the flag.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SealedSyncCLITests {
    /// A file holding the passphrase, and one holding a wrong one.
    func passphraseFiles(_ fx: SyncFixture) throws -> (file: String, wrong: String) {
        let file = fx.directory.file("passphrase"), wrong = fx.directory.file("wrong")
        try "correct horse battery staple\n".write(toFile: file, atomically: true, encoding: .utf8)
        try "incorrect horse\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        return (file, wrong)
    }

    /// A count from `sync --json`.
    func count(_ key: String, _ output: ProcessOutput) -> Int? {
        (try? JSONParser.parse(output.stdout))?.objectValue?[key]?.numberValue.flatMap { Int($0.description) }
    }

    @Test func theCLISealsWithAPassphraseFileAndSaysAWrongOneInOneLine() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (file, wrong) = try passphraseFiles(fx)
        _ = try await fx.cli.ok(["add", "Holiday", "name=Bastille Day", "date=2027-07-14"])
        let sealed = try await fx.sync(["--encrypt", "--passphrase-file", file])
        #expect(sealed.status == 0, "\(sealed)")
        let held = try await fx.web.listing(in: "holidays").map { JSONWriter.string(.object($0)) }.joined()
        #expect(held.contains("evsync_sealed") && !held.contains("Bastille"))

        // The store remembers: a plain sync of it is sealed too (the passphrase from the environment here).
        _ = try await fx.cli.ok(["add", "Holiday", "name=Assumption", "date=2027-08-15"])
        let again = try await fx.sync([], environment: ["EVSYNC_PASSPHRASE_FILE": file])
        #expect(again.status == 0 && count("pushed", again) == 1, "\(again)")
        #expect(!(try await fx.web.listing(in: "holidays").map { JSONWriter.string(.object($0)) }.joined()).contains("Assumption"))

        let other = fx.secondStore()
        let refused = try await fx.sync(["--encrypt", "--passphrase-file", wrong], store: other)
        #expect(refused.status == 78, "\(refused)")
        // With --json the error is the object's `error`, in one line, and stderr holds at most that line.
        let error = (try? JSONParser.parse(refused.stdout))?.objectValue?["error"]?.stringValue ?? refused.stderr
        #expect(error.hasPrefix("the passphrase does not open the keys of") && !error.contains("\n"), "\(refused)")
        #expect(refused.stderrLines.filter { $0.contains("passphrase") }.count == 1, "\(refused)")
        #expect(!refused.stderr.contains("incorrect horse") && !refused.stdout.contains("incorrect horse"))

        // A passphrase typed where its file belongs is not echoed back.
        let typed = try await fx.sync(["--encrypt", "--passphrase-file", "correct horse battery staple"], store: other)
        #expect(typed.status == 66 && typed.stderr.contains("its value is not shown"), "\(typed)")
        #expect(!typed.stderr.contains("battery") && !typed.stdout.contains("battery"))

        let opened = try await fx.sync(["--encrypt", "--passphrase-file", file], store: other)
        #expect(opened.status == 0 && count("pulled", opened) == 2, "\(opened)")

        // A new key, then a new passphrase: the other store is told in one line, and opens everything with the new one.
        let rotated = try await fx.cli.run(["keys", "rotate", "--passphrase-file", file], environment: ["EVSYNC_AUTH_FILE": fx.authFile])
        #expect(rotated.status == 0 && rotated.stdout.contains("sealed with key k2"), "\(rotated)")
        let newFile = fx.directory.file("new-passphrase")
        try "a brand new passphrase\n".write(toFile: newFile, atomically: true, encoding: .utf8)
        let changed = try await fx.cli.run(["keys", "passphrase", "--passphrase-file", file, "--new-passphrase-file", newFile],
                                           environment: ["EVSYNC_AUTH_FILE": fx.authFile])
        #expect(changed.status == 0 && changed.stdout.contains("is changed"), "\(changed)")
        let stale = try await fx.sync([], store: other, environment: ["EVSYNC_PASSPHRASE_FILE": file])
        let staleError = (try? JSONParser.parse(stale.stdout))?.objectValue?["error"]?.stringValue ?? stale.stderr
        #expect(stale.status == 78 && staleError.contains("it was changed on another device on") && staleError.contains("give the new one"), "\(stale)")
        _ = try await fx.cli.ok(["add", "Holiday", "name=All Saints", "date=2027-11-01"])
        #expect(try await fx.sync([], environment: ["EVSYNC_PASSPHRASE_FILE": newFile]).status == 0)
        let caughtUp = try await fx.sync([], store: other, environment: ["EVSYNC_PASSPHRASE_FILE": newFile])
        #expect(caughtUp.status == 0 && count("pulled", caughtUp) == 1 && (count("skipped", caughtUp) ?? 0) == 0, "\(caughtUp)")

        // CalDAV/CardDAV: refused before anything is sent, saying why.
        let dav = try await Evsync(store: fx.directory.file("dav")).run(["sync", "--remote", "dav+http://127.0.0.1:9/dav/", "--encrypt", "--passphrase-file", file])
        #expect(dav.status == 64 && dav.stderr.contains("--encrypt is not offered with CalDAV/CardDAV"), "\(dav)")
    }

    @Test("sealed, through a proxy that loses the answer to every 5th request (applied, answered 503) and one that sheds every 3rd (503, not applied): 200 creates, then edits and deletions both ways, converge with each record once on the server and nothing lost")
    func throughLostAnswersAndShedRequests() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let file = try passphraseFiles(fx).file
        let a = fx.cli, b = fx.secondStore()
        let lines = (0..<200).map { #"{"name": "Day \#($0)", "date": "2027-01-01"}"# }.joined(separator: "\n") + "\n"
        try await a.ok(["import", "Holiday", "-"], stdin: lines)
        // More often than the DAV test's faults (DAVSyncTests.faults): a Kinto sync is a few batches of 25.
        let losing = try await SlowProxy(["--lost-answer-every", "5"])
        let shedding = try await SlowProxy(["--unavailable-every", "3"])
        func sync(_ evsync: Evsync, through proxy: SlowProxy) async throws {
            let output = try await evsync.run(["sync", "--json", "--encrypt", "--passphrase-file", file, "--auth-file", fx.authFile,
                                               "--remote", proxy.url + "/buckets/" + fx.web.bucket])
            let report = try SyncJSON(try #require(output.stdoutLines.last, "\(output)"))
            #expect(output.status == 0 && report.conflicts == 0 && report.rejected.isEmpty && report.skipped.isEmpty, "\(output)")
        }
        func expectConverged(_ count: Int) async throws {
            let held = try await a.list("Holiday").records
            #expect(held.count == count)
            #expect(try await b.list("Holiday").records == held)
            // The server holds each record once; opened, its live ones are exactly these.
            let opened = try await SealedKintoTests.openedOnTheServer(fx, passphraseFile: file)
            #expect(opened.compactMapValues { $0 } == held)
        }

        // Creates whose answers are lost (the keyring's among them, perhaps): each retry meets its own first copy.
        try await sync(a, through: losing)
        try await sync(b, through: shedding)
        try await expectConverged(200)

        // Edits and deletions both ways, each a sealed replace: a lost answer is retried against what it did.
        let ids = try await a.list("Holiday").ids.sorted()
        for id in ids[0..<15] { _ = try await a.ok(["edit", "Holiday", id, "details=edited by a"]) }
        for id in ids[15..<30] { _ = try await a.ok(["delete", "Holiday", id]) }
        for id in ids[30..<45] { _ = try await b.ok(["edit", "Holiday", id, "name=renamed by b"]) }
        for id in ids[45..<60] { _ = try await b.ok(["delete", "Holiday", id]) }
        try await sync(a, through: losing)
        try await sync(b, through: shedding)
        try await sync(a, through: losing)
        try await expectConverged(170)
        let held = try await a.list("Holiday").records.values
        #expect(held.filter { $0["details"] == "edited by a" }.count == 15)
        #expect(held.filter { $0["name"] == "renamed by b" }.count == 15)
        #expect(try await fx.web.count() == 200, "170 records and 30 sealed deletions, each once")

        // The faults happened: writes lost their answers, and the other proxy shed requests.
        let lost = losing.answered.filter { $0.hasSuffix(" 503") }, shed = shedding.answered.filter { $0.hasSuffix(" 503") }
        #expect(lost.contains { $0.hasPrefix("POST ") }, "\(lost)")
        #expect(shed.count >= 3, "\(shed)")
        for (store, proxy) in [(a, losing), (b, shedding)] {
            let again = try await store.run(["sync", "--passphrase-file", file, "--auth-file", fx.authFile,
                                             "--remote", proxy.url + "/buckets/" + fx.web.bucket])
            #expect(again.stdout.contains("already in sync"), "\(again)")
        }
    }

    /// What a store says of itself, by every command that reads it: a wrong passphrase must change none of it.
    func everythingSaid(by store: Evsync) async throws -> [String] {
        var said: [String] = []
        for command in [["status", "--json"], ["log", "tail", "-n", "100", "--json"], ["list", "Holiday", "--json"], ["remote", "--json"]] {
            said.append(try await store.ok(command))
        }
        return said
    }

    @Test func aWrongPassphraseWritesNothingHereAndSendsNothingThere() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (file, wrong) = try passphraseFiles(fx)
        _ = try await fx.cli.ok(["add", "Holiday", "name=Bastille Day", "date=2027-07-14"])
        #expect(try await fx.sync(["--encrypt", "--passphrase-file", file]).status == 0)
        // Something to pull (from a second device) and something to push (here): neither may move.
        let other = fx.secondStore()
        #expect(try await fx.sync(["--encrypt", "--passphrase-file", file], store: other).status == 0)
        _ = try await other.ok(["add", "Holiday", "name=All Saints", "date=2027-11-01"])
        #expect(try await fx.sync([], store: other, environment: ["EVSYNC_PASSPHRASE_FILE": file]).status == 0)
        _ = try await fx.cli.ok(["add", "Holiday", "name=Assumption", "date=2027-08-15"])
        let before = try await everythingSaid(by: fx.cli)
        let held = try await fx.web.listing(in: "holidays").map { JSONWriter.string(.object($0)) }.sorted()
        let keyring = try await fx.web.listing(in: "evsync-keyring").map { JSONWriter.string(.object($0)) }

        for refused in [try await fx.sync([], environment: ["EVSYNC_PASSPHRASE_FILE": wrong]),
                        try await fx.sync(["--encrypt", "--passphrase-file", wrong])] {
            #expect(refused.status == 78, "\(refused)")
            let error = (try? JSONParser.parse(refused.stdout))?.objectValue?["error"]?.stringValue ?? ""
            #expect(error.hasPrefix("the passphrase does not open the keys of") && error.hasSuffix("nothing was written"), "\(refused)")
            #expect(refused.stderrLines.count == 1, "\(refused)")
        }
        #expect(try await everythingSaid(by: fx.cli) == before)
        #expect(try await fx.web.listing(in: "holidays").map { JSONWriter.string(.object($0)) }.sorted() == held)
        #expect(try await fx.web.listing(in: "evsync-keyring").map { JSONWriter.string(.object($0)) } == keyring)

        // A store that did not exist: none is made, and the one line says why.
        let fresh = fx.directory.file("fresh")
        let refused = try await fx.sync(["--encrypt", "--passphrase-file", wrong], store: Evsync(store: fresh))
        #expect(refused.status == 78 && refused.stderrLines.count == 1, "\(refused)")
        #expect(refused.stderr.hasPrefix("evsync: the passphrase does not open the keys of"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: fresh), "a wrong passphrase left a store behind")
        // The right one then makes it and brings everything.
        let opened = try await fx.sync(["--encrypt", "--passphrase-file", file], store: Evsync(store: fresh))
        #expect(opened.status == 0 && count("pulled", opened) == 2, "\(opened)")
    }
}
