@testable import EventStore
import TestSupport
import Foundation
import Testing

/// A store that holds part of an entity (`evsync scope`), on a real Kinto: the server filters, so what is outside
/// is never pulled; records moved out by an edit elsewhere leave with a `left` event, those moved in arrive,
/// deletions inside follow; narrowing here needs no request, widening reads the rest; a record with a change not yet
/// pushed stays; and nothing ever shows as deleted that was not.
@Suite(.enabled(if: TestServer.isConfigured, TestServer.skipReason), .deletesTestBuckets)
struct ScopeTests {
    @Test func aScopedStorePullsOnlyItsPartFollowsMovesBothWaysAndNeverCallsALeavingADeletion() async throws {
        let fx = try SyncFixture()
        try await fx.web.createBucket()
        let old = (0..<10).map { _ in newID() }, new = (0..<10).map { _ in newID() }
        let seeded: [(id: String, fields: JSONObject)] = old.enumerated().map { (id: $1, fields: holiday("Old \($0)", date: "2026-0\($0 % 9 + 1)-01")) }
            + new.enumerated().map { (id: $1, fields: holiday("New \($0)", date: "2027-0\($0 % 9 + 1)-01")) }
        try await fx.web.seed(seeded)
        let store = fx.cli
        func sync(_ extra: [String] = []) async throws -> SyncJSON { try await fx.syncReport(extra) }

        let set = try await store.ok(["scope", "Holiday", "--where", "date>=2027-01-01"])
        #expect(set == "Holiday: this store holds the records where date>=2027-01-01, from the next sync on\n")
        #expect(try await store.json(["scope", "--json"]) == ["Holiday": ["date>=2027-01-01"]])
        let first = try await sync()
        #expect(first.pulled == 10, "only the scope is pulled: \(first)")
        #expect(try await store.records().keys.sorted() == new.sorted())
        let status = try await store.ok(["status"])
        #expect(status.contains("\nscope     Holiday where date>=2027-01-01 (evsync scope)\n"), "\(status)")

        // Elsewhere: one moves out, one moves in, one inside is deleted.
        try await fx.web.patch(new[0], ["date": "2026-12-31"])
        try await fx.web.patch(old[0], ["date": "2027-12-31"])
        try await fx.web.delete(new[1])
        let moved = try await sync()
        #expect(moved.pulled == 1 && moved.deletedHere == 1 && moved.left == ["Holiday \(new[0])"], "\(moved)")
        #expect(try await store.records().keys.sorted() == ([old[0]] + new.dropFirst(2)).sorted())
        let history = try await store.history(new[0])
        #expect(history.last?["kind"] == "left" && history.last?["reason"] == "moved out of this store's scope", "\(history)")
        #expect(!history.contains { $0["kind"] == "deleted" }, "\(history)")
        #expect(try await fx.web.get(new[0]) != nil, "nothing is deleted on the server")

        // A record with a change not yet pushed stays when an edit elsewhere moves it out; nothing of either is lost.
        try await store.edit(new[2], ["details=Mine"])
        try await fx.web.patch(new[2], ["date": "2026-11-30"])
        let pending = try await sync()
        #expect(pending.left.isEmpty, "\(pending)")
        #expect(try await store.show("Holiday", new[2])?["details"] == "Mine")
        #expect(try await fx.web.get(new[2])?.fields["details"] == "Mine")

        // Narrowed here: what the new scope leaves out leaves at once, without a sync, as a local decision.
        let narrowed = try await store.json(["scope", "Holiday", "--where", "date>=2027-01-01", "--where", "date<2027-05-01", "--json"])
        let leftNow = narrowed.objectValue?["left"]?.int64Value ?? -1
        #expect(leftNow > 0, "\(narrowed)")
        let tail = try await store.tail(Int(leftNow))
        #expect(tail.allSatisfy { $0["kind"] == "left" && $0["origin"] == "local" && $0["reason"] == "outside this store's scope" }, "\(tail)")
        #expect(try await store.records().values.allSatisfy { ($0["date"]?.stringValue ?? "") < "2027-05-01" })
        #expect(try await sync().pulled == 0)
        // verify --remote does not call a scoped entity checked.
        let verified = try await store.ok(["verify", "--remote", "--auth-file", fx.authFile])
        #expect(verified.hasSuffix("; not checked: Holiday (a scope's listing is not the server's)\n"), "\(verified)")

        // Widened to the whole entity: the next sync brings the rest; a record that left comes back, its history going on.
        try await store.ok(["scope", "Holiday", "--all"])
        let widened = try await sync()
        #expect(widened.left.isEmpty && widened.deletedHere == 0, "\(widened)")
        #expect(try await store.records().count == 19, "every live holiday on the server")
        #expect(try await store.history(new[0]).compactMap { $0["kind"]?.stringValue } == ["created", "left", "created"])

        // A condition Kinto cannot express fails the sync in one line, naming what it can; nothing is written.
        try await store.ok(["scope", "Holiday", "--where", "name~New"])
        let events = try await store.status().events
        let refused = try await fx.sync()
        #expect(refused.status == 64 && refused.stderrLines == ["evsync: Holiday's scope: Kinto filters can say =, <, <=, > and >= of a field, "
            + "not name~New (evsync scope Holiday --where …)"], "\(refused)")
        #expect(try await store.status().events == events)
    }
}
