@testable import EventStore
import EventSync
import Foundation
import KintoAdapter
import ParseAdapter
import Sealing
import Testing
import TestSupport

/// The sealed remote over each server it runs on here: in memory (`InMemoryRemote`), a real Kinto and the Parse
/// stand-in. Each scenario runs on all three: what the server holds, two devices converging, a wrong passphrase,
/// a rotation, a passphrase change, and each lie a server can tell, forged as another client of the server would
/// (Kinto's HTTP API, Parse's REST API).
@Suite(.deletesTestBuckets) struct SealedRemoteTests {
    /// Where the server is. Kinto only when the tests have one (`TestServer`); the stand-in is started per test.
    enum Server: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case memory, kinto, parse
        var testDescription: String { rawValue }
        static let available: [Server] = allCases.filter { $0 != .kinto || TestServer.isConfigured }
    }

    /// Two devices' stores, each syncing sealed with one server.
    struct World {
        let directory: TemporaryDirectory
        let a: Store, b: Store
        /// The server as another client of it reads and writes it, by collection (Kinto) or class (Parse).
        let web: any WebSide
        /// A client of the server for one sync (the same one in memory).
        let inner: @Sendable () throws -> any SyncRemote
        let kind: Server
        /// What keeps the server of this world alive (the stand-in's process), if anything.
        private let server: (any Sendable)?

        init(_ kind: Server) async throws {
            self.kind = kind
            switch kind {
            case .memory:
                directory = try TemporaryDirectory()
                let memory = InMemoryRemote(pageSize: 2)
                (web, inner, server) = (InMemoryServer(remote: memory), { memory }, nil)
            case .kinto:
                let fx = try SyncFixture()
                try await fx.web.createBucket()
                directory = fx.directory
                let (bucket, credentials) = (fx.remote, fx.web.credentials)
                (web, server) = (fx.web, nil)
                inner = { try KintoRemote(bucketURL: bucket, credentials: try Credentials(userPassword: credentials)) }
            case .parse:
                directory = try TemporaryDirectory("synctests-sealed-parse")
                let standIn = try await ParseStandIn(["--class", "Holiday", "--class", "Birthday", "--allow-client-class-creation"])
                let credentials = ParseCredentials(applicationID: ParseStandIn.applicationID, restAPIKey: ParseStandIn.restAPIKey)
                (web, server) = (standIn, standIn)
                inner = { [url = standIn.url] in try ParseRemote(serverURL: url, credentials: credentials) }
            }
            a = try Store(directory: directory.file("a"), create: true)
            b = try Store(directory: directory.file("b"), create: true)
        }

        func engine(_ store: Store, passphrase: String = "correct horse battery staple", resealLimit: Int = 200) -> SyncEngine {
            SyncEngine(store: store) { [inner] in
                let remote = SealedRemote(try inner(), store: store) { passphrase }
                remote.resealLimit = resealLimit
                return remote
            }
        }

        /// The sealed remote alone, for a rotation or a passphrase change (on a thread: it blocks on the network).
        func sealed<T: Sendable>(_ store: Store, passphrase: String = "correct horse battery staple",
                                 _ body: @escaping @Sendable (SealedRemote) throws -> T) async throws -> T {
            let inner = self.inner
            return try await onThread { try body(SealedRemote(try inner(), store: store) { passphrase }) }
        }

        /// Where the server keeps `entity`: Kinto's collection, else the entity's own name (a Parse class).
        func place(_ entity: String) -> String {
            guard kind == .kinto else { return entity }
            return ["Holiday": "holidays", "Birthday": "birthdays", Keyring.entityName: "evsync-keyring"][entity] ?? entity
        }

        /// The server's live records of `entity` by id, as a client of it reads them.
        func records(in entity: String) async throws -> [String: JSONObject] { try await web.live(in: place(entity)) }

        /// Writes (nil: deletes) a record of `entity` on the server, as a client of it would.
        func forge(_ id: String, _ fields: JSONObject?, in entity: String) async throws { try await web.put(id, fields, in: place(entity)) }

        /// How many of the server's records of `entity` are sealed under each key.
        func keysHeld(_ entity: String = "Holiday") async throws -> [String: Int] {
            var held: [String: Int] = [:]
            for record in try await records(in: entity).values {
                let parts = record[SealedEnvelope.field]?.stringValue?.split(separator: ".") ?? []
                if parts.count == 4 { held[String(parts[1]), default: 0] += 1 }
            }
            return held
        }

        /// Every field value the server holds, of every entity and the keyring, one record a line.
        func serverText() async throws -> String {
            var lines: [String] = []
            for entity in ["Holiday", "Birthday", Keyring.entityName] {
                lines += try await records(in: entity).values.map { JSONWriter.string(.object($0)) }
            }
            return lines.joined(separator: "\n")
        }
    }

    @Test(arguments: Server.available) func theServerHoldsNoValueInClearAndTwoDevicesConverge(_ server: Server) async throws {
        let world = try await World(server)
        let lent = try world.a.add("Holiday", fields: ["name": "Mardi Gras in Lent", "date": "2027-02-09"]).recordID
        let fool = try world.a.add("Holiday", fields: ["name": "April Fools", "date": "2027-04-01"]).recordID
        #expect(try await world.engine(world.a).sync().pushed == 2)
        let held = try await world.records(in: "Holiday")
        #expect(held.count == 2 && held.values.allSatisfy { $0.keys.sorted() == [SealedEnvelope.field] })
        for value in ["Mardi Gras", "2027-02-09", "April Fools", "2027-04-01"] { #expect(!(try await world.serverText()).contains(value)) }

        #expect(try await world.engine(world.b).sync().pulled == 2)
        #expect(try world.b.record("Holiday", id: lent)?.fields["name"] == "Mardi Gras in Lent")
        try world.b.edit("Holiday", id: lent, set: ["name": "Shrove Tuesday"])
        try world.b.delete("Holiday", id: fool)
        let pushedByB = try await world.engine(world.b).sync()
        #expect(pushedByB.pushed == 1 && pushedByB.deletedThere == 1, "\(pushedByB)")
        // The deletion is a sealed record the server keeps, not a deletion it could make up.
        #expect(try await world.records(in: "Holiday").count == 2)
        #expect(!(try await world.serverText()).contains("Shrove"))

        _ = try await world.engine(world.a).sync()
        #expect(try world.a.record("Holiday", id: lent)?.fields["name"] == "Shrove Tuesday")
        #expect(try world.a.record("Holiday", id: fool) == nil)

        // Both change one record: a conflict, merged as ever, sealed both ways.
        try world.a.edit("Holiday", id: lent, set: ["name": "Pancake Day"])
        try world.b.edit("Holiday", id: lent, set: ["date": "2027-02-10"])
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()
        _ = try await world.engine(world.a).sync()
        let merged = try world.a.record("Holiday", id: lent)?.fields
        #expect(merged?["name"] == "Pancake Day" && merged?["date"] == "2027-02-10")
        #expect(try world.b.record("Holiday", id: lent)?.fields == merged)
        // A record made again where a sealed deletion stands replaces that deletion.
        _ = try world.a.add("Holiday", id: fool, fields: ["name": "April Fools again", "date": "2027-04-01"])
        #expect(try await world.engine(world.a).sync().pushed == 1)
        _ = try await world.engine(world.b).sync()
        #expect(try world.b.record("Holiday", id: fool)?.fields["name"] == "April Fools again")
    }

    @Test(arguments: Server.available) func aWrongPassphraseIsRefusedInOneLineAndWritesNothing(_ server: Server) async throws {
        let world = try await World(server)
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        let before = try world.b.lastSeq()
        let address = try world.inner().address
        do {
            _ = try await world.engine(world.b, passphrase: "wrong").sync()
            Issue.record("a wrong passphrase synced")
        } catch let error as SyncError {
            #expect(error.code == .unauthorized)
            #expect(error.message.contains("the passphrase does not open the keys of \(address)") && !error.message.contains("\n"))
        }
        #expect(try world.b.lastSeq() == before)
        #expect(try world.b.sealingValue("place", remote: address) == nil)
        #expect(try world.b.lastSync() == nil, "the failure was recorded")

        // A store that synced: nothing pulled, nothing pushed, not even the failure recorded as the last sync.
        _ = try await world.engine(world.b).sync()
        _ = try world.a.add("Holiday", fields: ["name": "Candlemas", "date": "2027-02-02"])
        _ = try await world.engine(world.a).sync()
        _ = try world.b.add("Holiday", fields: ["name": "Shrove Tuesday", "date": "2027-02-09"])
        let (state, seq, held) = (try world.b.syncState(), try world.b.lastSeq(), try await world.serverText().split(separator: "\n").sorted())
        await #expect(throws: SyncError.self) { _ = try await world.engine(world.b, passphrase: "wrong").sync() }
        #expect(try world.b.syncState() == state && world.b.lastSeq() == seq)
        #expect(try await world.serverText().split(separator: "\n").sorted() == held)
    }

    @Test(arguments: Server.available) func aStoreThatSyncedSealedNeverSendsInClear(_ server: Server) async throws {
        let world = try await World(server)
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        _ = try world.a.add("Holiday", fields: ["name": "Candlemas", "date": "2027-02-02"])
        await #expect(throws: SyncError.self) { _ = try await SyncEngine(store: world.a) { try world.inner() }.sync() }
        #expect(!(try await world.serverText()).contains("Candlemas"))
        #expect(try world.a.pendingCount(entity: "Holiday") == 1)
    }

    @Test(arguments: Server.available) func eachLieIsNamedAndTheRestSyncs(_ server: Server) async throws {
        let world = try await World(server)
        let ids = try (0..<5).map { try world.a.add("Holiday", fields: ["name": "Day \($0)", "date": "2027-03-0\($0 + 1)"]).recordID }
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()
        let original = try await world.records(in: "Holiday")
        // A later version, so that an earlier one can be replayed.
        try world.a.edit("Holiday", id: ids[3], set: ["name": "Day 3, moved"])
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()

        func sealedText(_ id: String) throws -> String { try #require(original[id]?[SealedEnvelope.field]?.stringValue) }
        var flipped = Array(try sealedText(ids[0]))
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == "A" ? "B" : "A"
        try await world.forge(ids[0], [SealedEnvelope.field: .string(String(flipped))], in: "Holiday")
        try await world.forge(ids[1], [SealedEnvelope.field: .string(try sealedText(ids[2]))], in: "Holiday")   // another record's
        try await world.forge(ids[3], [SealedEnvelope.field: .string(try sealedText(ids[3]))], in: "Holiday")   // its older version
        try await world.forge(ids[4], nil, in: "Holiday")                                                       // a deletion nobody sealed
        let fresh = try world.a.add("Holiday", fields: ["name": "Still synced", "date": "2027-05-01"]).recordID
        _ = try await world.engine(world.a).sync()

        let report = try await world.engine(world.b).sync()
        let reasons = Dictionary(uniqueKeysWithValues: report.skipped.compactMap { skip in skip.id.map { ($0, skip.reason) } })
        #expect(reasons[ids[0]]?.contains("does not open") == true)
        #expect(reasons[ids[1]]?.contains("does not open") == true)
        #expect(reasons[ids[3]]?.contains("refused as a replay") == true)
        // A deletion nobody sealed is a record the server lost: kept, named, and `--missing` decides.
        #expect(reasons[ids[4]] == nil && report.goneFromServer.map(\.id) == [ids[4]], "\(report)")
        #expect(report.goneFromServer.first?.reason.contains("no device with the key sealed a deletion") == true, "\(report)")
        #expect(try world.b.recordsMissingFromServer()["Holiday"] == [ids[4]])
        #expect(try world.b.record("Holiday", id: fresh)?.fields["name"] == "Still synced")
        // Nothing the server made up reached the tables.
        #expect(try world.b.record("Holiday", id: ids[0])?.fields["name"] == "Day 0")
        #expect(try world.b.record("Holiday", id: ids[1])?.fields["name"] == "Day 1")
        #expect(try world.b.record("Holiday", id: ids[3])?.fields["name"] == "Day 3, moved")
        #expect(try world.b.record("Holiday", id: ids[4])?.fields["name"] == "Day 4")
        // Nor at the next sync, which names none of them again; the lost one stays kept until decided.
        let next = try await world.engine(world.b).sync()
        #expect(next.skipped.isEmpty, "\(next.skipped)")
        #expect(try world.b.recordsMissingFromServer()["Holiday"] == [ids[4]])
        #expect(try world.b.records("Holiday").map { $0.fields["name"] } == world.a.records("Holiday").map { $0.fields["name"] })
        // Pushed back, sealed, as for any record a server lost; the other device takes it and names it no more.
        #expect(try await world.engine(world.b).sync(missing: .pushBack).pushed == 1)
        #expect(try world.b.recordsMissingFromServer()["Holiday"] == nil)
        _ = try await world.engine(world.a).sync()
        #expect(try world.a.recordsMissingFromServer()["Holiday"] == nil)
        #expect(try world.a.record("Holiday", id: ids[4])?.fields["name"] == "Day 4")
    }

    @Test(arguments: Server.available) func aRotationReachesADeviceThatWasAwayAndReSealsAFewRecordsAtEachSync(_ server: Server) async throws {
        let world = try await World(server)
        for day in 1...5 { _ = try world.a.add("Holiday", fields: ["name": "Day \(day)", "date": "2027-07-0\(day)"]) }
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()   // b is away from now on
        #expect(try await world.keysHeld() == ["k1": 5])

        #expect(try await world.sealed(world.a) { try $0.rotateKey(entities: ["Holiday", "Birthday"]) } == "k2")
        let made = try world.a.add("Holiday", fields: ["name": "After the rotation", "date": "2027-08-01"]).recordID
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(try await world.keysHeld() == ["k1": 3, "k2": 3])
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(try await world.keysHeld() == ["k1": 1, "k2": 5])
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(try await world.keysHeld() == ["k2": 6])

        // Back, b opens everything: the records under the new key, and what a rotation re-sealed is no change.
        let report = try await world.engine(world.b).sync()
        #expect(report.skipped.isEmpty && report.conflicts == 0, "\(report)")
        #expect(try world.b.record("Holiday", id: made)?.fields["name"] == "After the rotation")
        #expect(try world.b.records("Holiday").map(\.fields) == world.a.records("Holiday").map(\.fields))
    }

    @Test(arguments: Server.available) func aPassphraseChangeTellsTheOtherDevicesInOneLine(_ server: Server) async throws {
        let world = try await World(server)
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()
        try await world.sealed(world.a) { try $0.changePassphrase(to: "a new passphrase") }
        _ = try world.a.add("Holiday", fields: ["name": "Candlemas", "date": "2027-02-02"])
        _ = try await world.engine(world.a, passphrase: "a new passphrase").sync()
        do {
            _ = try await world.engine(world.b).sync()
            Issue.record("the old passphrase still opened the keys")
        } catch let error as SyncError {
            #expect(error.message.contains("it was changed on another device on 20") && error.message.contains("give the new one"))
        }
        #expect(try await world.engine(world.b, passphrase: "a new passphrase").sync().pulled == 1)
    }
}
