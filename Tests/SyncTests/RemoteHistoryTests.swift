@testable import EventStore
import TestSupport
import Foundation
import Testing

/// Kinto's history plugin (`Tools/kinto` enables it): remote events carry
/// the account that made each change, and every version between two syncs.
/// Two users (two stores, two accounts) and a web app edit one bucket.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct RemoteHistoryTests {
    /// A second account, `bob…`, allowed to write the fixture's bucket (or given `permission` on it); its auth file.
    static func bob(_ fx: SyncFixture, permission: String = "write") async throws -> (name: String, authFile: String) {
        let bob = try await account(fx, "bob")
        let granted = try await fx.web.request("PATCH", "/buckets/\(fx.web.bucket)",
                                               body: ["permissions": [permission: [.string("account:\(bob.name)")]]])
        #expect(granted.status == 200, "\(granted)")
        return bob
    }

    /// A new account on the fixture's server, `<prefix>…`, with no permission on anything yet; its auth file.
    static func account(_ fx: SyncFixture, _ prefix: String) async throws -> (name: String, authFile: String) {
        let name = prefix + String(UUID().uuidString.prefix(8)).lowercased()
        let password = "secret-" + UUID().uuidString
        // Created as anyone may (kinto.account_create_principals), not as alice: an account is made by its own name.
        let anonymous = KintoWebApp(server: fx.web.server, credentials: "\(name):\(password)", bucket: fx.web.bucket)
        let created = try await anonymous.request("PUT", "/accounts/\(name)", body: ["data": ["password": .string(password)]])
        #expect([200, 201].contains(created.status), "\(created)")
        let file = fx.directory.file("\(prefix)-auth")
        try Data("\(name):\(password)".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o600)
        return (name, file)
    }

    func remoteEvents(_ events: [JSONObject]) -> [JSONObject] {
        events.filter { $0["origin"]?.stringValue == "remote" }
    }

    @Test func remoteEventsNameWhoChangedEachVersionAndWhoDeleted() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let bob = try await Self.bob(fx)
        let alice = try TestServer.credentials().split(separator: ":").first.map(String.init) ?? ""
        let bobStore = fx.secondStore()
        let id = newID()
        try await fx.web.put(id, holiday("Labour Day"))
        _ = try await fx.syncReport()
        _ = try await fx.sync(["--auth-file", bob.authFile], store: bobStore)

        // Bob edits and syncs; the web app (alice's account) edits twice more: three versions between alice's two syncs.
        try await bobStore.edit(id, ["details=Parade"])
        let bobSync = try await bobStore.run(["sync", "--remote", fx.remote, "--auth-file", bob.authFile, "--json"])
        #expect(bobSync.status == 0, "\(bobSync)")
        let v2 = try await fx.web.patch(id, ["name": "May Day"])
        let v3 = try await fx.web.patch(id, ["date": "2026-05-02"])
        let report = try await fx.syncReport()
        #expect(report.pulled == 1, "one record changed, however many times")

        let events = remoteEvents(try await fx.cli.history(id))
        #expect(events.count == 4, "\(events)")
        #expect(events.map { $0["by"]?.stringValue } == ["account:\(alice)", "account:\(bob.name)", "account:\(alice)", "account:\(alice)"]
                || events.first?["by"]?.stringValue == fx.remote, "the first pull reads only current state")
        let between = Array(events.suffix(3))
        #expect(between.map { $0["by"]?.stringValue } == ["account:\(bob.name)", "account:\(alice)", "account:\(alice)"])
        #expect(between.map { $0["set"]?.objectValue ?? [:] } == [["details": "Parade"], ["name": "May Day"], ["date": "2026-05-02"]])
        #expect(between.suffix(2).map { $0["version"]?.int64Value } == [v2, v3])
        #expect(try await fx.cli.show("Holiday", id) == ["name": "May Day", "date": "2026-05-02", "details": "Parade"])

        // Bob deletes it (having pulled alice's edits): alice's log says who.
        #expect(try await bobStore.run(["sync", "--auth-file", bob.authFile]).status == 0)
        try await bobStore.delete(id)
        let bobDelete = try await bobStore.run(["sync", "--auth-file", bob.authFile, "--json"])
        #expect(bobDelete.status == 0, "\(bobDelete)")
        #expect(try await fx.syncReport().deletedHere == 1)
        let deletion = try #require(try await fx.cli.history(id).last)
        #expect(deletion["kind"]?.stringValue == "deleted")
        #expect(deletion["by"]?.stringValue == "account:\(bob.name)")
        #expect(try await fx.cli.status().pendingRecords == 0)
        #expect(try await fx.cli.json(["status", "--json"]).objectValue?["remoteAuthorsKnown"] == .bool(true))
    }

    /// Events in the store, read through `log verify --json`.
    func eventCount(_ cli: Evsync) async throws -> Int64 {
        try await cli.json(["log", "verify", "--json"]).objectValue?["events"]?.int64Value ?? -1
    }

    @Test func aFreshStoresSecondSyncWritesNothingForARecordCreatedAndDeletedBeforeItsFirst() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.put(newID(), holiday("A"))
        let gone = newID()
        try await fx.web.put(gone, holiday("Z"))
        try await fx.web.delete(gone)
        let first = try await fx.syncReport()
        #expect(first.pulled == 1 && first.deletedHere == 0, "\(first)")
        let events = try await eventCount(fx.cli)
        for _ in 1...2 {
            let next = try await fx.syncReport()
            #expect(next.result == "noData" && next.deletedHere == 0 && next.pulled == 0, "nothing to do after a first pull: \(next)")
        }
        #expect(try await eventCount(fx.cli) == events, "no event for a record this store never had")
        #expect(try await fx.cli.run(["history", gone]).status == 66, "the record is unknown here")
    }

    @Test func aRecordCreatedAndDeletedBetweenTwoSyncsIsNoDeletionHere() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        try await fx.web.put(newID(), holiday("A"))
        _ = try await fx.syncReport()
        let events = try await eventCount(fx.cli)
        let gone = newID()
        try await fx.web.put(gone, holiday("Z"))
        try await fx.web.delete(gone)
        let next = try await fx.syncReport()
        #expect(next.deletedHere == 0 && next.pulled == 0, "\(next)")
        #expect(try await eventCount(fx.cli) == events, "its versions, read from the history, are not this store's")
    }

    @Test func intermediateVersionsAreHistoryTheMergeIsAgainstTheLatest() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let id = newID()
        try await fx.web.put(id, holiday("Labour Day"))
        _ = try await fx.syncReport()
        try await fx.cli.edit(id, ["details=local"])
        try await fx.web.patch(id, ["name": "One"])
        try await fx.web.patch(id, ["name": "Two"])
        let report = try await fx.syncReport()
        #expect(report.conflicts == 0, "a field changed on one side only: a clean merge against the latest")
        #expect(try await fx.cli.show("Holiday", id) == ["name": "Two", "date": "2026-05-01", "details": "local"])
        #expect(try await fx.web.get(id)?.fields == ["name": "Two", "date": "2026-05-01", "details": "local"])
    }

    @Test func withoutTheHistoryPluginRemoteEventsAreCreditedToTheServerAndStatusSaysSo() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let proxy = try await SlowProxy(["--hide-capability", "history"])
        let remote = proxy.url + "/buckets/" + fx.web.bucket
        let id = newID()
        try await fx.web.put(id, holiday("Labour Day"))
        let sync = { try await fx.cli.ok(["sync", "--remote", remote, "--auth-file", fx.authFile, "--json"]) }
        _ = try await sync()
        try await fx.web.patch(id, ["name": "One"])
        try await fx.web.patch(id, ["name": "Two"])
        try await fx.cli.add(id: newID(), ["name=Local", "date=2026-01-01"])  // a push, so the sync reads the server's root
        #expect(try SyncJSON(try await sync()).pulled == 1)
        let events = remoteEvents(try await fx.cli.history(id))
        #expect(events.count == 2, "today's behaviour: the latest version only")
        #expect(events.allSatisfy { $0["by"]?.stringValue == remote })
        #expect(try await fx.cli.json(["status", "--json"]).objectValue?["remoteAuthorsKnown"] == .bool(false))
        #expect(try await fx.cli.ok(["status"]).contains("authors   unknown"))
    }
}
