@testable import EventStore
@testable import EventSync
@testable import KintoAdapter
import TestSupport
import Foundation
import Testing

/// The engine with the real `KintoRemote`, and the web app changing a
/// record between the sync's pull and its push: the push then meets Kinto's
/// 412 (with the current record, or without it for a deleted one) or 404, and
/// must settle it in the same sync. Also a sync that dies after the server
/// applied a batch but before the log acknowledged it.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct KintoRaceTests {
    /// A fixture plus a store opened in this process and an engine whose remote runs `beforePush`.
    struct World {
        let fx: SyncFixture
        let store: Store

        init() async throws {
            fx = try SyncFixture()
            try await fx.web.createBucket()
            store = try Store(directory: fx.cli.store, create: true)
        }

        func sync(policy: ConflictPolicy = .serverWins, beforePush: (@Sendable () async throws -> Void)? = nil,
                  failAfterPush: Bool = false) async throws -> SyncReport {
            let (remote, web) = (fx.remote, fx.web)
            let engine = SyncEngine(store: store) {
                let inner = try KintoRemote(bucketURL: remote, credentials: try Credentials(userPassword: web.credentials))
                guard let beforePush else { return HookedRemote(inner, failAfterPush: failAfterPush) }
                return HookedRemote(inner, beforePush: { try blocking { try await beforePush() } }, failAfterPush: failAfterPush)
            }
            return try await onThread { try engine.syncBlocking(policy: policy) }
        }

        func local(_ id: String) throws -> JSONObject? { try store.record("Holiday", id: id)?.fields }
        var pending: Int { get throws { try store.status().pendingRecords } }
    }

    /// A synced record, both sides equal.
    private func syncedRecord(_ world: World, _ fields: JSONObject) async throws -> String {
        let id = newID()
        try await world.fx.web.put(id, fields)
        #expect(try await world.sync().pulled == 1)
        return id
    }

    @Test func disjointEditOnTheServerDuringThePushIsMergedAndPushedInTheSameSync() async throws {
        let world = try await World()
        let id = try await syncedRecord(world, holiday("Base", details: "base"))
        try world.store.edit("Holiday", id: id, set: ["details": "local details"])

        let web = world.fx.web
        let report = try await world.sync { try await web.patch(id, ["name": "web name"]) }
        let both = holiday("web name", details: "local details")
        #expect(report.conflicts == 0)
        #expect(try world.local(id) == both)
        #expect(try await web.get(id)?.fields == both, "the merged record reaches the server in this sync")
        #expect(try world.pending == 0)
        #expect(try await world.sync().result == .noData)
    }

    @Test(arguments: ConflictPolicy.allCases)
    func sameFieldEditOnTheServerDuringThePush(policy: ConflictPolicy) async throws {
        let world = try await World()
        let id = try await syncedRecord(world, holiday("Base", details: "base"))
        try world.store.edit("Holiday", id: id, set: ["name": "local name"])

        let web = world.fx.web
        let report = try await world.sync(policy: policy) { try await web.patch(id, ["name": "web name"]) }
        let expected = holiday(policy == .serverWins ? "web name" : "local name", details: "base")
        #expect(report.conflicts == 1)
        #expect(try world.local(id) == expected)
        #expect(try await web.get(id)?.fields == expected)
        #expect(try world.pending == 0)
        let conflict = try #require(try world.store.history(of: id).last { $0.kind == .conflict })
        #expect(conflict.local == .present(holiday("local name", details: "base")))
        #expect(conflict.server == .present(holiday("web name", details: "base")))
        #expect(conflict.resolved == .present(expected))
    }

    @Test(arguments: ConflictPolicy.allCases)
    func localEditAgainstADeleteOnTheServerDuringThePush(policy: ConflictPolicy) async throws {
        let world = try await World()
        let id = try await syncedRecord(world, holiday("Base"))
        try world.store.edit("Holiday", id: id, set: ["details": "edited here"])

        let web = world.fx.web
        let report = try await world.sync(policy: policy) { try await web.delete(id) }
        #expect(report.conflicts == 1)
        let edited = holiday("Base", details: "edited here")
        if policy == .serverWins {
            #expect(try world.local(id) == nil)
            #expect(try await web.get(id) == nil)
        } else {
            #expect(try world.local(id) == edited)
            #expect(try await web.get(id)?.fields == edited, "client-wins recreates the record over the tombstone")
        }
        #expect(try world.pending == 0)
        #expect(try await world.sync(policy: policy).result == .noData)
    }

    @Test(arguments: ConflictPolicy.allCases)
    func localDeleteAgainstAnEditOnTheServerDuringThePush(policy: ConflictPolicy) async throws {
        let world = try await World()
        let id = try await syncedRecord(world, holiday("Base"))
        try world.store.delete("Holiday", id: id)

        let web = world.fx.web
        let report = try await world.sync(policy: policy) { try await web.patch(id, ["details": "edited there"]) }
        #expect(report.conflicts == 1)
        let edited = holiday("Base", details: "edited there")
        if policy == .serverWins {
            #expect(try world.local(id) == edited)
            #expect(try await web.get(id)?.fields == edited)
        } else {
            #expect(try world.local(id) == nil)
            #expect(try await web.get(id) == nil)
        }
        #expect(try world.pending == 0)
        #expect(try await world.sync(policy: policy).result == .noData)
    }

    @Test func deletedOnBothSidesIsNotAConflict() async throws {
        let world = try await World()
        let id = try await syncedRecord(world, holiday("Base"))
        try world.store.delete("Holiday", id: id)

        let web = world.fx.web
        let report = try await world.sync { try await web.delete(id) }  // our DELETE then gets 404
        #expect(report.conflicts == 0)
        #expect(report.rejected.isEmpty)
        #expect(try world.local(id) == nil)
        #expect(try world.pending == 0)
        #expect(try await world.sync().result == .noData)
    }

    @Test(arguments: [false, true])
    func bothSidesCreateTheSameID(sameFields: Bool) async throws {
        let world = try await World()
        _ = try await world.sync()
        let id = newID()
        try world.store.add("Holiday", id: id, fields: holiday("Mine", details: "only here"))
        let theirs = sameFields ? holiday("Mine", details: "only here") : holiday("Theirs")

        let web = world.fx.web
        let report = try await world.sync(policy: .serverWins) { try await web.put(id, theirs) }
        if sameFields {
            #expect(report.conflicts == 0)
            #expect(report.pushed == 1, "the server already holds exactly our record: acknowledged")
            #expect(try world.local(id) == theirs)
        } else {
            #expect(report.conflicts == 1)
            // Field by field: the name changed on both sides (server wins), details only here.
            let merged = holiday("Theirs", details: "only here")
            #expect(try world.local(id) == merged)
            #expect(try await web.get(id)?.fields == merged)
        }
        #expect(try world.pending == 0)
    }

    /// The server applies a batch, then the sync dies before logging the
    /// acknowledgements; before the next sync the same records change again
    /// here. The next sync must recognise the server's versions as our own
    /// earlier pushes: no conflict, and server-wins must not undo the newer edits.
    @Test func aPushTheServerAppliedButTheLogNeverAcknowledgedIsRecognised() async throws {
        let world = try await World()
        let web = world.fx.web
        // Ids sort in push order: the two synced records first, then the creations.
        try await web.put("a-edited", holiday("Synced"))
        try await web.put("a-deleted", holiday("Synced too"))
        #expect(try await world.sync().pulled == 2)
        let created = (0..<30).map { String(format: "c%02d", $0) }
        for (n, id) in created.enumerated() { try world.store.add("Holiday", id: id, fields: holiday("Created \(n)")) }
        try world.store.edit("Holiday", id: "a-edited", set: ["name": "Renamed"])
        try world.store.delete("Holiday", id: "a-deleted")
        let before = try world.store.status()

        await #expect(throws: SyncError.self) { try await world.sync(failAfterPush: true) }
        // The first batch (25 operations) reached the server, and nothing of it the log.
        #expect(try await web.get("a-edited")?.fields == holiday("Renamed"))
        #expect(try await web.get("a-deleted") == nil)
        #expect(try await web.count() == 1 + 23)
        #expect(try world.store.status() == before)

        // Before syncing again, the same records change here once more.
        try world.store.edit("Holiday", id: "a-edited", set: ["name": "Renamed again"])
        try world.store.add("Holiday", id: "a-deleted", fields: holiday("Re-created here"))
        try world.store.edit("Holiday", id: "c00", set: ["name": "Created 0, renamed"])

        let report = try await world.sync(policy: .serverWins)
        #expect(report.conflicts == 0)
        #expect(report.rejected.isEmpty)
        var expected = Dictionary(uniqueKeysWithValues: created.enumerated().map { ($1, holiday("Created \($0)")) })
        expected["c00"] = holiday("Created 0, renamed")
        expected["a-edited"] = holiday("Renamed again")
        expected["a-deleted"] = holiday("Re-created here")
        #expect(try await web.records() == expected)
        #expect(Dictionary(uniqueKeysWithValues: try world.store.records("Holiday").map { ($0.id, $0.fields) }) == expected)
        #expect(try world.pending == 0)
        #expect(try world.store.verifyViews().isEmpty)
        #expect(try await world.sync().result == .noData)
    }
}

/// The random convergence test of `SyncEngineTests`, through the real server:
/// two stores, the web app editing directly, sometimes between a sync's pull and push.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct KintoRandomTests {
    @Test(arguments: 1...3 as ClosedRange<UInt64>)
    func randomEditsOnTwoStoresAndTheServerConverge(seed: UInt64) async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let (bucketURL, credentials) = (fx.remote, fx.web.credentials)
        var world = try RandomWorld(seed: seed, stores: [Store(directory: fx.directory.file("a"), create: true),
                                                         Store(directory: fx.directory.file("b"), create: true)],
                                    server: fx.web) {
            try KintoRemote(bucketURL: bucketURL, credentials: try Credentials(userPassword: credentials))
        }
        try await world.run(steps: 50)
    }
}

/// The random world edits the server as the web app would.
extension KintoWebApp: WebSide {
    func put(_ id: String, _ fields: JSONObject?, in collection: String) async throws {
        if let fields {
            try await put(id, fields, in: collection)
        } else if try await get(id, in: collection) != nil {
            try await delete(id, in: collection)
        }
    }

    func live(in collection: String) async throws -> [String: JSONObject] { try await records(in: collection) }
}

