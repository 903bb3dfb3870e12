@testable import EventStore
import EventSync
import Foundation
@testable import Sealing
import Testing
import TestSupport

/// The sealed remote over `InMemoryRemote`, whose records the tests read and forge as a server would: what the
/// server holds, two devices converging, a wrong passphrase, and each lie a server can tell.
@Suite struct SealedRemoteTests {
    /// Two devices' stores, each syncing sealed with one server.
    struct World {
        let directory: TemporaryDirectory
        let server = InMemoryRemote(pageSize: 2)
        let a: Store, b: Store

        init() throws {
            directory = try TemporaryDirectory()
            a = try Store(directory: directory.file("a"), create: true)
            b = try Store(directory: directory.file("b"), create: true)
        }

        func engine(_ store: Store, passphrase: String = "correct horse battery staple", resealLimit: Int = 200) -> SyncEngine {
            SyncEngine(store: store) { [server] in
                let remote = SealedRemote(server, store: store) { passphrase }
                remote.resealLimit = resealLimit
                return remote
            }
        }

        /// How many of the server's records of `entity` are sealed under each key.
        func keysHeld(_ entity: String = "Holiday") -> [String: Int] {
            var held: [String: Int] = [:]
            for record in server.records(in: entity).values {
                let parts = record[SealedEnvelope.field]?.stringValue?.split(separator: ".") ?? []
                if parts.count == 4 { held[String(parts[1]), default: 0] += 1 }
            }
            return held
        }

        /// Every field value the server holds, of every entity and the keyring, as one text.
        func serverText() -> String {
            ["Holiday", "Birthday", Keyring.entityName].map { entity in
                server.records(in: entity).values.map { JSONWriter.string(.object($0)) }.joined(separator: "\n")
            }.joined(separator: "\n")
        }
    }

    @Test func theServerHoldsNoValueInClearAndTwoDevicesConverge() async throws {
        let world = try World()
        let lent = try world.a.add("Holiday", fields: ["name": "Mardi Gras in Lent", "date": "2027-02-09"]).recordID
        let fool = try world.a.add("Holiday", fields: ["name": "April Fools", "date": "2027-04-01"]).recordID
        #expect(try await world.engine(world.a).sync().pushed == 2)
        let held = world.server.records(in: "Holiday")
        #expect(held.count == 2 && held.values.allSatisfy { $0.keys.sorted() == [SealedEnvelope.field] })
        for value in ["Mardi Gras", "2027-02-09", "April Fools", "2027-04-01"] { #expect(!world.serverText().contains(value)) }

        #expect(try await world.engine(world.b).sync().pulled == 2)
        #expect(try world.b.record("Holiday", id: lent)?.fields["name"] == "Mardi Gras in Lent")
        try world.b.edit("Holiday", id: lent, set: ["name": "Shrove Tuesday"])
        try world.b.delete("Holiday", id: fool)
        let pushedByB = try await world.engine(world.b).sync()
        #expect(pushedByB.pushed == 1 && pushedByB.deletedThere == 1, "\(pushedByB)")
        // The deletion is a sealed record the server keeps, not a deletion it could make up.
        #expect(world.server.records(in: "Holiday").count == 2)
        #expect(!world.serverText().contains("Shrove"))

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

    @Test func aWrongPassphraseIsRefusedInOneLineAndWritesNothing() async throws {
        let world = try World()
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        let before = try world.b.lastSeq()
        do {
            _ = try await world.engine(world.b, passphrase: "wrong").sync()
            Issue.record("a wrong passphrase synced")
        } catch let error as SyncError {
            #expect(error.code == .unauthorized)
            #expect(error.message.contains("the passphrase does not open the keys of memory://evsync") && !error.message.contains("\n"))
        }
        #expect(try world.b.lastSeq() == before)
        #expect(try world.b.sealingValue("place", remote: world.server.address) == nil)
        #expect(try world.b.lastSync() == nil, "the failure was recorded")

        // A store that synced: nothing pulled, nothing pushed, not even the failure recorded as the last sync.
        _ = try await world.engine(world.b).sync()
        _ = try world.a.add("Holiday", fields: ["name": "Candlemas", "date": "2027-02-02"])
        _ = try await world.engine(world.a).sync()
        _ = try world.b.add("Holiday", fields: ["name": "Shrove Tuesday", "date": "2027-02-09"])
        let (state, seq, server) = (try world.b.syncState(), try world.b.lastSeq(), world.serverText().split(separator: "\n").sorted())
        await #expect(throws: SyncError.self) { _ = try await world.engine(world.b, passphrase: "wrong").sync() }
        #expect(try world.b.syncState() == state && world.b.lastSeq() == seq)
        #expect(world.serverText().split(separator: "\n").sorted() == server)
    }

    @Test func aStoreThatSyncedSealedNeverSendsInClear() async throws {
        let world = try World()
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        _ = try world.a.add("Holiday", fields: ["name": "Candlemas", "date": "2027-02-02"])
        await #expect(throws: SyncError.self) { _ = try await SyncEngine(store: world.a) { world.server }.sync() }
        #expect(!world.serverText().contains("Candlemas"))
        #expect(try world.a.pendingCount(entity: "Holiday") == 1)
    }

    @Test func eachLieIsNamedAndTheRestSyncs() async throws {
        let world = try World()
        let ids = try (0..<5).map { try world.a.add("Holiday", fields: ["name": "Day \($0)", "date": "2027-03-0\($0 + 1)"]).recordID }
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()
        let original = world.server.records(in: "Holiday")
        // A later version, so that an earlier one can be replayed.
        try world.a.edit("Holiday", id: ids[3], set: ["name": "Day 3, moved"])
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()

        func sealedText(_ id: String) throws -> String { try #require(original[id]?[SealedEnvelope.field]?.stringValue) }
        var flipped = Array(try sealedText(ids[0]))
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == "A" ? "B" : "A"
        world.server.put(ids[0], [SealedEnvelope.field: .string(String(flipped))], in: "Holiday")
        world.server.put(ids[1], [SealedEnvelope.field: .string(try sealedText(ids[2]))], in: "Holiday")   // another record's
        world.server.put(ids[3], [SealedEnvelope.field: .string(try sealedText(ids[3]))], in: "Holiday")   // its older version
        world.server.put(ids[4], nil, in: "Holiday")                                                       // a deletion nobody sealed
        let fresh = try world.a.add("Holiday", fields: ["name": "Still synced", "date": "2027-05-01"]).recordID
        _ = try await world.engine(world.a).sync()

        let report = try await world.engine(world.b).sync()
        let reasons = Dictionary(uniqueKeysWithValues: report.skipped.compactMap { skip in skip.id.map { ($0, skip.reason) } })
        #expect(reasons[ids[0]]?.contains("does not open") == true)
        #expect(reasons[ids[1]]?.contains("does not open") == true)
        #expect(reasons[ids[3]]?.contains("refused as a replay") == true)
        #expect(reasons[ids[4]]?.contains("no device with the key sealed a deletion") == true)
        #expect(try world.b.record("Holiday", id: fresh)?.fields["name"] == "Still synced")
        // Nothing the server made up reached the tables.
        #expect(try world.b.record("Holiday", id: ids[0])?.fields["name"] == "Day 0")
        #expect(try world.b.record("Holiday", id: ids[1])?.fields["name"] == "Day 1")
        #expect(try world.b.record("Holiday", id: ids[3])?.fields["name"] == "Day 3, moved")
        #expect(try world.b.record("Holiday", id: ids[4])?.fields["name"] == "Day 4")
    }

    @Test func theKeyringReadsBackAndRefusesWhatIsNotItsOwn() throws {
        let (keyring, keys) = try Keyring.create(passphrase: Array("pass".utf8), parameters: KDFParameters(opsLimit: 1, memLimit: 8 << 20))
        let read = try Keyring(fields: keyring.fields, remote: "r")
        #expect(read == keyring)
        #expect(try read.unlock(passphrase: Array("pass".utf8), remote: "r").keys == keys.keys)
        #expect(throws: SealingError(.wrongPassphrase, "the passphrase does not open the keys of r; nothing was written")) {
            try read.unlock(passphrase: Array("Pass".utf8), remote: "r")
        }
        var greedy = keyring.fields
        greedy["kdf"] = .string("argon2id13:3:\(KDFParameters.largestMemory * 2):\(Base64.encode(keyring.salt))")
        #expect(throws: SealingError.self) { try Keyring(fields: greedy, remote: "r").unlock(passphrase: Array("pass".utf8), remote: "r") }
        // The envelope is bound to the record: the same contents under another id do not open.
        let envelope = SealedEnvelope(keys: keys)
        let sealed = try envelope.seal(.init(counter: 1, fields: ["name": "x"]), entity: "Holiday", id: "one")
        #expect(try envelope.open(sealed, entity: "Holiday", id: "one").get() == .init(counter: 1, fields: ["name": "x"]))
        #expect((try? envelope.open(sealed, entity: "Holiday", id: "two").get()) == nil)
        #expect((try? envelope.open(sealed, entity: "Birthday", id: "one").get()) == nil)
    }

    @Test func aRotationReachesADeviceThatWasAwayAndReSealsAFewRecordsAtEachSync() async throws {
        let world = try World()
        for day in 1...5 { _ = try world.a.add("Holiday", fields: ["name": "Day \(day)", "date": "2027-07-0\(day)"]) }
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()   // b is away from now on
        #expect(world.keysHeld() == ["k1": 5])

        let rotating = SealedRemote(world.server, store: world.a) { "correct horse battery staple" }
        #expect(try rotating.rotateKey(entities: ["Holiday", "Birthday"]) == "k2")
        let made = try world.a.add("Holiday", fields: ["name": "After the rotation", "date": "2027-08-01"]).recordID
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(world.keysHeld() == ["k1": 3, "k2": 3])
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(world.keysHeld() == ["k1": 1, "k2": 5])
        _ = try await world.engine(world.a, resealLimit: 2).sync()
        #expect(world.keysHeld() == ["k2": 6])

        // Back, b opens everything: the records under the new key, and what a rotation re-sealed is no change.
        let report = try await world.engine(world.b).sync()
        #expect(report.skipped.isEmpty && report.conflicts == 0, "\(report)")
        #expect(try world.b.record("Holiday", id: made)?.fields["name"] == "After the rotation")
        #expect(try world.b.records("Holiday").map(\.fields) == world.a.records("Holiday").map(\.fields))
    }

    @Test func aPassphraseChangeTellsTheOtherDevicesInOneLine() async throws {
        let world = try World()
        _ = try world.a.add("Holiday", fields: ["name": "Epiphany", "date": "2027-01-06"])
        _ = try await world.engine(world.a).sync()
        _ = try await world.engine(world.b).sync()
        try SealedRemote(world.server, store: world.a) { "correct horse battery staple" }.changePassphrase(to: "a new passphrase")
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
