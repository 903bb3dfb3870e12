@testable import EventStore
import TestSupport
import Foundation
import Testing

/// The tutorial's two tables as a family app has them, on a real Kinto with two accounts: Holidays in a bucket
/// an editor keeps and everyone reads (`"x-evsync-kinto": {"bucket": …}` in the schema), Birthdays in each user's
/// own bucket (the remote's), both in one sync.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct SharedBucketTests {
    static func holidaySchema(bucket: String) -> String {
        """
        {"title": "Holiday", "x-evsync-collection": "holidays", "x-evsync-kinto": {"bucket": "\(bucket)"}, "type": "object",
         "properties": {"name": {"type": "string"}, "date": {"type": "string", "format": "date"}, "details": {"type": "string"}},
         "required": ["name", "date"]}
        """
    }

    /// The editor's bucket (the fixture's), Holidays in it for bob to read; bob's store, whose remote is his own bucket.
    struct Family {
        let fx: SyncFixture
        let bob: (name: String, authFile: String)
        let schemas: String
        let store: Evsync
        let own: KintoWebApp

        init() async throws {
            fx = try SyncFixture()
            try await fx.web.createBucket(collections: ["holidays"])
            bob = try await RemoteHistoryTests.bob(fx, permission: "read")
            schemas = fx.directory.file("schemas")
            try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
            try SharedBucketTests.holidaySchema(bucket: fx.web.bucket).write(toFile: schemas + "/holiday.schema.json", atomically: true, encoding: .utf8)
            store = Evsync(store: fx.directory.file("bob-store"), schemas: schemas)
            own = KintoWebApp(server: fx.web.server, credentials: try String(contentsOfFile: bob.authFile, encoding: .utf8).trimmingCharacters(in: .newlines),
                              bucket: TestServer.freshBucket())
            BucketRegistry.current?.register(own)
        }

        func sync(_ extra: [String] = []) async throws -> ProcessOutput {
            try await store.run(["sync", "--remote", own.bucketURL, "--auth-file", bob.authFile, "--json"] + extra)
        }
    }

    @Test func eachEntitySyncsFromItsOwnBucketInOneSync() async throws {
        let family = try await Family()
        let (fx, store, own, schemas) = (family.fx, family.store, family.own, family.schemas)
        func sync(_ extra: [String] = []) async throws -> ProcessOutput { try await family.sync(extra) }

        let newYear = newID()
        try await fx.web.put(newYear, holiday("New Year", date: "2027-01-01"))
        let mum = newID()
        try await store.add("Birthday", id: mum, ["name=Mum", "date=1960-04-02"])
        let first = try await sync()
        let report = try SyncJSON(first.stdoutLines.last ?? "{}")
        #expect(first.status == 0 && report.pulled == 1 && report.pushed == 1, "\(first)")
        // The holiday came from the shared bucket; the birthday went to bob's own, and nothing went to the shared one.
        #expect(try await store.records().keys.sorted() == [newYear])
        #expect(try await own.records(in: "birthdays").keys.sorted() == [mum])
        #expect(try await own.request("GET", "/buckets/\(own.bucket)/collections/holidays").status == 404)
        #expect(try await fx.web.request("GET", "/buckets/\(fx.web.bucket)/collections/birthdays").status == 404)

        // The editor adds a holiday: bob's next sync brings it, from the shared bucket, by the editor's account.
        let easter = newID()
        try await fx.web.put(easter, holiday("Easter", date: "2027-03-28"))
        let second = try await sync()
        let secondReport = try SyncJSON(second.stdoutLines.last ?? "{}")
        #expect(second.status == 0 && secondReport.pulled == 1, "\(second)")
        #expect(try await store.records().keys.sorted() == [easter, newYear].sorted())

        // Bob may only read the holidays: his edit is refused and held, his birthdays still sync.
        try await store.edit(easter, ["details=Eggs"])
        try await store.edit(mum, ["giftIdeas=Flowers"], entity: "Birthday")
        let refused = try await sync()
        let refusedReport = try SyncJSON(refused.stdoutLines.last ?? "{}")
        #expect(refused.status == 1 && refusedReport.pushed == 1 && refusedReport.rejected.count == 1, "\(refused)")
        #expect(try await own.records(in: "birthdays")[mum]?["giftIdeas"] == "Flowers")
        #expect(try await fx.web.get(easter)?.fields["details"] == nil)

        // The schema moves Holidays to bob's own bucket, empty: read there from the start, and the holidays the
        // new place lacks are kept here and named, never taken for deletions.
        try Self.holidaySchema(bucket: own.bucket).write(toFile: schemas + "/holiday.schema.json", atomically: true, encoding: .utf8)
        let moved = try await sync()
        let movedReport = try SyncJSON(moved.stdoutLines.last ?? "{}")
        #expect(movedReport.reread == ["Holiday"] && movedReport.deletedHere == 0, "\(moved)")
        #expect(moved.stdout.contains(#""goneFromServer":[{"#), "\(moved.stdout)")
        #expect(try await store.records().keys.sorted() == [easter, newYear].sorted(), "nothing deleted here")

        // A schema that names no usable bucket is refused before anything is sent, naming what it takes.
        try #"{"title": "Holiday", "x-evsync-kinto": {"bucket": "no/such"}, "type": "object", "properties": {"name": {"type": "string"}}}"#
            .write(toFile: schemas + "/holiday.schema.json", atomically: true, encoding: .utf8)
        let bad = try await sync()
        #expect(bad.status == 65 && bad.stderr.contains(#"x-evsync-kinto takes {"bucket": ID}"#), "\(bad)")
    }
}

extension SharedBucketTests {
    @Test func readAccessWithdrawnLeavesTheEntityAsItIsAndTheOthersSync() async throws {
        let family = try await Family()
        let (fx, bob, store, own) = (family.fx, family.bob, family.store, family.own)
        func sync(_ extra: [String] = []) async throws -> ProcessOutput { try await family.sync(extra) }
        let ids = [newID(), newID()]
        for (index, id) in ids.enumerated() { try await fx.web.put(id, holiday("Holiday \(index)")) }
        #expect(try await sync().status == 0)
        #expect(try await store.records().count == 2)

        // The editor withdraws bob's access to the shared bucket.
        let withdrawn = try await fx.web.request("PUT", "/buckets/\(fx.web.bucket)", body: ["data": [:], "permissions": ["read": []]])
        #expect(withdrawn.status == 200, "\(withdrawn)")
        let mum = newID()
        try await store.add("Birthday", id: mum, ["name=Mum", "date=1960-04-02"])
        let added = newID()
        try await fx.web.put(added, holiday("Added while bob was out"))
        for missing in [[], ["--missing", "delete"]] {
            let after = try await sync(missing)
            let report = try SyncJSON(after.stdoutLines.last ?? "{}")
            #expect(after.status == 1 && report.deletedHere == 0 && report.goneFromServer.isEmpty, "\(after)")
            #expect(after.stdout.contains(#""unreadable":[{"entity":"Holiday","reason":"this account may no longer read "#), "\(after.stdout)")
            #expect(after.stderr.contains("evsync: Holiday is left as it is here, not synced: this account may no longer read"), "\(after.stderr)")
            #expect(after.stderr.contains("1 entity this account may no longer read: Holiday, kept here as they are"), "\(after.stderr)")
            #expect(try await store.records().keys.sorted() == ids.sorted(), "access lost is not a deletion")
        }
        // The other entity synced all the same.
        #expect(try await own.records(in: "birthdays").keys.sorted() == [mum])
        for id in ids { #expect(try await store.history(id).allSatisfy { $0["kind"]?.stringValue != "deleted" }) }

        // Access given back: the holidays sync again, from where they were, with what changed meanwhile.
        let given = try await fx.web.request("PATCH", "/buckets/\(fx.web.bucket)", body: ["permissions": ["read": [.string("account:\(bob.name)")]]])
        #expect(given.status == 200, "\(given)")
        let back = try await sync()
        let backReport = try SyncJSON(back.stdoutLines.last ?? "{}")
        #expect(back.status == 0 && backReport.pulled == 1 && backReport.reread.isEmpty, "\(back)")
        #expect(try await store.records().keys.sorted() == (ids + [added]).sorted())
    }
}
