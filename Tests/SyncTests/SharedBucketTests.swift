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

        // Bob may only read the holidays, and his store knows it: his edit is refused up front; forced, it is
        // refused by the server and held, and his birthdays still sync.
        let status = try await store.run(["status", "--json"])
        #expect(status.stdout.contains(#""access":{"Birthday":"read-write","Holiday":"read-only"}"#), "\(status)")
        let upFront = try await store.run(["edit", "Holiday", easter, "details=Eggs"])
        #expect(upFront.status == 73 && upFront.stderr.contains("evsync: Holiday is read-only for this account, as the server said at the last sync"), "\(upFront)")
        try await store.ok(["edit", "Holiday", easter, "details=Eggs", "--force"])
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
        #expect(try await store.records().keys.sorted() == [easter, newYear].sorted(), "nothing deleted here: \(moved.stdout) \(moved.stderr)")

        // A schema that names no usable bucket is refused before anything is sent, naming what it takes.
        try #"{"title": "Holiday", "x-evsync-kinto": {"bucket": "no/such"}, "type": "object", "properties": {"name": {"type": "string"}}}"#
            .write(toFile: schemas + "/holiday.schema.json", atomically: true, encoding: .utf8)
        let bad = try await sync()
        #expect(bad.status == 65 && bad.stderr.contains(#"x-evsync-kinto takes {"bucket": ID}"#), "\(bad)")
    }
}

extension SharedBucketTests {
    /// The editor withdraws bob's access to the shared bucket: the holidays he read leave his store with an event
    /// saying why, never as deletions (history, diff, why), nothing is deleted on the server, `--missing` has nothing
    /// to decide; the one he changed without the server's acknowledgement stays, and his birthdays sync meanwhile.
    /// Access given back brings them back, their history going on.
    @Test func accessWithdrawnMakesReadRecordsLeaveNotDeletedAndAGrantBringsThemBack() async throws {
        let family = try await Family()
        let (fx, bob, store, own) = (family.fx, family.bob, family.store, family.own)
        func sync(_ extra: [String] = []) async throws -> (output: ProcessOutput, report: SyncJSON) {
            let output = try await family.sync(extra)
            return (output, try SyncJSON(output.stdoutLines.last ?? "{}"))
        }
        let bucket = "/buckets/\(fx.web.bucket)"
        let ids = [newID(), newID()]
        for (index, id) in ids.enumerated() { try await fx.web.put(id, holiday("Holiday \(index)")) }
        #expect(try await sync().report.pulled == 2)
        // An edit of the second holiday, forced, is refused by the server and held: pending, bob's work.
        try await store.ok(["edit", "Holiday", ids[1], "details=Bob's note", "--force"])
        #expect(try await sync().output.status == 1)

        // The editor withdraws bob's access.
        #expect(try await fx.web.request("PUT", bucket, body: ["data": [:], "permissions": ["read": []]]).status == 200)
        let mum = newID()
        try await store.add("Birthday", id: mum, ["name=Mum", "date=1960-04-02"])
        let added = newID()
        try await fx.web.put(added, holiday("Added while bob was out"))
        let beforeWithdrawal = try await store.status().events
        let withdrawn = try await sync()
        #expect(withdrawn.output.status == 1 && withdrawn.report.deletedHere == 0 && withdrawn.report.goneFromServer.isEmpty
                && withdrawn.report.left == ["Holiday \(ids[0])"], "\(withdrawn.output)")
        #expect(withdrawn.output.stdout.contains(#""unreadable":[{"entity":"Holiday","reason":"this account may no longer read "#), "\(withdrawn.output.stdout)")
        #expect(withdrawn.output.stderr.contains("evsync: 1 Holiday record left this store, no longer shared with you: not deleted, here or "
            + "on the server; they come back if shared again"), "\(withdrawn.output.stderr)")
        #expect(withdrawn.output.stderr.contains("evsync: Holiday is not synced: this account may no longer read"), "\(withdrawn.output.stderr)")
        #expect(try await store.records().keys.sorted() == [ids[1]], "what bob changed stays")
        #expect(try await own.records(in: "birthdays").keys.sorted() == [mum], "the other entity synced")
        #expect(try await fx.web.get(ids[0]) != nil, "nothing is deleted on the server")

        // It left; it was not deleted: not in history, not in diff, not in why; and --missing has nothing to decide.
        let history = try await store.history(ids[0])
        #expect(history.last?["kind"] == "left" && history.last?["reason"] == "no longer shared with you", "\(history)")
        #expect(history.allSatisfy { $0["kind"]?.stringValue != "deleted" }, "\(history)")
        let historyText = try await store.ok(["history", ids[0]])
        #expect(historyText.contains("(left this store, not deleted: no longer shared with you)") && !historyText.contains("deleted)"), "\(historyText)")
        let diff = try await store.ok(["diff", "--from", String(beforeWithdrawal)])
        #expect(diff.contains("< Holiday/\(ids[0])  left") && diff.contains(", 1 left (not deleted) between"), "\(diff)")
        let why = try await store.ok(["why", "Holiday", ids[0]])
        #expect(why.contains("left this store, not deleted: no longer shared with you"), "\(why)")
        let decided = try await sync(["--missing", "delete"])
        #expect(decided.report.deletedHere == 0 && decided.report.left.isEmpty, "\(decided.output)")
        #expect(try await store.records().keys.sorted() == [ids[1]])
        // A change to the entity is refused up front while it is closed.
        #expect(try await store.run(["add", "Holiday", "name=Mine", "date=2027-01-02"]).status == 73)

        // Access given back: the holidays come back, with what changed meanwhile, their history going on.
        #expect(try await fx.web.request("PATCH", bucket, body: ["permissions": ["read": [.string("account:\(bob.name)")]]]).status == 200)
        let back = try await sync()
        #expect(back.report.pulled == 2 && back.report.left.isEmpty, "\(back.output)")
        #expect(try await store.records().keys.sorted() == [added, ids[0], ids[1]].sorted())
        #expect(try await store.history(ids[0]).compactMap { $0["kind"]?.stringValue } == ["created", "left", "created"])
        let settled = try await sync()
        #expect(settled.report.pulled == 0 && settled.report.left.isEmpty, "\(settled.output)")
    }

    /// Bob wrote to the shared bucket once, so he keeps write access to the holiday he made (Kinto gives a record's
    /// creator its own permission). Access to the bucket withdrawn, the collection still lists that one record to him:
    /// the rest, unlisted, leave (no tombstone says so, and it is no server's loss), his own stays and syncs; read
    /// access given back brings the rest back.
    @Test func aFormerWritersOwnRecordStaysWhenTheRestLeavesAndTheRestReturnsWithAccess() async throws {
        let family = try await Family()
        let (fx, bob, store, own) = (family.fx, family.bob, family.store, family.own)
        // Access is asked at every sync (a debug build's EVSYNC_ACCESS_RECHECK_MS), not once in 15 minutes: a record
        // unshared but unchanged shows in no pull.
        func sync() async throws -> (output: ProcessOutput, report: SyncJSON) {
            let output = try await store.run(["sync", "--remote", own.bucketURL, "--auth-file", bob.authFile, "--json"],
                                             environment: ["EVSYNC_ACCESS_RECHECK_MS": "1"])
            return (output, try SyncJSON(output.stdoutLines.last ?? "{}"))
        }
        let bucket = "/buckets/\(fx.web.bucket)"
        let theirs = newID()
        try await fx.web.put(theirs, holiday("The editor's"))
        #expect(try await fx.web.request("PATCH", bucket, body: ["permissions": ["write": [.string("account:\(bob.name)")]]]).status == 200)
        let his = newID()
        try await store.add(id: his, ["name=Bob's holiday", "date=2027-07-07"])
        #expect(try await sync().report.pushed == 1)

        #expect(try await fx.web.request("PUT", bucket, body: ["data": [:], "permissions": ["read": []]]).status == 200)
        let withdrawn = try await sync()
        #expect(withdrawn.output.status == 0 && withdrawn.report.left == ["Holiday \(theirs)"] && withdrawn.report.deletedHere == 0
                && withdrawn.output.stdout.contains(#""verified":[]"#) && withdrawn.report.goneFromServer.isEmpty, "\(withdrawn.output.stdout) \(withdrawn.output.stderr)")
        #expect(try await store.run(["status", "--json"]).stdout.contains(#""Holiday":"shared-records""#))
        #expect(try await store.records().keys.sorted() == [his])
        try await store.edit(his, ["details=Still mine"])
        #expect(try await sync().report.pushed == 1)
        #expect(try await fx.web.get(his)?.fields["details"] == "Still mine")

        #expect(try await fx.web.request("PATCH", bucket, body: ["permissions": ["read": [.string("account:\(bob.name)")]]]).status == 200)
        let back = try await sync()
        #expect(back.report.pulled == 1 && back.report.left.isEmpty, "\(back.output)")
        #expect(try await store.records().keys.sorted() == [his, theirs].sorted())
        #expect(try await store.run(["status", "--json"]).stdout.contains(#""Holiday":"read-write-some""#))
    }
}

extension SharedBucketTests {
    /// Three accounts on one bucket: the editor (the fixture's) who keeps it; carol, who may read the holidays and
    /// only add birthdays (Kinto's `record:create`: a drop box). Her store learns each entity's access at every
    /// sync, refuses a holiday change up front, sends her own birthdays up and, once the editor grants her write
    /// access, sends the change it held for want of it.
    @Test func eachEntitysAccessIsLearnedAReadOnlyChangeIsRefusedUpFrontAndAGrantSendsWhatWasHeld() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let carol = try await RemoteHistoryTests.account(fx, "carol")
        let holidays = "/buckets/\(fx.web.bucket)/collections/holidays", birthdays = "/buckets/\(fx.web.bucket)/collections/birthdays"
        let account = JSONValue.string("account:\(carol.name)")
        #expect(try await fx.web.request("PATCH", holidays, body: ["permissions": ["read": [account]]]).status == 200)
        #expect(try await fx.web.request("PATCH", birthdays, body: ["permissions": ["record:create": [account]]]).status == 200)
        let kingsDay = newID(), editorsBirthday = newID()
        try await fx.web.put(kingsDay, holiday("Kings' Day", date: "2027-04-27"))
        try await fx.web.put(editorsBirthday, ["name": "Editor", "date": "1970-01-01"], in: "birthdays")
        let store = fx.secondStore()
        func sync(_ extra: [String] = []) async throws -> (output: ProcessOutput, report: SyncJSON) {
            let output = try await fx.sync(["--auth-file", carol.authFile] + extra, store: store)
            return (output, try SyncJSON(output.stdoutLines.last ?? "{}"))
        }

        let first = try await sync()
        #expect(first.output.status == 0 && first.report.pulled == 1, "\(first.output)")
        #expect(try await store.records().keys.sorted() == [kingsDay], "the editor's birthday is not carol's to read")
        let status = try await store.run(["status", "--json"])
        #expect(status.stdout.contains(#""access":{"Birthday":"create-only","Holiday":"read-only"}"#), "\(status)")
        let text = try await store.ok(["status"])
        #expect(text.contains("access    Birthday create-only: records made here go up; the server shows only those"), "\(text)")
        #expect(text.contains("access    Holiday read-only: a change made here is refused before it is written"), "\(text)")

        // A holiday change is refused before it is written: one line, exit 73, the log as it was.
        let events = try await store.status().events
        for change in [["add", "Holiday", "name=Mine", "date=2027-01-02"], ["edit", "Holiday", kingsDay, "details=Orange"],
                       ["delete", "Holiday", kingsDay]] {
            let refused = try await store.run(change)
            #expect(refused.status == 73 && refused.stderrLines == ["evsync: Holiday is read-only for this account, as the server said "
                + "at the last sync: it would refuse the change, so it was not made; forced, the change is kept here and held until "
                + "access is granted (--force)"], "\(refused)")
        }
        #expect(try await store.status().events == events, "nothing written")

        // Her own birthday goes up, and she may change it: its creator writes it.
        let mine = newID()
        try await store.add("Birthday", id: mine, ["name=Carol", "date=1990-06-01"])
        #expect(try await sync().report.pushed == 1)
        try await store.edit(mine, ["giftIdeas=Tea"], entity: "Birthday")
        let edited = try await sync()
        #expect(edited.output.status == 0 && edited.report.pushed == 1 && edited.report.rejected.isEmpty, "\(edited.output)")
        #expect(try await fx.web.records(in: "birthdays")[mine]?["giftIdeas"] == "Tea")

        // Forced, a holiday change is kept, refused by the server and held: not sent again by itself.
        try await store.ok(["edit", "Holiday", kingsDay, "details=Orange", "--force"])
        let forced = try await sync()
        #expect(forced.output.status == 1 && forced.report.rejected.count == 1, "\(forced.output)")
        let again = try await sync()
        #expect(again.report.pushed == 0 && again.report.held.count == 1, "\(again.output)")

        // The editor grants carol write access: the next sync learns it and sends what it held.
        #expect(try await fx.web.request("PATCH", holidays, body: ["permissions": ["write": [account]]]).status == 200)
        let granted = try await sync()
        #expect(granted.output.status == 0 && granted.report.pushed == 1, "\(granted.output)")
        #expect(try await fx.web.get(kingsDay)?.fields["details"] == "Orange")
        #expect(try await store.run(["status", "--json"]).stdout.contains(#""access":{"Birthday":"create-only","Holiday":"read-write"}"#))
        try await store.add("Holiday", id: newID(), ["name=Mine", "date=2027-01-02"])
        #expect(try await sync().report.pushed == 1)
    }
}

extension SharedBucketTests {
    /// Dave may read no collection of the editor's bucket: two holidays are shared with him one by one, one for
    /// writing (Kinto record permissions). Both arrive; his edit of the writable one goes back; his edit of the
    /// other is not refused up front (the store cannot tell which is which) but by the server, and held.
    @Test func recordsSharedOneByOneArriveAndAnEditGoesBackWhereWriteIsGranted() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket(collections: ["holidays"])
        let dave = try await RemoteHistoryTests.account(fx, "dave")
        let account = JSONValue.string("account:\(dave.name)")
        let writable = newID(), readable = newID(), notShared = newID()
        for (id, permissions) in [(writable, ["write": [account]]), (readable, ["read": [account]]), (notShared, [:])] as [(String, JSONObject)] {
            let shared = try await fx.web.request("PUT", "/buckets/\(fx.web.bucket)/collections/holidays/records/\(id)",
                                                  body: ["data": .object(holiday("Holiday \(id)")), "permissions": .object(permissions)])
            #expect([200, 201].contains(shared.status), "\(shared)")
        }
        let schemas = fx.directory.file("schemas")
        try FileManager.default.createDirectory(atPath: schemas, withIntermediateDirectories: true)
        try Self.holidaySchema(bucket: fx.web.bucket).write(toFile: schemas + "/holiday.schema.json", atomically: true, encoding: .utf8)
        let store = Evsync(store: fx.directory.file("dave-store"), schemas: schemas)
        let own = KintoWebApp(server: fx.web.server, credentials: try String(contentsOfFile: dave.authFile, encoding: .utf8)
            .trimmingCharacters(in: .newlines), bucket: TestServer.freshBucket())
        BucketRegistry.current?.register(own)
        func sync() async throws -> (output: ProcessOutput, report: SyncJSON) {
            let output = try await store.run(["sync", "--remote", own.bucketURL, "--auth-file", dave.authFile, "--json"])
            return (output, try SyncJSON(output.stdoutLines.last ?? "{}"))
        }

        let first = try await sync()
        #expect(first.output.status == 0 && first.report.pulled == 2, "\(first.output)")
        #expect(try await store.records().keys.sorted() == [readable, writable].sorted())
        let status = try await store.run(["status", "--json"])
        #expect(status.stdout.contains(#""access":{"Birthday":"read-write","Holiday":"shared-records"}"#), "\(status)")

        try await store.edit(writable, ["details=Mine to change"])
        try await store.edit(readable, ["details=Not mine"])
        let pushed = try await sync()
        #expect(pushed.output.status == 1 && pushed.report.pushed == 1 && pushed.report.rejected.count == 1
                && pushed.report.rejected.allSatisfy { $0.hasPrefix("Holiday \(readable): ") }, "\(pushed.output)")
        #expect(try await fx.web.get(writable)?.fields["details"] == "Mine to change")
        #expect(try await fx.web.get(readable)?.fields["details"] == nil)
        #expect(try await fx.web.get(notShared) != nil, "what was not shared is untouched")

        // Unshared, it leaves (no tombstone says so: the listing no longer shows it); shared again, it comes back.
        func share(_ permissions: JSONObject) async throws {
            let path = "/buckets/\(fx.web.bucket)/collections/holidays/records/\(writable)"
            let data = try #require(try await fx.web.get(writable)?.fields)
            #expect(try await fx.web.request("PUT", path, body: ["data": .object(data), "permissions": .object(permissions)]).status == 200)
        }
        // A permission type given replaces the record's list of it (Kinto keeps the types not given).
        try await share(["write": []])
        let unshared = try await sync()
        #expect(unshared.report.left == ["Holiday \(writable)"] && unshared.report.deletedHere == 0, "\(unshared.output.stdout) \(unshared.output.stderr)")
        #expect(try await store.history(writable).last?["reason"] == "no longer shared with you")
        try await share(["write": [account]])
        let reshared = try await sync()
        #expect(reshared.report.pulled == 1 && reshared.report.left.isEmpty, "\(reshared.output)")
        #expect(try await store.show("Holiday", writable)?["details"] == "Mine to change")
    }
}
